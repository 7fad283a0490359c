"""The verdict store: one atomic part per save, latest per (sample, annotator), compaction."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from evalnb.analysis import load, rates
from evalnb.store import (
    VerdictStore,
    compact_verdicts,
    latest_verdicts,
    save_verdict,
    verdict_history,
)
from tests.builders import write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [
        {"case_id": c, "variant": v, "repeat": r, "checks": {"ok": r == 0}}
        for c in ("a", "b")
        for v in ("v1", "v2")
        for r in range(3)
    ]
    return write_run(tmp_path / "run", rows)


def parts(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "verdicts").glob("part-*.parquet"))


def test_each_save_is_its_own_private_part(run_dir: Path) -> None:
    store = VerdictStore(run_dir)
    row = store.save("a", "v1", 0, annotator="ana", verdict="fail", reason="wrong order")
    store.save("a", "v1", 1, annotator="ana", verdict="pass")
    assert len(parts(run_dir)) == 2
    assert all(os.stat(p).st_mode & 0o777 == 0o600 for p in parts(run_dir))
    assert not list((run_dir / "verdicts").glob(".*"))  # no temporary file left behind
    history = verdict_history(run_dir)
    assert history[["case_id", "variant", "repeat", "annotator", "verdict"]].values.tolist() == [
        ["a", "v1", 0, "ana", "fail"],
        ["a", "v1", 1, "ana", "pass"],
    ]
    assert history.loc[0, "reason"] == "wrong order" and history.loc[1, "reason"] == ""
    assert history.loc[0, "run_id"] == "run" == row["run_id"]
    assert history["created_at"].dt.tz is not None


def test_the_latest_verdict_per_sample_and_annotator_counts(run_dir: Path) -> None:
    store = VerdictStore(run_dir)
    store.save("a", "v1", 0, annotator="ana", verdict="pass")
    store.save("a", "v1", 0, annotator="bo", verdict="needs_review")
    store.save("a", "v1", 0, annotator="ana", verdict="fail", reason="changed my mind")
    latest = latest_verdicts(run_dir).set_index("annotator")
    assert latest.loc["ana", "verdict"] == "fail"
    assert latest.loc["ana", "reason"] == "changed my mind"
    assert latest.loc["bo", "verdict"] == "needs_review"
    assert len(verdict_history(run_dir)) == 3  # the history keeps every verdict
    assert latest_verdicts(run_dir, annotator="bo")["annotator"].tolist() == ["bo"]
    # the same rule applied to a frame of rows (run.verdicts)
    frame = latest_verdicts(load(run_dir).verdicts, annotator="ana")
    assert frame["verdict"].astype(str).tolist() == ["fail"]


def test_saves_within_one_clock_tick_keep_their_order(run_dir: Path) -> None:
    store = VerdictStore(run_dir)
    first = store.save("a", "v1", 0, annotator="ana", verdict="pass")
    # Pretend the clock stood still (or went back): the next save must still be later.
    store._last = first["created_at"] + dt.timedelta(hours=1)
    second = store.save("a", "v1", 0, annotator="ana", verdict="fail")
    assert second["created_at"] > store._last - dt.timedelta(microseconds=1) > first["created_at"]
    assert latest_verdicts(run_dir)["verdict"].tolist() == ["fail"]


def test_save_verdict_checks_the_sample_and_the_values(run_dir: Path) -> None:
    saved = save_verdict(run_dir, "b", "v2", 2, annotator="ana", verdict="pass", reason="ok")
    assert (saved["case_id"], saved["repeat"]) == ("b", 2)
    with pytest.raises(ValueError, match=r"no sample .* \('b', 'v2', 7\)"):
        save_verdict(run_dir, "b", "v2", 7, annotator="ana", verdict="pass")
    with pytest.raises(
        ValueError, match=r"'verdict' must be one of 'pass', 'fail', 'needs_review'; got 'ok'"
    ):
        save_verdict(run_dir, "b", "v2", 0, annotator="ana", verdict="ok")
    with pytest.raises(ValueError, match=r"'annotator' must be a non-empty string"):
        save_verdict(run_dir, "b", "v2", 0, annotator=" ", verdict="pass")
    with pytest.raises(TypeError, match=r"'reason' must be a string or None; got int"):
        save_verdict(run_dir, "b", "v2", 0, annotator="ana", verdict="pass", reason=3)
    assert len(parts(run_dir)) == 1  # nothing written for the refused ones


def _saves(run_dir: Path, count: int) -> None:
    stores = [VerdictStore(run_dir), VerdictStore(run_dir)]  # two writers, as two kernels
    for i in range(count):
        stores[i % 2].save(
            "ab"[i % 2], ("v1", "v2")[i % 3 % 2], i % 3, annotator=("ana", "bo")[i % 2],
            verdict=("pass", "fail", "needs_review")[i % 3], reason=f"reason {i}",
        )  # fmt: skip


def test_compaction_merges_parts_and_loses_no_row(run_dir: Path) -> None:
    _saves(run_dir, 12)
    before = verdict_history(run_dir)
    latest = latest_verdicts(run_dir)
    merged = compact_verdicts(run_dir)
    assert parts(run_dir) == [merged]
    assert os.stat(merged).st_mode & 0o777 == 0o600
    pd.testing.assert_frame_equal(verdict_history(run_dir), before)
    pd.testing.assert_frame_equal(latest_verdicts(run_dir), latest)
    assert compact_verdicts(run_dir) is None  # one part: nothing to do
    # new saves after a compaction are parts of their own, merged by the next one
    VerdictStore(run_dir).save("a", "v1", 0, annotator="ana", verdict="fail", reason="late")
    assert len(parts(run_dir)) == 2
    compact_verdicts(run_dir)
    assert len(parts(run_dir)) == 1 and len(verdict_history(run_dir)) == len(before) + 1
    assert (
        latest_verdicts(run_dir, annotator="ana")
        .set_index(["case_id", "variant", "repeat"])
        .loc[("a", "v1", 0), "reason"]
        == "late"
    )


def test_a_crash_between_writing_and_deleting_duplicates_rows_but_reads_stay_right(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _saves(run_dir, 6)
    before = verdict_history(run_dir)
    latest = latest_verdicts(run_dir)
    real_unlink = Path.unlink
    deleted: list[Path] = []

    def crash_after_two(path: Path, missing_ok: bool = False) -> None:
        if len(deleted) == 2:
            raise KeyboardInterrupt("the kernel died")
        deleted.append(path)
        real_unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        compact_verdicts(run_dir)
    monkeypatch.setattr(Path, "unlink", real_unlink)
    # merged part plus four of the six originals: every row is there, some twice
    assert len(parts(run_dir)) == 5
    assert len(load(run_dir).verdicts) == len(before) + 4
    pd.testing.assert_frame_equal(verdict_history(run_dir), before)
    pd.testing.assert_frame_equal(latest_verdicts(run_dir), latest)
    compact_verdicts(run_dir)
    assert len(parts(run_dir)) == 1
    pd.testing.assert_frame_equal(verdict_history(run_dir), before)


def test_a_leftover_temporary_file_is_never_read(run_dir: Path) -> None:
    VerdictStore(run_dir).save("a", "v1", 0, annotator="ana", verdict="pass")
    (run_dir / "verdicts" / ".part-torn.parquet.tmp").write_bytes(b"PAR1 torn")
    assert len(verdict_history(run_dir)) == 1
    VerdictStore(run_dir).save("a", "v1", 1, annotator="ana", verdict="pass")
    compact_verdicts(run_dir)
    assert len(verdict_history(run_dir)) == 2


def test_saved_verdicts_feed_human_rates(run_dir: Path) -> None:
    store = VerdictStore(run_dir)
    store.save("a", "v1", 0, annotator="ana", verdict="pass")
    store.save("a", "v1", 1, annotator="ana", verdict="fail")
    store.save("a", "v1", 2, annotator="ana", verdict="needs_review")
    store.save("a", "v1", 1, annotator="ana", verdict="pass")  # changed her mind
    out = rates(load(run_dir), by=["variant", "case_id"], source="verdicts")
    row = out[(out["variant"] == "v1") & (out["case_id"] == "a")].iloc[0]
    # needs_review is neither pass nor fail: out of n, reported on its own
    assert row[["k", "n", "needs_review", "unreviewed"]].tolist() == [2, 2, 1, 0]
    assert row["estimate"] == 1.0


def test_verdicts_given_elsewhere_are_saved_from_a_csv_in_one_part(
    run_dir: Path, tmp_path: Path
) -> None:
    import evalnb

    csv = tmp_path / "reviews.csv"
    csv.write_text(
        "case_id,variant,repeat,verdict,reason\n"
        "a,v1,0,fail,wrong order\n"
        "a,v1,0,pass,\n"  # later in the file: it counts
        "b,v2,2,needs_review,unsure\n",
        encoding="utf-8",
    )
    run = load(run_dir)
    assert run.verdicts.empty
    shutil.rmtree(run_dir / "verdicts")  # a run copied without one (notebook 04's)
    saved = evalnb.save_verdicts(run, csv, annotator="ana")
    assert len(parts(run_dir)) == 1 and len(saved) == 3
    assert len(run.verdicts) == 3  # the Run reads them again
    latest = evalnb.verdicts(run)
    assert latest[["case_id", "repeat", "verdict", "reason"]].values.tolist() == [
        ["a", 0, "pass", ""],
        ["b", 2, "needs_review", "unsure"],
    ]
    assert len(evalnb.verdicts(run_dir, history=True)) == 3
    assert evalnb.verdicts(run_dir, annotator="bo").empty


def test_saving_verdicts_names_the_bad_row_and_writes_nothing(
    run_dir: Path, tmp_path: Path
) -> None:
    import evalnb

    csv = tmp_path / "reviews.csv"
    csv.write_text(
        "annotator,case_id,variant,repeat,verdict\nana,a,v1,0,pass\nana,a,v1,9,pass\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"reviews.csv:3: no sample .*\('a', 'v1', 9\)"):
        evalnb.save_verdicts(run_dir, csv)
    rows = pd.DataFrame({"case_id": ["a"], "variant": ["v1"], "repeat": [0], "verdict": ["great"]})
    with pytest.raises(ValueError, match=r"rows\[0\]: 'verdict' must be one of 'pass'"):
        evalnb.save_verdicts(run_dir, rows, annotator="ana")
    with pytest.raises(ValueError, match=r"missing \['annotator'\]"):
        evalnb.save_verdicts(run_dir, rows.assign(verdict="pass"))
    assert parts(run_dir) == []
    frame = rows.assign(verdict="pass", created_at=dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
    evalnb.save_verdicts(run_dir, frame, annotator="ana")
    assert evalnb.verdicts(run_dir)["created_at"].tolist() == [pd.Timestamp("2026-01-02", tz="UTC")]
