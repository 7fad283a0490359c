"""PPI reads the review's design: weights by the stored inclusion probabilities, and says
when the verdicts describe the reviewed samples only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnb import calibrate, load, ppi_compare, ppi_rate, save_verdicts
from evalnb.review import ReviewState
from tests.builders import write_run

JUDGE = {("c0", 0): True, ("c0", 1): True, ("c1", 0): True, ("c1", 1): False}
JUDGE |= {("c2", 0): False, ("c2", 1): False}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """Cases c0, c1, c2 x variant v x repeats 0, 1; the judge passes 2, 1 and 0 of them."""
    rows = [
        {"case_id": c, "variant": "v", "repeat": r, "checks": {"judge": JUDGE[c, r]}}
        for (c, r) in JUDGE
    ]
    return write_run(tmp_path / "run", rows)


def active_rows() -> pd.DataFrame:
    """Three verdicts of an active review's prefix (ranks 0-2) and one beyond a gap."""
    return pd.DataFrame(
        {
            "case_id": ["c0", "c1", "c2", "c1"],
            "variant": "v",
            "repeat": [0, 1, 0, 0],
            "annotator": "ana",
            "verdict": ["fail", "fail", "pass", "pass"],
            "design": "active",
            "seed": 3,
            "rank": [0, 1, 2, 4],
            "population": 6,
            "size": [0.1, 0.25, 0.2, 0.15],
            "threshold": [1.0, 1.5, 2.0, 3.0],
            "inclusion": [0.1, 0.375, 0.4, 0.45],
        }
    )


def test_active_verdicts_weigh_by_their_inclusion_probabilities(run_dir: Path) -> None:
    save_verdicts(run_dir, active_rows())
    row = ppi_rate(load(run_dir), by=None).iloc[0]
    # By hand: tau = 2.0 (the threshold stored with rank 2, the prefix's last), so
    # pi = 0.2, 0.5, 0.4 and the weights 5, 2, 2.5; gaps (judge - human) +1, 0, -1.
    # Per case (2 samples each): d = 2.5, 0, -1.25 and m = 2.5, 1, 1.25;
    # judge rate = mean(1, 0.5, 0) = 0.5; estimate = 0.5 - 1.25 / 4.75.
    assert row["judge_rate"] == pytest.approx(0.5)
    assert row["estimate"] == pytest.approx(0.5 - 1.25 / 4.75)
    assert row["design"] == "active" and row["scope"] == "population"
    assert row["reviewed"] == 3  # the verdict after the gap (rank 3 unreviewed) is out
    assert "1 verdicts beyond the active design's first unreviewed sample" in row["note"]


def test_a_random_review_weighs_every_label_alike(run_dir: Path) -> None:
    rows = active_rows().iloc[:3].assign(design="random", size=1 / 6, threshold=3.0)
    save_verdicts(run_dir, rows)
    row = ppi_rate(load(run_dir), by=None).iloc[0]
    # equal weights: the plain PPI ratio, 0.5 - (1 + 0 - 1) / (3 labels) = 0.5
    assert row["estimate"] == pytest.approx(0.5)
    assert row["scope"] == "population" and row["design"] == "random"


def test_queue_order_is_flagged_and_given_no_population_interval(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", design="queue")
    for verdict in ("fail", "fail", "pass", "pass"):
        state.record(verdict)
    row = ppi_rate(load(run_dir), by=None).iloc[0]
    assert row["scope"] == "reviewed samples" and row["design"] == "queue"
    assert np.isnan(row["low"]) and np.isnan(row["high"]) and np.isnan(row["se"])
    assert np.isnan(row["human_only_low"]) and np.isnan(row["human_only_high"])
    assert row["note"].startswith("these 4 verdicts describe the reviewed samples only")
    assert "queue order" in row["note"]
    # the queue's first four samples are c0's (failed) and c1's (passed): 0.5, not the run's
    assert row["estimate"] == pytest.approx((0.0 + 1.0) / 2)
    frame = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(6)] * 2,
            "variant": ["a"] * 6 + ["b"] * 6,
            "outcome": [True, False] * 6,
            "verdict": ["pass", "fail", None] * 4,
        }
    )
    compared = ppi_compare(frame, a="a", b="b")
    assert compared["scope"].iat[0] == "reviewed samples"
    assert "no design is recorded" in compared["note"].iat[0]
    assert np.isnan(compared["low"].iat[0]) and compared["verdict"].iat[0] == "can't tell yet"


def test_a_review_narrowed_with_where_is_flagged(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", where="case_id != 'c2'")
    for _ in range(4):
        state.record("pass")
    row = ppi_rate(load(run_dir), by=None).iloc[0]
    assert row["scope"] == "reviewed samples"
    assert "covered 4 of the 6 samples" in row["note"] and np.isnan(row["low"])


def test_a_random_review_from_the_panel_gives_an_interval(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana")  # the default design: random
    for _ in range(6):
        current = state.current
        assert current is not None
        state.record("pass" if JUDGE[current["case_id"], current["repeat"]] else "fail")
    row = ppi_rate(load(run_dir), by=None).iloc[0]
    assert row["scope"] == "population" and row["design"] == "random"
    assert row["estimate"] == pytest.approx(0.5) and np.isfinite(row["low"])


def test_design_is_a_statement_about_a_frame_only(run_dir: Path) -> None:
    with pytest.raises(ValueError, match="'design' is for a frame"):
        ppi_rate(load(run_dir), design="random")
    with pytest.raises(ValueError, match=r"None \(read from its design columns\) or 'random'"):
        ppi_rate(load(run_dir), design="active")


def test_calibrate_weighs_an_active_review_and_flags_queue_order(run_dir: Path) -> None:
    save_verdicts(run_dir, active_rows())
    row = calibrate(run_dir).summary.iloc[0]
    # weights 5 (c0r0: judge pass, human fail), 2 (c1r1: both fail), 2.5 (c2r0: judge
    # fail, human pass): weighted agreement 2 / 9.5, not the unweighted 1 / 3
    assert row["agreement"] == pytest.approx(2 / 9.5)
    assert (row["n"], row["agree"]) == (3, 1)
    assert row["scope"] == "population" and row["method"].startswith("weighted by 1 / inclusion")
    state = ReviewState(run_dir, "bo", design="queue")
    state.record("fail")
    row = calibrate(run_dir, annotator="bo").summary.iloc[0]
    assert row["scope"] == "reviewed samples" and "queue order" in row["note"]
    assert np.isnan(row["kappa_low"]) and np.isnan(row["tpr_low"]) and np.isnan(row["mcnemar_p"])
    assert "describe the reviewed samples only" in calibrate(run_dir, annotator="bo")._repr_html_()
