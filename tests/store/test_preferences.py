"""The preference store: one private part per save, nothing overwritten, the latest counts."""

from __future__ import annotations

import shutil
import stat

import pytest

from evalnb import ArgumentError
from evalnb.store import PreferenceStore, latest_preferences, preference_history
from tests.builders import write_run


def test_parts_are_private_and_the_latest_choice_counts(tmp_path):
    run = write_run(tmp_path / "run", [{"case_id": "c", "variant": v, "repeat": 0} for v in "xy"])
    store = PreferenceStore(run)
    store.save("c", 0, a="x", b="y", left="y", annotator="ana", preference="a_better")
    store.save("c", 0, a="x", b="y", left="y", annotator="ana", preference="tie", reason="same")
    store.save("c", 0, a="x", b="y", left="y", annotator="ben", preference="both_bad")
    folder = run / "preferences"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    parts = sorted(folder.glob("part-*.parquet"))
    assert len(parts) == 3 and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in parts)
    assert not list(folder.glob(".*.tmp"))
    latest = latest_preferences(run).set_index("annotator")
    assert latest.loc["ana", "preference"] == "tie" and latest.loc["ana", "reason"] == "same"
    assert latest.loc["ben", "preference"] == "both_bad"
    # A part copied twice (an interrupted copy) is read once.
    shutil.copy(parts[0], folder / "part-copy.parquet")
    assert len(preference_history(run)) == 3
    store.save("c", 0, a="x", b="y", left="y", annotator="ben", preference="undecided")
    assert latest_preferences(run, annotator="ben").empty
    assert preference_history(run, annotator="ben")["preference"].tolist() == [
        "both_bad",
        "undecided",
    ]


def test_bad_values_are_named(tmp_path):
    run = write_run(tmp_path / "run", [{"case_id": "c", "variant": v, "repeat": 0} for v in "xy"])
    store = PreferenceStore(run)
    with pytest.raises(ArgumentError, match="'preference' must be one of 'a_better'"):
        store.save("c", 0, a="x", b="y", left="x", annotator="ana", preference="left")
    with pytest.raises(ArgumentError, match="'left' must be 'x' or 'y'"):
        store.save("c", 0, a="x", b="y", left="z", annotator="ana", preference="tie")
    with pytest.raises(ArgumentError, match="'annotator' must be a non-empty string"):
        store.save("c", 0, a="x", b="y", left="x", annotator=" ", preference="tie")
    assert preference_history(run).empty and not (run / "preferences").exists()
