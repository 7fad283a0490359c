"""Several reviewers: assign_review deals the samples with an overlap, stores it atomically,
and each reviewer's panel walks their own samples and counts their progress."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import evalnb
from evalnb import ArgumentError
from evalnb.review._assign import ASSIGNMENT
from tests.builders import write_run

KEY = ["run_id", "case_id", "variant", "repeat"]


def run_of(path: Path, cases: int = 20, repeats: int = 5) -> Path:
    rows = [
        {"case_id": f"c{c:02d}", "variant": v, "repeat": r, "checks": {"ok": (c + r) % 2 == 0}}
        for c in range(cases)
        for v in ("v1", "v2")
        for r in range(repeats)
    ]
    return write_run(path, rows)


def keys(frame: pd.DataFrame) -> set[tuple]:
    return set(frame[KEY].itertuples(index=False, name=None))


def test_the_overlap_goes_to_both_and_the_rest_to_one(tmp_path):
    run = run_of(tmp_path / "run")  # 200 samples
    dealt = evalnb.assign_review(run, ["ana", "ben"], overlap=0.2, seed=4)
    ana, ben = (dealt[dealt["reviewer"] == who] for who in ("ana", "ben"))
    shared = keys(ana) & keys(ben)
    assert shared == keys(ana[ana["shared"]]) == keys(ben[ben["shared"]])
    assert keys(ana) | keys(ben) == keys(evalnb.load(run).samples)
    # a random fifth overlaps (binomial(200, 0.2): 40 +- 17 at 3 sd); the rest split about half
    assert 23 <= len(shared) <= 57
    assert abs(len(ana) - len(ben)) <= 50
    # stored in the run directory, read back the same, in one file
    assert (run / ASSIGNMENT).is_file() and not list(run.glob(".*.tmp"))
    stored = evalnb.review_assignment(run)
    pd.testing.assert_frame_equal(stored, dealt, check_dtype=False)
    # the same seed deals the same; another seed another deal
    again = evalnb.assign_review(run, ["ana", "ben"], overlap=0.2, seed=4)
    pd.testing.assert_frame_equal(again, dealt)
    other = evalnb.assign_review(run, ["ana", "ben"], overlap=0.2, seed=5)
    assert keys(other[other["shared"]]) != shared


def test_shares_and_full_overlap(tmp_path):
    run = run_of(tmp_path / "run", cases=30, repeats=4)  # 240 samples
    dealt = evalnb.assign_review(run, ["ana", "ben"], overlap=0.0, shares={"ana": 3, "ben": 1})
    assert not dealt["shared"].any() and len(dealt) == 240
    assert 150 <= (dealt["reviewer"] == "ana").sum() <= 210  # 3/4 of 240 = 180
    everyone = evalnb.assign_review(run, ["ana", "ben", "cy"], overlap=1.0)
    assert len(everyone) == 3 * 240 and everyone["shared"].all()


def test_each_reviewer_walks_their_own_samples(tmp_path):
    run = run_of(tmp_path / "run", cases=6, repeats=5)  # 60 samples
    dealt = evalnb.assign_review(run, ["ana", "ben"], overlap=0.2, seed=2)
    mine = dealt[dealt["reviewer"] == "ana"]
    panel = evalnb.annotate(run, "ana")
    assert panel.count == len(mine)
    assert f"of {len(mine)} of your samples reviewed" in panel.progress_label.value
    seen = set()
    for _ in range(3):
        key = panel.current
        seen.add((key["run_id"], key["case_id"], key["variant"], key["repeat"]))
        panel.press("p")
    assert seen <= keys(mine)
    assert f"<b>3</b> of {len(mine)} of your samples" in panel.progress_label.value
    # the live number says why it speaks of the reviewed samples only: her share
    assert f"covers {len(mine)} of the 60 samples (ana&#x27;s share of the assignment)" in (
        panel.live.value
    )
    saved = evalnb.verdicts(run, annotator="ana")
    assert keys(saved) == seen
    # ben's panel: his own samples; a reviewer not named, and an explicit where=, see all
    assert evalnb.annotate(run, "ben").count == (dealt["reviewer"] == "ben").sum()
    cy = evalnb.annotate(run, "cy")
    assert cy.count == 60 and "your samples" not in cy.progress_label.value
    assert evalnb.annotate(run, "ana", where="variant == 'v1'").count == 30
    # the overlap feeds the agreement between them in calibrate
    for key in dealt[dealt["shared"] & (dealt["reviewer"] == "ben")].itertuples():
        evalnb.save_verdicts(
            run,
            pd.DataFrame(
                [
                    {
                        "case_id": key.case_id,
                        "variant": key.variant,
                        "repeat": key.repeat,
                        "verdict": "pass",
                    }
                ]
            ),
            annotator="ben",
        )
    both = keys(saved) & keys(dealt[dealt["shared"]])
    agreement = evalnb.calibrate(run, check="ok").annotators
    assert agreement.iloc[0]["n"] == len(both)


def test_bad_arguments_are_named(tmp_path):
    run = run_of(tmp_path / "run", cases=2, repeats=1)
    with pytest.raises(ArgumentError, match="'reviewers' must be two or more names"):
        evalnb.assign_review(run, ["ana"])
    with pytest.raises(ArgumentError, match="'reviewers' must be a list of names; got 'ana'"):
        evalnb.assign_review(run, "ana")
    with pytest.raises(ArgumentError, match="'reviewers' must not repeat a name"):
        evalnb.assign_review(run, ["ana", "ana"])
    with pytest.raises(ArgumentError, match="'overlap' must be a share between 0 and 1; got 20"):
        evalnb.assign_review(run, ["ana", "ben"], overlap=20)
    with pytest.raises(ArgumentError, match="'shares' must map each reviewer"):
        evalnb.assign_review(run, ["ana", "ben"], shares={"ana": 1})
    assert evalnb.review_assignment(run).empty
