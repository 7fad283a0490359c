"""_tally: one classifier and one set of outcome codes for every count evalnb makes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnb.analysis import calibrate, load, rates
from evalnb.analysis._tally import OutcomeCode, check_outcomes, classify
from evalnb.review import SampleFilters, SampleIndex
from evalnb.review._queue import Queue
from tests.builders import write_run, write_verdicts

# One row per kind of sample: what its checks say, and what its "all" must be.
SAMPLES = [
    ("fails", "completed", {"a": True, "b": False}, OutcomeCode.FAIL),
    ("passes", "completed", {"a": True, "b": None}, OutcomeCode.PASS),
    ("unscored", "completed", {"a": None, "b": None}, OutcomeCode.UNSCORED),
    ("timeout", "timeout", {"a": False, "b": None}, OutcomeCode.FAIL),
    ("nochecks", "completed", {}, OutcomeCode.ABSENT),
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [
        {"case_id": case, "variant": "v", "repeat": 0, "status": status, "checks": checks}
        for case, status, checks, _ in SAMPLES
    ]
    path = write_run(tmp_path / "run", rows)
    write_verdicts(
        path,
        [
            {"case_id": case, "variant": "v", "repeat": 0, "annotator": "ann", "verdict": "pass"}
            for case, *_ in SAMPLES
        ],
    )
    return path


def test_the_smallest_outcome_of_a_sample_is_its_all() -> None:
    assert OutcomeCode.FAIL < OutcomeCode.PASS < OutcomeCode.UNSCORED < OutcomeCode.ABSENT
    assert [o.label for o in OutcomeCode] == ["fail", "pass", "unscored", "none"]


def test_every_class_is_one_outcome_and_whether_the_sample_completed() -> None:
    outcome = np.array([o for o in OutcomeCode for _ in (0, 1)], dtype=np.int8)
    incomplete = np.array([False, True] * len(OutcomeCode))
    assert classify(outcome, incomplete).tolist() == list(range(2 * len(OutcomeCode)))


def test_tallies_calibrate_and_the_review_queue_read_the_same_all(run_dir: Path) -> None:
    run = load(run_dir)
    samples = run.table("samples")
    wanted = {case: expected for case, _, _, expected in SAMPLES}
    expected = samples["case_id"].astype(str).map(wanted).to_numpy()

    codes, _ = check_outcomes(run, None)
    assert codes.tolist() == expected.tolist()
    index = SampleIndex(run)
    queue = Queue(index, None)
    assert index.outcome("all")[queue.positions].tolist() == expected[queue.positions].tolist()
    failing = index.mask(SampleFilters(failing=True))
    assert failing.tolist() == (expected == OutcomeCode.FAIL).tolist()

    per_sample = rates(run, by="case_id", check="all").set_index("case_id")
    for case, _, _, outcome in SAMPLES:
        if outcome == OutcomeCode.ABSENT:
            assert case not in per_sample.index  # no check row, no "all" row
            continue
        row = per_sample.loc[case]
        assert (row["k"], row["n"], row["unscored"]) == (
            int(outcome == OutcomeCode.PASS),
            int(outcome in (OutcomeCode.PASS, OutcomeCode.FAIL)),
            int(outcome == OutcomeCode.UNSCORED),
        )
    assert per_sample.loc["timeout", "incomplete"] == 1

    # calibrate pairs each verdict with the same "all": scored samples only.
    summary = calibrate(run, check="all").summary.iloc[0]
    scored = [o for *_, o in SAMPLES if o in (OutcomeCode.PASS, OutcomeCode.FAIL)]
    assert summary["n"] == len(scored)
    assert summary["tp"] == scored.count(OutcomeCode.PASS)
    # Reviewed but not scored: the unscored sample and the one without checks.
    assert summary["unscored"] == 2


def test_a_frame_derives_all_as_the_run_does(run_dir: Path) -> None:
    run = load(run_dir)
    frame = run.checks.merge(run.samples[["run_id", "case_id", "variant", "repeat", "status"]])
    columns = ["case_id", "k", "n", "unscored", "incomplete"]
    from_frame = rates(frame, by="case_id", check="all")[columns].astype({"case_id": str})
    from_run = rates(run, by="case_id", check="all")[columns].astype({"case_id": str})
    pd.testing.assert_frame_equal(from_frame, from_run)


def test_verdicts_count_needs_review_and_unreviewed_apart() -> None:
    frame = pd.DataFrame(
        {
            "case_id": ["c1", "c2", "c3", "c4", "c5"],
            "status": ["completed", "timeout", "completed", "completed", "completed"],
            "verdict": ["pass", "fail", "fail", "needs_review", None],
        }
    )
    row = rates(frame, by=None, source="verdicts").iloc[0]
    assert (row["k"], row["n"], row["needs_review"], row["unreviewed"], row["incomplete"]) == (
        1,
        3,
        1,
        1,
        1,
    )
