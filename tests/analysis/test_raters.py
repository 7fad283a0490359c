"""Agreement between reviewers in calibrate: Krippendorff's alpha beside kappa, with the
jackknife over cases, counting samples some reviewers skipped."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import evalnb
from evalnb.analysis._raters import alpha_interval
from tests.builders import write_run, write_verdicts


def nominal_alpha(ratings: np.ndarray) -> float:
    """Krippendorff's alpha, nominal, from the coincidence matrix (Krippendorff 2011,
    "Computing Krippendorff's Alpha-Reliability", section C): 1 - (n - 1) * sum of
    off-diagonal coincidences / sum over c != k of n_c * n_k. ``ratings``: raters x units,
    NaN for none."""
    values = sorted({v for v in ratings.ravel() if not math.isnan(v)})
    o = np.zeros((len(values), len(values)))
    for unit in ratings.T:
        judged = [values.index(v) for v in unit if not math.isnan(v)]
        m = len(judged)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            o[judged[i], judged[j]] += 1 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    disagree = o.sum() - np.trace(o)
    expected = n_c.sum() ** 2 - (n_c**2).sum()
    return 1 - (n - 1) * disagree / expected


def test_alpha_matches_the_coincidence_matrix_and_counts_partial_samples():
    rng = np.random.default_rng(3)
    truth = rng.random(40) < 0.6
    ratings = np.array([np.where(rng.random(40) < 0.15, ~truth, truth) for _ in range(3)], float)
    ratings[2, :10] = np.nan  # the third reviewer skipped ten samples
    units = np.repeat(np.arange(20), 2)
    alpha, low, high, cases = alpha_interval(ratings, units)
    assert alpha == pytest.approx(nominal_alpha(ratings))
    assert cases == 20 and low < alpha < high and low >= -1 and high <= 1
    # One case: no interval over cases.
    one = alpha_interval(ratings[:, :2], units[:2])
    assert math.isnan(one[1]) and one[3] == 1


@pytest.fixture
def reviewed(tmp_path: Path) -> Path:
    rows = [
        {"case_id": f"c{c:02d}", "variant": "v", "repeat": r, "checks": {"ok": (c + r) % 3 > 0}}
        for c in range(12)
        for r in range(2)
    ]
    run = write_run(tmp_path / "run", rows)
    rng = np.random.default_rng(5)
    for who, flip in (("ana", 0.0), ("ben", 0.2)):
        verdicts = []
        for c in range(12):
            for r in range(2):
                if who == "ben" and c == 11:
                    continue  # ben never reached the last case
                truth = (c + r) % 3 > 0
                said = truth != (rng.random() < flip)
                verdicts.append(
                    {
                        "case_id": f"c{c:02d}",
                        "variant": "v",
                        "repeat": r,
                        "annotator": who,
                        "verdict": "pass" if said else "fail",
                    }
                )
        write_verdicts(run, verdicts)
    return run


def test_calibrate_reports_kappa_and_alpha_between_reviewers(reviewed: Path):
    result = evalnb.calibrate(reviewed, check="ok")
    row = result.annotators.iloc[0]
    assert row["annotators"] == "ana, ben" and row["n"] == 22 and row["cases"] == 11
    verdicts = evalnb.verdicts(reviewed)
    wide = verdicts.pivot(index=["case_id", "repeat"], columns="annotator", values="verdict")
    ratings = wide.replace({"pass": 1.0, "fail": 0.0}).to_numpy(dtype=float).T
    assert row["alpha"] == pytest.approx(nominal_alpha(ratings))
    assert row["alpha_cases"] == 11 and row["alpha_low"] < row["alpha"] < row["alpha_high"]
    assert row["alpha_method"] == "krippendorff alpha (nominal), jackknife over cases"
    html = result._repr_html_()
    assert "ana, ben on 11 cases (22 samples all judged)" in html
    assert "krippendorff alpha" in html and "cohen kappa" in html


def test_no_disagreement_is_no_certainty():
    ratings = np.array([[1, 0, 1, 1, 0, 1], [1, 0, 1, 1, 0, 1]], dtype=float)
    alpha, low, high, cases = alpha_interval(ratings, np.array([0, 0, 1, 1, 2, 2]))
    assert alpha == pytest.approx(1.0) and cases == 3
    assert math.isnan(low) and math.isnan(high)
