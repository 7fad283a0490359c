"""power(): detectable differences and the cases or repeats a difference needs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from evalnb.analysis import load, power
from tests.builders import counts_run


def test_minimum_detectable_difference_for_a_design() -> None:
    out = power(rate=0.8, cases=[10, 40], repeats=5)
    assert out["solve_for"].tolist() == ["diff", "diff"]
    sd = math.sqrt(2 * 0.8 * 0.2 / 5)
    for cases, row in zip([10, 40], out.itertuples(), strict=True):
        # statsmodels TTestPower().solve_power(nobs=cases, alpha=0.05, power=0.8), in SD units
        effect = TTestPower().solve_power(nobs=cases, alpha=0.05, power=0.8)
        assert row.diff == pytest.approx(effect * sd)
        # and close to the normal approximation (z_0.975 + z_0.8) * sd / sqrt(cases)
        normal = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * sd / math.sqrt(cases)
        assert row.diff == pytest.approx(normal, rel=0.15)
        assert row.sd == pytest.approx(sd)
    assert out["diff"].iloc[0] > out["diff"].iloc[1]
    assert "between: assumed 0" in out["variance_source"].iloc[0]


def test_solving_back_gives_the_same_design() -> None:
    mdd = power(rate=0.7, cases=30, repeats=10)["diff"].iloc[0]
    assert power(rate=0.7, cases=30, repeats=10, diff=mdd, within_var=0.21)["power"].iloc[
        0
    ] == pytest.approx(0.8, abs=1e-6)
    cases = power(rate=0.7, repeats=10, diff=mdd, within_var=0.21)["cases"].iloc[0]
    assert cases in (30, 31)


def test_repeats_cannot_beat_between_case_variance() -> None:
    needed = power(rate=0.7, diff=0.2, cases=20, between_var=0.005).iloc[0]
    assert needed["solve_for"] == "repeats" and math.isfinite(needed["repeats"])
    hopeless = power(rate=0.7, diff=0.05, cases=10, between_var=0.01).iloc[0]
    assert hopeless["repeats"] == math.inf and "add cases" in hopeless["note"]


def test_variances_are_estimated_from_a_pilot(tmp_path: Path) -> None:
    a, b = [8, 7, 8, 10, 6, 9], [9, 10, 10, 10, 7, 9]
    pilot = load(counts_run(tmp_path / "pilot", {"A": a, "B": b}, 10))
    out = power(pilot).iloc[0]
    ra, rb = np.array(a) / 10, np.array(b) / 10
    # per-draw variance p(1-p) n/(n-1) per case; between = var(diff) - mean(sa/n + sb/n)
    sa, sb = ra * (1 - ra) * 10 / 9, rb * (1 - rb) * 10 / 9
    between = max(0.0, np.var(rb - ra, ddof=1) - np.mean(sa / 10 + sb / 10))
    assert out["within_var"] == pytest.approx((sa.mean() + sb.mean()) / 2)
    assert out["between_var"] == pytest.approx(between)
    assert (out["cases"], out["repeats"]) == (6, 10)
    assert out["sd"] == pytest.approx(math.sqrt(between + (sa.mean() + sb.mean()) / 10))
    assert out["variance_source"].startswith("within: pilot (A, B)")
    one = power(pilot, a="A", diff=0.1).iloc[0]
    assert one["solve_for"] == "cases" and "per-case rates of 'A'" in one["variance_source"]


def test_power_errors() -> None:
    with pytest.raises(ValueError, match=r"'rate' .* is needed"):
        power(cases=10, repeats=5)
    with pytest.raises(ValueError, match=r"'power' must be a number between 0 and 1"):
        power(rate=0.5, cases=10, repeats=5, power=80)
    with pytest.raises(ValueError, match=r"'cases' must be at least 2; got 1"):
        power(rate=0.5, cases=1, repeats=5)
    with pytest.raises(ValueError, match=r"'repeats' is needed to solve for 'cases'"):
        power(rate=0.5, diff=0.1)
    with pytest.raises(ValueError, match=r"'diff' must be a difference in pass rate"):
        power(rate=0.5, diff=1.5, cases=10)


def test_power_stays_a_number_for_large_effects() -> None:
    # statsmodels TTestPower().power(2.18, 20, 0.05) is NaN; scipy's noncentral t gives
    # 1 - 2.3e-13 for the same two-sided test.
    out = power(rate=0.7, diff=0.2, cases=20, repeats=50, between_var=0.0)
    assert out["power"].iloc[0] == pytest.approx(1.0, abs=1e-9)
