"""Issue 17, item 9: few cases, honestly.

The hierarchical beta-binomial suite interval (pinned to a numerical integration of the same
model written here), when it is chosen, and compare's exact tests and smallest p.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from statsmodels.stats.proportion import proportion_confint

from evalnb.analysis import compare, power, suite_rate


def counts(k: list[int], n: list[int] | int, **extra: object) -> pd.DataFrame:
    return pd.DataFrame(
        {"case_id": [f"c{i}" for i in range(len(k))], "check": "ok", "k": k, "n": n, **extra}
    )


def quiet_suite(frame: pd.DataFrame, **kwargs: object) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return suite_rate(frame, by=None, check="ok", **kwargs)  # type: ignore[arg-type]


def integrated_interval(k: np.ndarray, n: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The same model by numerical integration, written independently of evalnb: uniform
    priors on the mean ``mu`` and the intra-case correlation ``rho``, ``k_c`` beta-binomial
    (scipy.stats.betabinom); the marginal posterior density of ``mu`` by adaptive quadrature
    over ``rho`` (scipy.integrate.quad) on a grid of ``mu``, its CDF by Simpson's rule."""

    def likelihood(mu: float, rho: float) -> float:
        a, b = mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho
        return float(np.exp(stats.betabinom.logpmf(k, n, a, b).sum()))

    mus = np.linspace(0, 1, 601)
    density = np.zeros_like(mus)
    for i, mu in enumerate(mus[1:-1], start=1):
        density[i] = integrate.quad(lambda r, mu=mu: likelihood(mu, r), 0, 1, limit=200)[0]
    cdf = integrate.cumulative_simpson(density, x=mus, initial=0)
    cdf /= cdf[-1]
    tail = (1 - level) / 2
    return float(np.interp(tail, cdf, mus)), float(np.interp(1 - tail, cdf, mus))


@pytest.mark.parametrize(
    ("k", "n"),
    [
        ([7, 9, 4, 8, 10, 6], [10] * 6),  # six cases of ten repeats
        ([3, 8, 5, 9, 4], [4, 8, 6, 10, 5]),  # unequal repeats, two cases all passing
    ],
)
def test_beta_binomial_interval_matches_numerical_integration(k: list[int], n: list[int]) -> None:
    row = quiet_suite(counts(k, n), method="beta-binomial").iloc[0]
    low, high = integrated_interval(np.array(k), np.array(n))
    assert (row["low"], row["high"]) == pytest.approx((low, high), abs=1e-3)
    assert row["method"] == "beta-binomial"
    assert "uniform priors on the mean and the intra-case correlation" in row["note"]
    assert row["estimate"] == pytest.approx(np.mean(np.array(k) / np.array(n)))


def test_the_beta_binomial_interval_is_taken_when_asked_and_labelled() -> None:
    rng = np.random.default_rng(1)
    fourteen = counts(list(rng.integers(3, 10, 14)), 10)
    fifteen = counts(list(rng.integers(3, 10, 15)), 10)
    # The default is Agresti-Coull on the effective n, whatever the number of cases (issue 30)
    default = quiet_suite(fourteen).iloc[0]
    assert default["method"] == "agresti_coull" and default["n_eff"] > 0
    chosen = quiet_suite(fourteen, few_cases=15).iloc[0]
    assert chosen["method"] == "beta-binomial"
    assert chosen["note"].endswith("chosen: 14 cases (< 15)") and np.isnan(chosen["n_eff"])
    assert quiet_suite(fifteen, few_cases=15).iloc[0]["method"] == "agresti_coull"
    asked = quiet_suite(counts(list(rng.integers(3, 10, 30)), 10), method="beta-binomial")
    assert asked.iloc[0]["note"].endswith("asked for")
    # cases that share a group are one cluster of the model
    grouped = quiet_suite(
        fifteen.assign(group=[f"g{i // 3}" for i in range(15)]), few_cases=15
    ).iloc[0]
    assert grouped["method"] == "beta-binomial" and "chosen: 5 groups (< 15)" in grouped["note"]
    # every case at one rate: n_eff is the number of cases, said in the note
    flat = quiet_suite(counts([7] * 40, 10)).iloc[0]
    assert flat["method"] == "agresti_coull" and "every case has the same rate" in flat["note"]
    flat = quiet_suite(counts([7] * 40, 10), few_cases=15).iloc[0]
    assert flat["method"] == "beta-binomial" and "every case has the same rate" in flat["note"]
    with pytest.raises(ValueError, match=r"'few_cases' must be a whole number >= 0"):
        quiet_suite(fourteen, few_cases=-1)


def test_one_draw_per_case_is_binomial_over_cases() -> None:
    row = quiet_suite(counts([1, 1, 0, 1, 1, 1], 1), method="beta-binomial").iloc[0]
    # statsmodels proportion_confint(5, 6, method="beta") (Clopper-Pearson)
    assert (row["low"], row["high"]) == pytest.approx(proportion_confint(5, 6, method="beta"))
    assert row["note"].startswith("one draw per case: binomial over cases, Clopper-Pearson")
    # the default: Agresti-Coull on n_eff = C - 1 = 5 (se^2 = p(1-p)/(C-1)), shrunk by
    # (z / t_5)^2; statsmodels proportion_confint(x, n, method="agresti_coull")
    row = quiet_suite(counts([1, 1, 0, 1, 1, 1], 1)).iloc[0]
    n_eff = 5 * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 5)) ** 2
    assert row["n_eff"] == pytest.approx(n_eff)
    expected = proportion_confint(5 / 6 * n_eff, n_eff, method="agresti_coull")
    assert (row["low"], row["high"]) == pytest.approx((expected[0], min(expected[1], 1.0)))


@pytest.mark.parametrize(
    ("cases", "repeats", "shape", "lowest"),
    [(5, 5, (2, 2), 0.92), (3, 25, (8, 2), 0.93), (10, 5, (0.5, 0.5), 0.92)],
)
def test_suite_interval_coverage_quick(
    cases: int, repeats: int, shape: tuple[float, float], lowest: float
) -> None:
    """Seeded quick rows of benchmarks/coverage.py: the default 95% interval covers the mean
    (below 10 cases it may err wide, never narrow)."""
    rng = np.random.default_rng(cases * 100 + repeats)
    truth = shape[0] / sum(shape)
    k = rng.binomial(repeats, rng.beta(*shape, size=(600, cases)))
    frame = pd.DataFrame(
        {
            "experiment": np.repeat(np.arange(600), cases),
            "case_id": np.tile(np.arange(cases), 600),
            "check": "ok",
            "k": k.ravel(),
            "n": repeats,
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = suite_rate(frame, by="experiment", check="ok")
    assert (out["method"] == "agresti_coull").all()
    covered = ((out["low"] <= truth) & (truth <= out["high"])).mean()
    assert lowest <= covered


# -- compare: exact tests beside the t, and the smallest achievable p -----------------------


def paired(k_a: list[int], k_b: list[int], n: int, **extra: object) -> pd.DataFrame:
    cases = [f"c{i}" for i in range(len(k_a))]
    return pd.DataFrame(
        {
            "case_id": cases * 2,
            "variant": ["A"] * len(cases) + ["B"] * len(cases),
            "check": "ok",
            "k": k_a + k_b,
            "n": n,
            **{key: list(value) * 2 for key, value in extra.items()},  # type: ignore[call-overload]
        }
    )


def test_the_exact_sign_flip_p_is_reported_beside_the_t() -> None:
    a, b = [5, 6, 4, 7, 5, 6, 3], [7, 9, 4, 8, 6, 9, 6]
    row = compare(paired(a, b, 10), a="A", b="B", check="ok").iloc[0]
    diffs = (np.array(b) - np.array(a)) / 10
    # scipy's permutation test with every sign assignment enumerated is the reference
    reference = stats.permutation_test(
        (diffs,), np.mean, permutation_type="samples", n_resamples=np.inf
    )
    assert row["p_exact"] == pytest.approx(reference.pvalue)
    assert row["p_method"] == pytest.approx(stats.ttest_1samp(diffs, 0).pvalue)
    assert row["exact_method"] == "sign-flip over cases"
    assert row["min_p"] == pytest.approx(2 / 2**7)
    # one p: the verdict's, the larger of the two, in p_value (and p_adjusted, one comparison)
    assert row["p_value"] == row["p_adjusted"] == max(row["p_method"], row["p_exact"])
    assert row["verdict"] == "B better"  # both below 0.05
    # with 10 cases the t decides alone
    ten = compare(paired([*a, 5, 5, 5], [*b, 6, 7, 5], 10), check="ok").iloc[0]
    assert np.isnan(ten["p_exact"]) and ten["min_p"] == 0 and ten["exact_method"] == ""


def test_the_sign_flip_flips_groups_not_cases() -> None:
    a, b = [5, 6, 4, 7, 5, 6], [7, 9, 4, 8, 6, 9]
    groups = ["g1", "g1", "g2", "g2", "g3", "g3"]
    row = compare(paired(a, b, 10, group=groups), a="A", b="B", check="ok").iloc[0]
    sums = np.array([0.5, 0.1, 0.4])  # per-group sums of the per-case differences
    reference = stats.permutation_test(
        (sums,), np.sum, permutation_type="samples", n_resamples=np.inf
    )
    assert row["p_exact"] == pytest.approx(reference.pvalue)  # 2 / 8
    assert row["exact_method"] == "sign-flip over groups" and row["min_p"] == 0.25
    assert "no outcome with 3 groups can reach p < 0.05" in row["note"]


def test_fixed_mode_exact_test_is_fisher_for_one_case_and_enumeration_for_three() -> None:
    one = compare(paired([2], [9], 10), check="ok", mode="fixed").iloc[0]
    # scipy.stats.fisher_exact on the single 2x2 table
    assert one["p_exact"] == pytest.approx(stats.fisher_exact([[2, 8], [9, 1]]).pvalue)
    a, b, n = [1, 3, 2], [3, 4, 4], [4, 5, 4]
    frame = paired(a, b, 0).assign(n=n * 2)
    row = compare(frame, check="ok", mode="fixed").iloc[0]
    # every outcome with each case's total passes fixed, enumerated: P(B's total)
    totals = [x + y for x, y in zip(a, b, strict=True)]
    pmfs = [
        {x: stats.hypergeom.pmf(x, 2 * m, t, m) for x in range(max(0, t - m), min(t, m) + 1)}
        for t, m in zip(totals, n, strict=True)
    ]
    law: dict[int, float] = {}
    for combo in itertools.product(*(p.items() for p in pmfs)):
        total = sum(x for x, _ in combo)
        law[total] = law.get(total, 0.0) + float(np.prod([q for _, q in combo]))
    observed = law[sum(b)]
    expected = sum(q for q in law.values() if q <= observed * (1 + 1e-7))
    assert row["p_exact"] == pytest.approx(expected)


def test_power_for_few_cases_is_the_power_compare_has() -> None:
    """Seeded: 6 cases x 25 repeats, 50% -> 70% with a spread of 20 points across cases."""
    predicted = power(rate=0.5, diff=0.2, cases=6, repeats=25, between_var=0.04).iloc[0]
    rng = np.random.default_rng(8)
    shape = (1500, 6)
    moved = np.clip(0.7 + 0.2 * rng.standard_normal(shape), 0, 1)
    k_a, k_b = rng.binomial(25, 0.5, shape), rng.binomial(25, moved)
    frame = pd.DataFrame(
        {
            "experiment": np.tile(np.repeat(np.arange(1500), 6), 2),
            "case_id": np.tile(np.arange(6), 3000),
            "variant": np.repeat(["A", "B"], 9000),
            "check": "ok",
            "k": np.concatenate([k_a.ravel(), k_b.ravel()]),
            "n": 25,
        }
    )
    out = compare(frame, a="A", b="B", by="experiment", check="ok")
    achieved = (out["verdict"] != "can't tell yet").mean()
    assert predicted["power"] == pytest.approx(achieved, abs=0.04)
    assert predicted["method"].startswith("paired t and exact sign-flip test together")


def test_power_with_one_repeat_is_exact() -> None:
    """power(repeats=1) against every outcome of 20 cases enumerated, each judged by scipy's
    exact binomial test (what statsmodels' exact McNemar runs on the discordant cases)."""
    p, q, cases = 0.7, 0.9, 20
    b_only, a_only = q * (1 - p), p * (1 - q)
    expected = sum(
        stats.binom.pmf(d, cases, b_only + a_only)
        * stats.binom.pmf(x, d, b_only / (b_only + a_only))
        for d in range(1, cases + 1)
        for x in range(d + 1)
        if stats.binomtest(x, d).pvalue < 0.05
    )
    row = power(rate=p, diff=q - p, cases=cases, repeats=1).iloc[0]
    assert row["power"] == pytest.approx(expected)
