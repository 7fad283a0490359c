"""power(advise=True): add cases or add repeats, and whether power()'s predictions hold
against simulated experiments analysed as compare() analyses them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import evalnb
from tests.builders import counts_run

#: (baseline rate, true mean difference, between-case variance of the differences,
#: cases, repeats)
DESIGNS = [
    (0.6, 0.10, 0.0, 120, 3),
    (0.7, 0.15, 0.01, 40, 5),
    (0.5, 0.10, 0.02, 150, 2),
    (0.8, 0.10, 0.005, 60, 10),
    (0.3, 0.20, 0.03, 30, 4),
]


def simulated_power(rate, diff, between, cases, repeats, runs=4000, alpha=0.05, seed=0):
    """Share of simulated experiments where compare's paired t across cases (>= 10 cases,
    >= 2 repeats) says "B better": per-case true differences vary with ``between``."""
    rng = np.random.default_rng(seed)
    delta = rng.normal(diff, np.sqrt(between), size=(runs, cases))
    q = np.clip(rate + delta, 0, 1)
    a = rng.binomial(repeats, rate, size=(runs, cases)) / repeats
    b = rng.binomial(repeats, q) / repeats
    d = b - a
    t, p = stats.ttest_1samp(d, 0.0, axis=1)
    return float(np.mean((p < alpha) & (t > 0)))


@pytest.mark.parametrize("rate, diff, between, cases, repeats", DESIGNS)
def test_predicted_power_matches_simulation_within_005(rate, diff, between, cases, repeats):
    predicted = evalnb.power(
        rate=rate, diff=diff, between_var=between, cases=cases, repeats=repeats
    )["power"].iloc[0]
    simulated = simulated_power(rate, diff, between, cases, repeats)
    assert abs(predicted - simulated) <= 0.05, (predicted, simulated)


def test_advice_from_a_pilot_says_which_is_cheaper(tmp_path):
    # 12 cases x 4 repeats; v2 passes more often, and cases differ a lot from each other
    path = counts_run(
        tmp_path / "pilot",
        {"v1": [0, 4, 0, 4, 2, 2, 0, 4, 1, 3, 0, 4], "v2": [4, 0, 4, 4, 2, 4, 4, 4, 1, 3, 4, 4]},
        4,
    )
    advice = evalnb.power(evalnb.load(path), diff=0.1, advise=True)
    assert list(advice["advice"]) == ["add cases", "add repeats"]
    by = advice.set_index("advice")
    assert by.loc["add cases", "repeats"] == 4 and by.loc["add repeats", "cases"] == 12
    assert by.loc["add cases", "between_var"] > 0
    # the between-case spread caps what repeats can do: more cases is the way
    assert bool(by.loc["add cases", "cheaper"]) and not bool(by.loc["add repeats", "cheaper"])
    assert by.loc["add cases", "added_samples"] == by.loc["add cases", "samples"] - 48
    assert by.loc["add cases", "power"] == pytest.approx(0.8)


def test_advice_with_no_between_case_variance_compares_samples():
    advice = evalnb.power(rate=0.7, cases=30, repeats=3, diff=0.1, advise=True)
    by = advice.set_index("advice")
    # statsmodels TTestPower: sd sqrt(0.21 + 0.16) / sqrt(3) -> 99 cases at 3 repeats
    assert by.loc["add cases", "cases"] == 99 and by.loc["add repeats", "repeats"] == 11
    assert by.loc["add cases", "samples"] < by.loc["add repeats", "samples"]
    assert bool(by.loc["add cases", "cheaper"])


def test_advice_needs_one_difference_and_a_design():
    with pytest.raises(evalnb.ArgumentError, match="advise=True needs one 'diff'"):
        evalnb.power(rate=0.7, cases=30, diff=0.1, advise=True)
