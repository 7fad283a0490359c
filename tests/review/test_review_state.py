"""The review state, driven with no widget: the queue, filters, drafts, saving, progress."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from evalnb.analysis import load, rates
from evalnb.review import ReviewState, SampleFilters
from evalnb.review._state import Undone
from evalnb.store import VerdictStore, latest_verdicts, verdict_history
from tests.builders import write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """Cases a, b x variants v1, v2 x repeats 0, 1; check "ok" fails on repeat 1.

    Written repeat 1 first, so the queue's order comes from sorting, not from the file.
    """
    rows = [
        {"case_id": case, "variant": variant, "repeat": repeat, "checks": {"ok": repeat == 0}}
        for repeat in (1, 0)
        for case in ("a", "b")
        for variant in ("v1", "v2")
    ]
    return write_run(tmp_path / "run", rows, cases=[{"id": "a"}, {"id": "b"}])


def key(state: ReviewState) -> tuple[str, str, int]:
    current = state.current
    assert current is not None
    return current["case_id"], current["variant"], current["repeat"]


def queue(state: ReviewState) -> list[tuple[str, str, int]]:
    """Every sample of the selection, walked with next() from the start."""
    state.go(0)
    seen = [key(state)]
    while state.next():
        seen.append(key(state))
    return seen


def test_next_and_previous_step_through_the_sorted_queue(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    assert state.count == 8 and state.at == 0
    assert queue(state) == [
        (case, variant, repeat)
        for case in ("a", "b")
        for variant in ("v1", "v2")
        for repeat in (0, 1)
    ]
    assert state.at == 7 and not state.next() and state.at == 7
    assert state.previous() and key(state) == ("b", "v2", 0)
    state.go(0)
    assert not state.previous() and state.at == 0
    with pytest.raises(ValueError, match=r"'at' must be between 0 and 7; got 8"):
        state.go(8)


def test_filters_narrow_the_queue_and_keep_the_shown_sample(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    v2 = dict(state.variants)["v2"]
    state.go(3)  # a, v2, 1
    state.select(SampleFilters(variant=v2))
    assert state.count == 4 and key(state) == ("a", "v2", 1)  # still shown
    assert {variant for _, variant, _ in queue(state)} == {"v2"}
    state.select(SampleFilters(failing=True))
    assert {repeat for _, _, repeat in queue(state)} == {1}
    state.select(SampleFilters(case=dict(state.cases)["b"], variant=v2, failing=True))
    assert queue(state) == [("b", "v2", 1)]

    state.select(SampleFilters())
    state.go(1)  # a, v1, 1: the check fails
    state.record("pass")  # a person passes it: a disagreement
    state.go(0)  # a, v1, 0: the check passes
    state.record("pass")  # the person agrees
    state.select(SampleFilters(disagree=True))
    assert queue(state) == [("a", "v1", 1)]
    state.select(SampleFilters(unreviewed=True))
    assert state.count == 6 and ("a", "v1", 0) not in queue(state)


def test_a_verdict_is_saved_and_read_back(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    state.draft = "  names the wrong project "
    assert state.record("fail") == {"run_id": "run", "case_id": "a", "variant": "v1", "repeat": 0}
    saved = latest_verdicts(run_dir)
    columns = ["case_id", "variant", "repeat", "annotator", "verdict", "reason"]
    assert saved[columns].values.tolist() == [
        ["a", "v1", 0, "ana", "fail", "names the wrong project"]
    ]
    assert state.verdict == "fail" and state.reason == "names the wrong project"

    again = ReviewState(run_dir, "ana", advance=False, design="queue")
    assert key(again) == ("a", "v1", 1)  # resumes at the first sample without a verdict
    assert again.verdict is None and again.draft == "" and again.saved_at is None
    again.go(0)
    assert again.verdict == "fail" and again.draft == "names the wrong project"
    assert again.saved_at == saved["created_at"].iloc[0]
    assert (
        ReviewState(run_dir, "bo", advance=False, design="queue").reviewed == 0
    )  # annotators are kept apart


def test_a_draft_is_kept_on_its_sample_across_moves_and_restarts(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    state.draft = "half typed"
    assert state.unsaved and not state.draft_changed
    state.next()
    assert state.draft == "" and not state.unsaved
    state.previous()
    assert state.draft == "half typed" and state.unsaved
    state.select(SampleFilters(case=dict(state.cases)["a"]))
    assert state.draft == "half typed"
    again = ReviewState(
        run_dir, "ana", advance=False, design="queue"
    )  # a new kernel reads it from disk
    assert key(again) == ("a", "v1", 0) and again.draft == "half typed"
    state.record("pass")
    assert state.draft == "half typed" and not state.unsaved
    assert latest_verdicts(run_dir)["reason"].tolist() == ["half typed"]
    assert (
        ReviewState(run_dir, "bo", advance=False, design="queue").draft == ""
    )  # drafts are per reviewer


def test_an_edited_reason_is_saved_with_its_verdict_on_moving(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    state.draft = "first reading"
    state.record("fail")
    state.draft = "second reading"
    assert state.draft_changed
    state.next()
    state.previous()
    assert state.verdict == "fail" and state.draft == "second reading" and not state.unsaved
    history = verdict_history(run_dir)
    assert history["verdict"].tolist() == ["fail", "fail"]
    assert history["reason"].tolist() == ["first reading", "second reading"]


def test_states_of_one_reviewer_share_what_is_saved(run_dir: Path) -> None:
    one = ReviewState(run_dir, "ana", advance=False, design="queue")
    two = ReviewState(run_dir, "ana", where="variant == 'v1'", design="queue")
    heard: list[int] = []
    two.on_change.append(lambda: heard.append(two.reviewed))
    one.draft = "shared"
    assert two.draft == "shared"  # the same sample (a, v1, 0) is shown in both
    one.record("fail")
    assert heard == [1] and two.verdict == "fail" and two.reason == "shared"
    other = ReviewState(run_dir, "bo", advance=False, design="queue")
    assert other.reviewed == 0 and other.draft == ""


def test_advance_moves_on_after_a_verdict(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=True, design="queue")
    state.draft = "ok"
    state.record("pass")
    assert key(state) == ("a", "v1", 1) and state.draft == ""
    state.go(7)
    state.record("fail")
    assert state.at == 7  # nothing after the last sample


def test_progress_counts_each_sample_once_within_the_selection(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    assert (state.count, state.reviewed) == (8, 0)
    state.record("pass")
    state.record("fail")  # a changed verdict counts once
    state.go(2)  # a, v2, 0
    state.record("needs_review")
    assert (state.count, state.reviewed) == (8, 2)
    state.select(SampleFilters(variant=dict(state.variants)["v2"]))
    assert (state.count, state.reviewed) == (4, 1)
    assert state.next_unreviewed() and key(state) == ("a", "v2", 1)
    state.select(SampleFilters(unreviewed=True))
    assert (state.count, state.reviewed) == (6, 0)


def test_undo_of_a_first_verdict_leaves_the_sample_unreviewed(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", design="queue")
    state.draft = "wrong total"
    first = state.current
    state.record("fail")
    assert key(state) == ("a", "v1", 1) and state.reviewed == 1
    assert state.undo() == Undone(first, "fail", None)
    assert key(state) == ("a", "v1", 0) and state.verdict is None and state.reason == ""
    assert state.saved_at is None and state.reviewed == 0
    assert state.draft == "wrong total" and state.unsaved  # the reason typed is kept
    assert verdict_history(run_dir)["verdict"].tolist() == ["fail", "unreviewed"]
    assert state.undo() is None and not state.can_undo
    assert ReviewState(run_dir, "ana", design="queue").reviewed == 0  # read back from disk the same
    state.select(SampleFilters(unreviewed=True))
    assert state.count == 8 and key(state) == ("a", "v1", 0)
    state.record("pass")  # judged again: counted again
    assert state.reviewed == 1 and latest_verdicts(run_dir)["verdict"].tolist() == ["pass"]


def test_next_unreviewed_wraps_round_and_says_when_none_is_left(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    state.go(6)
    assert state.next_unreviewed() and state.at == 7
    for _ in range(8):
        state.record("pass")
        state.next_unreviewed()
    assert state.reviewed == 8
    assert not state.next_unreviewed()


def test_an_empty_selection_records_nothing(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", where=lambda s: s["repeat"] > 5, design="queue")
    assert state.count == 0 and state.current is None and state.shown is None
    assert state.record("pass") is None
    assert latest_verdicts(run_dir).empty


def test_a_failed_save_changes_nothing(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(VerdictStore, "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        state.record("fail")
    assert state.reviewed == 0 and state.verdict is None


def test_the_shown_sample_carries_what_the_reviewer_reads(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    state.go(1)
    shown = state.shown
    assert shown is not None
    assert shown.key == {"run_id": "run", "case_id": "a", "variant": "v1", "repeat": 1}
    assert (shown.status, shown.prompt, shown.answer) == (
        "completed",
        "question a",
        "SECRET ANSWER",
    )
    assert shown.checks == [("ok", False, "failed")]
    assert shown.requested == [] and shown.executed == []


def test_the_run_counts_a_new_verdict_at_once(run_dir: Path) -> None:
    run = load(run_dir)
    assert rates(run, by="variant", source="verdicts")["k"].sum() == 0
    ReviewState(run, "ana", advance=False, design="queue").record("pass")
    assert rates(run, by="variant", source="verdicts")["k"].sum() == 1
    with pytest.raises(ValueError, match=r"'name' must be one of 'samples'.*got 'verdict'"):
        run.forget("verdict")


def test_the_index_finds_each_keyed_sample_or_minus_one(run_dir: Path) -> None:
    index = ReviewState(run_dir, "ana", advance=False, design="queue").index
    keys = pd.DataFrame(
        {
            "run_id": ["run", "run", "other"],
            "case_id": ["b", "a", "a"],
            "variant": ["v2", "v1", "v1"],
            "repeat": [1, 0, 0],
        }
    )
    rows = index.positions(keys)
    assert rows[2] == -1  # no such run
    assert [index.key(int(r)) for r in rows[:2]] == keys.iloc[:2].to_dict("records")
