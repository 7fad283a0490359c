"""suite_rate(): the mean of per-case rates with an interval across cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalnb.analysis import load, suite_rate
from tests.builders import counts_run


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    return counts_run(root / "shop", {"v1": [8, 7, 8, 10], "v2": [9, 10, 10, 10]}, 10)


def test_suite_rate_is_the_mean_of_case_rates_with_an_interval_across_cases(shop: Path) -> None:
    with pytest.warns(UserWarning, match="fewer than 10 cases"):
        out = suite_rate(load(shop))
    v1 = out[out["variant"] == "v1"].iloc[0]
    rates = np.array([0.8, 0.7, 0.8, 1.0])
    se = rates.std(ddof=1) / 2
    assert v1["estimate"] == pytest.approx(0.825)
    assert v1["se"] == pytest.approx(se)
    assert (v1["cases"], v1["groups"], v1["repeats"], v1["samples"], v1["k"]) == (4, 4, 10, 40, 33)
    # n_eff = p(1-p)/se^2 capped at 40 samples, shrunk by (z/t_3)^2 for so few cases;
    # the interval is statsmodels' Agresti-Coull on that effective n (the default since
    # issue 30; Wilson when asked)
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, 3)
    n_eff = min(0.825 * 0.175 / se**2, 40) * (z / t) ** 2
    low, high = proportion_confint(0.825 * n_eff, n_eff, alpha=0.05, method="agresti_coull")
    assert v1["n_eff"] == pytest.approx(n_eff)
    assert (v1["low"], v1["high"]) == pytest.approx((low, high))
    assert v1["design_effect"] == pytest.approx(se**2 / (0.825 * 0.175 / 40))
    assert v1["basis"] == "across cases" and v1["method"] == "agresti_coull"
    # wider than the pooled Wilson (0.6805, 0.9125), which assumes independent samples
    assert v1["low"] < 0.6805 and v1["high"] > 0.9125
    assert out["low"].min() >= 0 and out["high"].max() <= 1
    with pytest.warns(UserWarning, match="fewer than 10 cases"):
        wilson = suite_rate(load(shop), method="wilson").set_index("variant")
    low, high = proportion_confint(0.825 * n_eff, n_eff, alpha=0.05, method="wilson")
    assert (wilson.loc["v1", "low"], wilson.loc["v1", "high"]) == pytest.approx((low, high))
    with pytest.warns(UserWarning, match="fewer than 10 cases"):
        asked = suite_rate(load(shop), few_cases=15).set_index("variant")
    assert (asked["method"] == "beta-binomial").all()
    assert asked.loc["v1", "note"].endswith("chosen: 4 cases (< 15)")
    assert asked.loc["v1", "estimate"] == pytest.approx(0.825)
    assert np.isnan(asked.loc["v1", "n_eff"])


def test_no_spread_across_cases_is_not_certainty(tmp_path: Path) -> None:
    # Before issue 17 this fell back to Wilson on all 120 samples pooled, (0.969, 1):
    # anti-conservative, repeats of a case are not independent trials.
    path = counts_run(tmp_path / "perfect", {"v": [10] * 12}, 10)
    out = suite_rate(load(path)).iloc[0]
    # n_eff = 12 groups, shrunk by (z / t_11)^2
    n_eff = 12 * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 11)) ** 2
    assert out["n_eff"] == pytest.approx(n_eff)
    # every sample passed: the lower bound is Clopper-Pearson on the 12 cases, 12 of 12
    # (statsmodels proportion_confint(12, 12, method="beta")), whatever the method
    expected = proportion_confint(12, 12, method="beta")
    assert (out["low"], out["high"]) == pytest.approx((expected[0], 1.0))
    assert out["basis"] == "across cases" and out["se"] == 0
    assert "n_eff is the number of groups" in out["note"]
    assert "Clopper-Pearson on the 12 cases (12 of 12)" in out["note"]
    chosen = suite_rate(load(path), method="beta-binomial").iloc[0]
    assert chosen["method"] == "beta-binomial" and chosen["high"] == 1.0
    assert chosen["low"] == pytest.approx(expected[0]) and chosen["low"] < 0.969


def test_five_cases_fifty_repeats_one_failure_holds_its_estimate_and_the_truth() -> None:
    """Issue 30: 5 cases x 50 repeats with one failure. The beta-binomial gave
    [0.633, 0.9938] around 0.996, excluding its own estimate and a true 0.99."""
    frame = pd.DataFrame({"case_id": range(5), "check": "ok", "k": [50, 50, 49, 50, 50], "n": 50})
    with pytest.warns(UserWarning, match="fewer than 10 cases"):
        row = suite_rate(frame, by=None, check="ok").iloc[0]
    assert row["estimate"] == pytest.approx(0.996)
    assert row["low"] <= 0.99 <= row["high"]
    assert row["low"] <= row["estimate"] <= row["high"]
    # Agresti-Coull on n_eff = min(p(1-p)/se^2, 250) (z/t_4)^2 (statsmodels proportion_confint)
    se = np.array([1, 1, 0.98, 1, 1]).std(ddof=1) / np.sqrt(5)
    n_eff = min(0.996 * 0.004 / se**2, 250) * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 4)) ** 2
    low, _ = proportion_confint(0.996 * n_eff, n_eff, method="agresti_coull")
    assert (row["low"], row["high"]) == pytest.approx((low, 1.0))
    with pytest.warns(UserWarning, match="fewer than 10 cases"):
        asked = suite_rate(frame, by=None, check="ok", method="beta-binomial").iloc[0]
    assert asked["low"] <= asked["estimate"] <= asked["high"]  # held, whatever the method


def test_cases_that_share_a_group_are_clustered(tmp_path: Path) -> None:
    passes = [2, 3, 9, 8, 5, 6, 1, 2, 9, 10, 4, 5]
    grouped = counts_run(
        tmp_path / "g", {"v": passes}, 10, groups=[f"g{i // 2}" for i in range(12)]
    )
    alone = counts_run(tmp_path / "a", {"v": passes}, 10)
    clustered = suite_rate(load(grouped)).iloc[0]
    independent = suite_rate(load(alone)).iloc[0]
    assert clustered["estimate"] == independent["estimate"]
    assert (clustered["cases"], clustered["groups"]) == (12, 6)
    # CR1: sum residuals within each group, G/(G-1) correction, over C^2
    rates = np.array(passes) / 10
    residual = rates - rates.mean()
    sums = residual.reshape(6, 2).sum(axis=1)
    assert clustered["se"] == pytest.approx(np.sqrt(6 / 5 * (sums**2).sum()) / 12)
    assert independent["se"] == pytest.approx(rates.std(ddof=1) / np.sqrt(12))
    assert clustered["se"] > independent["se"]  # pairs move together here


def test_by_split_reports_dev_and_heldout_apart(tmp_path: Path) -> None:
    from tests.builders import counts_rows, write_run

    rows = counts_rows({"v": [5, 6, 7, 8]}, 10)
    cases = [{"id": f"case-{i:02d}", "split": "dev" if i < 2 else "heldout"} for i in range(4)]
    path = write_run(tmp_path / "split", rows, cases=cases)
    with pytest.warns(UserWarning):
        out = suite_rate(load(path), by=["variant", "split"])
    assert out.set_index("split")["estimate"].to_dict() == pytest.approx(
        {"dev": 0.55, "heldout": 0.75}
    )
    with pytest.raises(ValueError, match="'by' must not include 'case_id'"):
        suite_rate(load(path), by=["variant", "case_id"])


def test_coverage_simulation_30_cases_5_repeats() -> None:
    """Seeded: the 95% suite interval covers the true mean 93-97% of the time."""
    rng = np.random.default_rng(20240601)
    experiments, cases, repeats = 1000, 30, 5
    alpha, beta = 5.0, 2.0  # per-case true rates vary around a known mean
    truth = alpha / (alpha + beta)
    rates = rng.beta(alpha, beta, size=(experiments, cases))
    outcome = rng.random((experiments, cases, repeats)) < rates[:, :, None]
    frame = pd.DataFrame(
        {
            "experiment": np.repeat(np.arange(experiments), cases * repeats),
            "case_id": np.tile(np.repeat(np.arange(cases), repeats), experiments),
            "check": "ok",
            "outcome": outcome.ravel(),
        }
    )
    out = suite_rate(frame, by="experiment", check="ok")
    assert len(out) == experiments and (out["cases"] == cases).all()
    covered = ((out["low"] <= truth) & (truth <= out["high"])).mean()
    assert 0.93 <= covered <= 0.97


def test_skewed_case_rates_with_many_repeats_keep_their_coverage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 39, seeded: case rates Beta(0.05, 4.95) (mean 0.01, a few cases carry it),
    50 cases x 50 repeats. The interval symmetric in the standard error missed the mean
    when the sample missed the few cases; with Hall's skewness-corrected t beside it, it
    covers about 95% (benchmarks/coverage.py --only suite-skewed)."""
    from evalnb.analysis import _suite

    rng = np.random.default_rng(39)
    experiments, cases, repeats = 400, 50, 50
    k = rng.binomial(repeats, rng.beta(0.05, 4.95, size=(experiments, cases)))
    frame = pd.DataFrame(
        {
            "experiment": np.repeat(np.arange(experiments), cases * repeats),
            "case_id": np.tile(np.repeat(np.arange(cases), repeats), experiments),
            "check": "ok",
            "outcome": (np.arange(repeats)[None, None, :] < k[..., None]).ravel(),
        }
    )

    def coverage() -> float:
        out = suite_rate(frame, by="experiment", check="ok")
        return float(((out["low"] <= 0.01) & (out["high"] >= 0.01)).mean())

    with_hall = coverage()
    monkeypatch.setattr(_suite, "SKEWED_FROM", 10**9)
    without = coverage()
    assert with_hall >= 0.93 and without < 0.92
