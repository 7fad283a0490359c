"""The pairwise review: pairs of two variants' samples, sides drawn per pair and stored, a
seeded random order, one part per choice, undo, resume, and the panel's keys."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalnb
from evalnb import ArgumentError
from evalnb.review import PreferencePanel, PreferenceState
from evalnb.review._panel import KEYS
from evalnb.review._prefer_panel import PREFERENCE_KEYS
from evalnb.store import latest_preferences, preference_history
from tests.builders import write_run


def pair_run(path: Path, cases: int = 6, repeats: int = 2, missing: bool = False) -> Path:
    rows = [
        {"case_id": f"c{c}", "variant": v, "repeat": r, "answer": f"{v} answers c{c} r{r}"}
        for c in range(cases)
        for v in ("v1", "v2")
        for r in range(repeats)
        if not (missing and c == 0 and v == "v2" and r == 0)
    ]
    return write_run(
        path, rows, cases=[{"id": f"c{c}", "review": "Pick the kinder"} for c in range(cases)]
    )


def test_pairs_sides_and_order_come_from_the_seed(tmp_path):
    run = pair_run(tmp_path / "run", missing=True)
    review = PreferenceState(run, "ana", compare=("v1", "v2"), seed=7)
    # c0 r0 has no v2 sample: it is not a pair, and the v1 sample left over is counted.
    assert review.count == 11 and review.unpaired == 1
    keys = [p.key[1:] for p in review.pairs]
    assert ("c0", 0) not in keys and len(set(keys)) == 11
    # Both sides occur, and each pair's left and right are the two variants.
    assert {p.left for p in review.pairs} == {"v1", "v2"}
    assert all({p.left, p.right} == {"v1", "v2"} for p in review.pairs)
    # The same seed gives the same order and sides; another seed another order.
    again = PreferenceState(run, "ben", compare=("v1", "v2"), seed=7)
    assert [(p.key, p.left) for p in again.pairs] == [(p.key, p.left) for p in review.pairs]
    other = PreferenceState(run, "ana", compare=("v1", "v2"), seed=8)
    assert [p.key for p in other.pairs] != [p.key for p in review.pairs]
    # The queue design keeps case order; the answers shown are the sides' samples.
    queue = PreferenceState(run, "ana", compare=("v1", "v2"), design="queue", seed=7)
    assert [p.key[1:] for p in queue.pairs] == sorted(keys)
    left, right = review.shown
    pair = review.current
    assert left.key["variant"] == pair.left and right.key["variant"] == pair.right
    assert left.answer == f"{pair.left} answers {pair.case_id} r{pair.repeat}"


def test_a_choice_of_a_side_is_stored_of_the_variants_one_part_each(tmp_path):
    run = pair_run(tmp_path / "run")
    review = PreferenceState(run, "ana", compare=("v1", "v2"), seed=3)
    first = review.current
    row = review.record("left", "  kinder  ")
    assert row["preference"] == ("a_better" if first.left == "v1" else "b_better")
    assert row["left"] == first.left and row["seed"] == 3 and row["design"] == "random"
    assert review.at == 1  # advanced to the next pair without a choice
    second = review.current
    review.record("right")
    review.record("tie")
    review.record("both_bad")
    parts = sorted((run / "preferences").glob("part-*.parquet"))
    assert len(parts) == 4
    saved = latest_preferences(run).set_index(["case_id", "repeat"])
    assert saved.loc[(first.case_id, first.repeat), "reason"] == "kinder"
    winner = "a_better" if second.right == "v1" else "b_better"
    assert saved.loc[(second.case_id, second.repeat), "preference"] == winner
    assert set(saved["preference"]) >= {"tie", "both_bad"}
    assert review.reviewed == 4


def test_undo_restores_the_choice_before_or_takes_a_first_one_back(tmp_path):
    run = pair_run(tmp_path / "run")
    review = PreferenceState(run, "ana", compare=("v1", "v2"))
    first = review.current
    review.record("left")
    review.go(0)
    review.record("tie")
    assert review.preference == "tie" or review.current != first
    undone = review.undo()
    assert undone == first and review.current == first and review.choice == "left"
    undone = review.undo()
    assert undone == first and review.preference is None and review.reviewed == 0
    assert review.undo() is None
    history = preference_history(run)
    assert history["preference"].tolist()[-1] == "undecided" and len(history) == 4
    assert latest_preferences(run).empty


def test_a_new_review_resumes_and_reads_choices_asked_the_other_way_round(tmp_path):
    run = pair_run(tmp_path / "run", cases=2, repeats=1)
    review = PreferenceState(run, "ana", compare=("v1", "v2"))
    pair = review.current
    review.record("left")
    resumed = PreferenceState(run, "ana", compare=("v1", "v2"))
    assert resumed.current != pair and resumed.reviewed == 1
    turned = PreferenceState(run, "ana", compare=("v2", "v1"))
    turned.go([p.key for p in turned.pairs].index(pair.key))
    # Said of the variants: the winner stays the same variant with the order reversed.
    winner = pair.left
    assert turned.preference == ("a_better" if winner == "v2" else "b_better")
    assert PreferenceState(run, "ben", compare=("v1", "v2")).reviewed == 0


def test_bad_arguments_are_named(tmp_path):
    run = pair_run(tmp_path / "run", cases=1, repeats=1)
    with pytest.raises(ArgumentError, match="'compare' must be two variant names"):
        PreferenceState(run, "ana", compare=("v1",))
    with pytest.raises(ArgumentError, match="'a' and 'b' must name two different variants"):
        PreferenceState(run, "ana", compare=("v1", "v9"))
    with pytest.raises(ArgumentError, match="'design' of a preference review must be one of"):
        PreferenceState(run, "ana", compare=("v1", "v2"), design="active")
    review = PreferenceState(run, "ana", compare=("v1", "v2"))
    with pytest.raises(ArgumentError, match="'choice' must be one of 'left', 'right'"):
        review.record("a_better")
    with pytest.raises(ArgumentError, match="needs compare="):
        evalnb.annotate(run, "ana", ask="preference")
    with pytest.raises(ArgumentError, match="walks every pair of the two variants; drop where="):
        evalnb.annotate(run, "ana", compare=("v1", "v2"), where="repeat == 0")
    with pytest.raises(ArgumentError, match="'ask' must be one of"):
        evalnb.annotate(run, "ana", compare=("v1", "v2"), ask="rank")


def test_the_panel_keys_do_not_clash_with_the_verdict_panel(tmp_path):
    # A key both panels know does the same in both (u: the next one without an answer);
    # the choice keys are new.
    shared = {"z": "undo", "j": "next", "k": "previous", "e": "reason box"}
    assert set(PREFERENCE_KEYS) & set(KEYS) == {*shared, "u"}
    assert all(PREFERENCE_KEYS[k] == KEYS[k] == said for k, said in shared.items())
    assert {"1", "2", "t", "x"}.isdisjoint(KEYS)


def test_the_panel_saves_a_key_press_and_hides_the_variants(tmp_path):
    run = pair_run(tmp_path / "run", cases=3, repeats=1)
    panel = evalnb.annotate(run, "ana", compare=("v1", "v2"), ask="preference", seed=1)
    assert isinstance(panel, PreferencePanel)
    pair = panel.state.current
    body = panel.body.value
    assert "Answer 1" in body and "Answer 2" in body
    assert "variant" not in body.lower()  # blind: no variant named beside an answer
    assert body.index(f"{pair.left} answers") < body.index(f"{pair.right} answers")
    panel.reason.value = "shorter"
    panel.press("2")
    assert "Saved <b>answer 2 better</b>" in panel.status.value
    saved = latest_preferences(run)
    assert len(saved) == 1 and saved["reason"].iat[0] == "shorter"
    assert saved["preference"].iat[0] == ("a_better" if pair.right == "v1" else "b_better")
    assert "1</b> of 3 pairs chosen" in panel.progress_label.value
    panel.press("z")
    assert latest_preferences(run).empty and "Undone" in panel.status.value
    panel.press("q")
    assert "does nothing here" in panel.status.value
