"""Issue 17, findings 1-8: the statistics at the corners where small eval suites live.

Each test reproduces a finding (it fails on the code before the fix) with a seeded
simulation or a pinned example; the full tables are in benchmarks/coverage.py.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalnb.analysis import agreement, calibrate, compare, power, proportion_interval, suite_rate

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "01_power.ipynb"


def paired_counts(k_a: np.ndarray, k_b: np.ndarray, n: int | np.ndarray) -> pd.DataFrame:
    """A frame of counts: one row per (experiment, case, variant), check ``ok``."""
    experiments, cases = k_a.shape
    return pd.DataFrame(
        {
            "experiment": np.tile(np.repeat(np.arange(experiments), cases), 2),
            "case_id": np.tile(np.arange(cases), experiments * 2),
            "variant": np.repeat(["A", "B"], experiments * cases),
            "check": "ok",
            "k": np.concatenate([k_a.ravel(), k_b.ravel()]),
            "n": np.concatenate([np.broadcast_to(n, k_a.shape).ravel()] * 2),
        }
    )


def suite_counts(k: np.ndarray, n: int) -> pd.DataFrame:
    experiments, cases = k.shape
    return pd.DataFrame(
        {
            "experiment": np.repeat(np.arange(experiments), cases),
            "case_id": np.tile(np.arange(cases), experiments),
            "check": "ok",
            "k": k.ravel(),
            "n": n,
        }
    )


def false_verdicts(out: pd.DataFrame) -> float:
    return float((out["verdict"] != "can't tell yet").mean())


# -- 1. a zero standard error is never certainty ------------------------------------------


def test_equal_per_case_differences_are_not_certainty() -> None:
    # Two cases, each one draw in ten better for B: every per-case difference is +0.1,
    # the standard error is 0 (1e-17 in floating point). Before: p = 0, "B better",
    # interval [0.1, 0.1].
    frame = paired_counts(np.array([[5, 6]]), np.array([[6, 7]]), 10)
    row = compare(frame, a="A", b="B", check="ok").iloc[0]
    assert row["verdict"] == "can't tell yet"
    assert row["p_value"] > 0.05 and row["se"] > 0.05
    assert row["low"] < 0 < 0.1 < row["high"]
    # the standard error is the within-case binomial one, with one pass and one fail added
    # per case and side (Agresti-Caffo): never 0
    adjusted = [(k + 1) / 12 * (1 - (k + 1) / 12) / 12 for k in (5, 6, 6, 7)]
    assert row["se"] == pytest.approx(np.sqrt(sum(adjusted)) / 2)
    assert "every per-case difference is the same" in row["note"]


def test_two_cases_nothing_changed_rarely_gives_a_verdict() -> None:
    """Seeded: 2 cases, 10 repeats, no change. Before, 9.6-12.2% false verdicts."""
    rng = np.random.default_rng(11)
    rates = rng.beta(8, 2, size=(2000, 2))
    frame = paired_counts(rng.binomial(10, rates), rng.binomial(10, rates), 10)
    out = compare(frame, a="A", b="B", by="experiment", check="ok")
    assert false_verdicts(out) <= 0.05
    assert (out["p_value"] > 0).all()


# -- 2. all cases at one rate: the suite interval -----------------------------------------


def test_all_pass_suite_interval_covers_the_truth() -> None:
    """Seeded: 10 cases x 25 repeats from Beta(0.95, 0.05) (mean 0.95). About a sixth of
    the experiments pass every draw; before, their interval was Wilson on 250 pooled
    samples, (0.985, 1), which never covers 0.95."""
    rng = np.random.default_rng(5)
    truth = 0.95
    k = rng.binomial(25, rng.beta(0.95, 0.05, size=(3000, 10)))
    everything = (k == 25).all(axis=1)
    assert everything.sum() > 200
    frame = suite_counts(k[everything], 25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        default = suite_rate(frame, by="experiment", check="ok")
        assert ((default["low"] <= truth) & (truth <= default["high"])).mean() >= 0.9
        assert (default["method"] == "agresti_coull").all()
        # every sample passed: the lower bound is Clopper-Pearson on the 10 cases, whatever
        # the method; scipy's beta quantile is the reference
        cases_bound = stats.beta.ppf(0.025, 10, 1)
        assert default["low"].to_numpy() == pytest.approx(cases_bound)
        asked = suite_rate(frame, by="experiment", check="ok", method="beta-binomial")
        assert asked["low"].to_numpy() == pytest.approx(cases_bound)


def test_five_all_pass_cases_count_as_five_not_as_every_sample() -> None:
    frame = suite_counts(np.full((1, 5), 25), 25)
    with pytest.warns(UserWarning, match="fewer than 10 cases"):
        row = suite_rate(frame, by=None, check="ok").iloc[0]
    # n_eff = 5 cases with the small-sample shrink (z / t_4)^2, not 125 samples
    n_eff = 5 * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 4)) ** 2
    assert row["n_eff"] == pytest.approx(n_eff)
    # Every sample passed: five all-pass cases show only that most cases always pass. The
    # lower bound is Clopper-Pearson on 5 of 5 cases (statsmodels proportion_confint(5, 5,
    # method="beta")), 0.478; the beta-binomial's 0.664 assumed a shape of the case rates.
    assert row["low"] == pytest.approx(proportion_confint(5, 5, method="beta")[0])
    assert row["low"] == pytest.approx(0.4782, abs=1e-4) and row["high"] == 1.0
    assert "Clopper-Pearson on the 5 cases (5 of 5)" in row["note"]


# -- 3. one sample per case: interval, test and power from one method ---------------------


def test_one_sample_per_case_interval_agrees_with_mcnemar() -> None:
    # Four cases, each fails for A and passes for B. Before: interval [1, 1] beside
    # "can't tell yet" (exact McNemar p = 0.125).
    frame = paired_counts(np.zeros((1, 4), int), np.ones((1, 4), int), 1)
    for mode in ("random", "fixed"):
        row = compare(frame, a="A", b="B", check="ok", mode=mode).iloc[0]
        assert row["verdict"] == "can't tell yet"
        assert row["p_value"] == pytest.approx(0.125)  # stats.binomtest(4, 4).pvalue
        # Clopper-Pearson for 4 of 4 discordant cases favouring B, statsmodels
        # proportion_confint(4, 4, method="beta"), mapped to (2 theta - 1) * 4 / 4
        low = proportion_confint(4, 4, method="beta")[0]
        assert (row["low"], row["high"]) == pytest.approx((2 * low - 1, 1.0))
        assert row["low"] < 0
        assert row["min_p"] == pytest.approx(0.125)
        assert "no outcome with 4 cases can reach p < 0.05" in row["note"]


def test_power_with_one_repeat_is_the_power_compare_has() -> None:
    """Seeded: power(repeats=1) against compare on simulated experiments (v1 70%, v2 90%).
    Before, power said 0.08 / 0.18 / 0.34 (a t test) where compare reached 0.00 / 0.02 /
    0.19 (exact McNemar)."""
    rng = np.random.default_rng(3)
    predicted = power(rate=0.7, diff=0.2, cases=[4, 10, 20], repeats=1)
    for cases, row in zip([4, 10, 20], predicted.itertuples(), strict=True):
        shape = (2000, cases)
        frame = paired_counts(rng.binomial(1, 0.7, shape), rng.binomial(1, 0.9, shape), 1)
        out = compare(frame, a="A", b="B", by="experiment", check="ok")
        achieved = float((out["verdict"] == "B better").mean())
        assert row.power == pytest.approx(achieved, abs=0.025)
    assert predicted["power"].iloc[0] == 0.0
    assert predicted["method"].str.startswith("exact McNemar").all()


# -- 4. few cases and small repeats: levels -----------------------------------------------


@pytest.mark.parametrize(("cases", "before"), [(4, 0.118), (5, 0.069)])
def test_few_cases_with_two_valued_case_effects_keep_the_level(cases: int, before: float) -> None:
    """Seeded: each case truly differs by +0.2 or -0.2 (no difference on average), 100
    repeats. Before, the paired t gave a verdict in 11.8% (4 cases) and 6.9% (5 cases)."""
    rng = np.random.default_rng(cases)
    shape = (2000, cases)
    moved = 0.5 + 0.2 * rng.choice([-1, 1], size=shape)
    frame = paired_counts(rng.binomial(100, 0.5, shape), rng.binomial(100, moved), 100)
    out = compare(frame, a="A", b="B", by="experiment", check="ok")
    assert false_verdicts(out) <= 0.05 < before
    # the exact sign-flip test cannot reach 5% with so few cases, and compare says so
    assert np.allclose(out["min_p"], 2.0 ** (1 - cases))
    assert out["note"].str.contains(f"no outcome with {cases} cases can reach").all()


def test_fixed_mode_keeps_its_level_at_small_repeats() -> None:
    """Seeded: 4 cases x 2 repeats, per-case rates from Beta(2, 2), the same for A and B.
    Before, the normal test on the within-case variance gave 8.5% false verdicts."""
    rng = np.random.default_rng(17)
    rates = rng.beta(2, 2, size=(2000, 4))
    frame = paired_counts(rng.binomial(2, rates), rng.binomial(2, rates), 2)
    out = compare(frame, a="A", b="B", by="experiment", check="ok", mode="fixed")
    assert false_verdicts(out) <= 0.05
    assert (out["exact_method"] == "exact conditional test of the per-case 2x2 tables").all()


def test_fixed_mode_with_one_repeat_has_a_width() -> None:
    frame = paired_counts(np.array([[1, 0, 1, 0]]), np.array([[1, 1, 1, 0]]), 1)
    row = compare(frame, a="A", b="B", check="ok", mode="fixed").iloc[0]
    assert row["high"] - row["low"] > 0.2  # before: [0.25, 0.25]


# -- 5. calibration over cases -------------------------------------------------------------


def _judged_cases(rng: np.random.Generator, cases: int, repeats: int) -> pd.DataFrame:
    """A person's verdicts and a judge that errs per case: on some cases it is lenient
    (passes what the person fails), on others strict, equally often (so the judge is
    neither more lenient nor stricter overall: McNemar's null holds)."""
    human_rate = rng.beta(2, 2, size=cases)
    error = rng.beta(1, 5, size=cases)
    lenient = rng.random(cases) < 0.5
    human = rng.random((cases, repeats)) < human_rate[:, None]
    flip = rng.random((cases, repeats)) < error[:, None]
    judge = np.where(flip & np.where(lenient[:, None], ~human, human), ~human, human)
    return pd.DataFrame(
        {
            "case_id": np.repeat(np.arange(cases), repeats),
            "verdict": np.where(human.ravel(), "pass", "fail"),
            "outcome": judge.ravel(),
        }
    )


def _population_kappa() -> float:
    """Kappa of the judge against the person over the population of cases (Monte Carlo of
    the same generator, one million cases, exact expectations within a case)."""
    rng = np.random.default_rng(0)
    size = 1_000_000
    h, e = rng.beta(2, 2, size), rng.beta(1, 5, size)
    lenient = rng.random(size) < 0.5
    both = np.mean(h * (1 - np.where(lenient, 0, e)))
    human_only = np.mean(h * np.where(lenient, 0, e))
    judge_only = np.mean((1 - h) * np.where(lenient, e, 0))
    neither = 1 - both - human_only - judge_only
    observed = both + neither
    first, second = both + human_only, both + judge_only
    expected = first * second + (1 - first) * (1 - second)
    return float((observed - expected) / (1 - expected))


def test_calibration_intervals_and_mcnemar_are_taken_over_cases() -> None:
    """Seeded: 20 cases x 10 repeats. Before, the kappa interval covered 55-58% and
    McNemar rejected a true null 42% of the time, repeats counted as independent."""
    rng = np.random.default_rng(23)
    truth = _population_kappa()
    rows = pd.DataFrame(
        [
            calibrate(_judged_cases(rng, 20, 10), check="judge", design="random").summary.iloc[0]
            for _ in range(300)
        ]
    )
    covered = (rows["kappa_low"] <= truth) & (truth <= rows["kappa_high"])
    assert covered.mean() >= 0.9
    assert (rows["mcnemar_p"] < 0.05).mean() <= 0.08
    assert (rows["cases"] == 20).all() and rows["method"].str.startswith("over cases").all()


def test_repeats_of_one_case_do_not_make_an_interval() -> None:
    frame = pd.DataFrame(
        {"case_id": "c", "verdict": ["pass"] * 25 + ["fail"] * 75, "outcome": [True] * 20}
        | {"outcome": [True] * 20 + [False] * 5 + [True] * 2 + [False] * 73}
    )
    row = calibrate(frame, design="random").summary.iloc[0]
    assert row["kappa"] == pytest.approx(0.806, abs=5e-4)  # the point estimate is unchanged
    assert np.isnan(row["kappa_low"]) and row["mcnemar_p"] == 1.0 and row["cases"] == 1


# -- 6. power with degenerate pilots --------------------------------------------------------


def _pilot(passes: dict[str, list[int]], repeats: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"variant": v, "case_id": f"c{i}", "check": "all", "k": k, "n": repeats}
            for v, ks in passes.items()
            for i, k in enumerate(ks)
        ]
    )


def test_an_all_pass_pilot_is_not_zero_variance() -> None:
    pilot = _pilot({"A": [5] * 6, "B": [5] * 6}, 5)
    detectable = power(pilot).iloc[0]  # before: diff 0, "any difference shows with 2 cases"
    assert detectable["diff"] < -0.05 and "drop" in detectable["note"]
    assert "shows no variance" in detectable["variance_source"]
    dropped = power(pilot, diff=-0.1).iloc[0]
    assert 0 < dropped["power"] < 1


def test_a_two_case_pilot_says_no_difference_is_detectable() -> None:
    pilot = _pilot({"A": [3, 4], "B": [4, 2]}, 5)
    row = power(pilot).iloc[0]  # before: a detectable difference of 2.52
    assert row["diff"] == np.inf and "no outcome can reach" in row["note"]


def test_rate_plus_diff_must_stay_a_rate() -> None:
    with pytest.raises(ValueError, match=r"'diff' must keep the rate a pass rate: rate 1 \+"):
        power(rate=1.0, diff=0.1, cases=10, repeats=5)  # before: power 1.0
    assert power(rate=1.0, diff=-0.1, cases=10, repeats=5)["power"].iloc[0] < 1


# -- 7. frames of counts are validated -------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"k": [3, np.nan, 2]}, r"'k' must be a whole number >= 0 .* got nan in row 1"),
        ({"k": [3, -1, 2]}, r"'k' must be a whole number >= 0 .* got -1"),
        ({"k": [3, 7, 2]}, r"'k' \(passed\) must not exceed 'n' \(scored\) .* k=7, n=5"),
        ({"n": [5, 2.5, 5]}, r"'n' must be a whole number >= 0"),
    ],
)
def test_counts_must_be_counts(change: dict, message: str) -> None:
    frame = pd.DataFrame({"case_id": ["a", "b", "c"], "check": "ok", "k": [3, 4, 2], "n": 5})
    frame = frame.assign(**change)
    with pytest.raises(ValueError, match=message):
        suite_rate(frame, by=None, check="ok")


def test_every_row_needs_its_case() -> None:
    frame = pd.DataFrame({"case_id": ["a", None, "c"], "check": "ok", "k": [3, 4, 2], "n": 5})
    with pytest.raises(ValueError, match=r"'case_id' must be given in every row"):
        suite_rate(frame, by=None, check="ok")
    with pytest.raises(ValueError, match=r"'data' must have a 'case_id' column"):
        suite_rate(frame.drop(columns="case_id"), by=None, check="ok")
    both = pd.concat([frame.assign(variant="A"), frame.assign(variant="B")])
    with pytest.raises(ValueError, match=r"'case_id' must be given in every row"):
        compare(both, check="ok")


# -- 8. minor ----------------------------------------------------------------------------------


def test_the_pilot_error_names_the_fewest_repeats() -> None:
    with pytest.raises(ValueError, match=r"fewest repeats 1$"):
        power(_pilot({"A": [1, 0, 1], "B": [1, 1, 0]}, 1))


def test_a_timeout_alone_does_not_make_a_case_flaky() -> None:
    frame = pd.DataFrame(
        {
            "variant": "v",
            "case_id": "c",
            "answer": ["x"] * 5,
            "status": ["completed"] * 4 + ["timeout"],
            "outcome": [True] * 4 + [False],
        }
    )
    row = agreement(frame, key="answer").iloc[0]
    assert (row["k"], row["n"], row["incomplete"]) == (4, 5, 1)
    assert not row["flaky"]


def test_bounds_at_zero_and_all_are_exact() -> None:
    n = np.arange(1, 61)
    for method in ("wilson", "agresti_coull", "beta", "jeffreys"):
        _, low, _ = proportion_interval(np.zeros(60), n, method=method)
        _, _, high = proportion_interval(n, n, method=method)
        assert (low == 0.0).all() and (high == 1.0).all(), method  # wilson 0/7 was 2.8e-17


def test_notebook_01_draws_the_one_sided_line_for_a_one_sided_rate() -> None:
    # "B better" when nothing changed is one side of a two-sided 5% test: its level is 2.5%.
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "axhline(0.05" not in source
    assert "ONE_SIDED = (1 - LEVEL) / 2" in source and "axhline(ONE_SIDED" in source


def test_suite_rate_says_when_variants_have_different_cases() -> None:
    frame = pd.DataFrame(
        {
            "variant": ["A"] * 12 + ["B"] * 11,
            "case_id": [*range(12), *range(11)],
            "check": "ok",
            "k": 3,
            "n": 5,
        }
    )
    with pytest.warns(UserWarning, match=r"variant=B \(1 cases missing\)"):
        out = suite_rate(frame, check="ok").set_index("variant")
    assert out["cases_missing"].to_dict() == {"A": 0, "B": 1}
