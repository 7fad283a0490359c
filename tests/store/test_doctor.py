"""One writer per run (the lock), and `evalnb doctor` finding and repairing damaged runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evalnb
from evalnb import Case, Function, StoreError
from evalnb.cli import main
from evalnb.store import read_table
from evalnb.store._doctor import QUARANTINE, diagnose, repair
from evalnb.store._lock import RunLock

CASES = [
    Case(f"c{i}", prompt=f"say {i}", checks=[{"type": "contains", "text": "ok"}]) for i in range(3)
]


def make_run(path: Path, repeats: int = 4) -> Path:
    evalnb.run(
        CASES,
        Function(lambda request: "ok" if request.repeat % 2 else "no"),
        variants=["a", "b"],
        repeats=repeats,
        out=path,
        progress=False,
    )
    return path


def keys(run_dir: Path) -> list[tuple[str, str, int]]:
    table = read_table(run_dir, "samples", ["case_id", "variant", "repeat"])
    return list(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


def test_a_second_writer_gets_one_line_naming_the_holder(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    with RunLock(run_dir, "run"), pytest.raises(StoreError) as caught:
        RunLock(run_dir, "score").acquire()
    message = str(caught.value)
    assert f"PID {os.getpid()}" in message and "run since" in message
    assert "\n" not in message
    with RunLock(run_dir, "score"):  # released: the next writer gets it
        pass


def test_a_killed_holder_never_leaves_a_stale_lock(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom evalnb.store._lock import RunLock\n"
            "lock = RunLock(sys.argv[1], 'run').acquire()\n"
            "print('held', flush=True)\ntime.sleep(60)",
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match=f"PID {holder.pid}, run"):
            RunLock(run_dir, "run").acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with RunLock(run_dir, "run"):
        pass


def test_a_healthy_run_has_no_problems(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    assert diagnose(run_dir) == []
    assert repair(run_dir) == []
    assert not (run_dir / QUARANTINE).exists()


def test_duplicate_parts_are_found_and_quarantined_keeping_every_key_once(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    (part,) = sorted((run_dir / "samples").glob("part-*.parquet"))
    before = keys(run_dir)
    time.sleep(0.01)  # the copy is written later than the original
    for table in ("checks", "samples"):  # a second writer's copy of the same batch
        shutil.copy(run_dir / table / part.name, run_dir / table / "part-zzzz-000000.parquet")
    assert len(keys(run_dir)) == 2 * len(before)
    (problem,) = diagnose(run_dir)
    assert problem.kind == "duplicate" and problem.path.name == "part-zzzz-000000.parquet"
    assert f"{len(before)} of {len(before)} sample keys" in problem.detail
    repair(run_dir)
    assert sorted(keys(run_dir)) == sorted(before)
    assert len(read_table(run_dir, "checks")) == len(before)
    moved = sorted(
        p.relative_to(run_dir / QUARANTINE).parts[1:]
        for p in (run_dir / QUARANTINE).rglob("*.parquet")
    )
    assert moved == [
        ("checks", "part-zzzz-000000.parquet"),
        ("samples", "part-zzzz-000000.parquet"),
    ]
    assert diagnose(run_dir) == []


def test_a_part_with_new_and_repeated_keys_keeps_only_the_new_rows(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    (part,) = sorted((run_dir / "samples").glob("part-*.parquet"))
    samples = pq.read_table(part)
    checks = pq.read_table(run_dir / "checks" / part.name)
    repeat = pa.array([99] * 2, type=samples.schema.field("repeat").type)
    fresh = samples.slice(0, 2).set_column(
        samples.schema.get_field_index("repeat"), "repeat", repeat
    )
    mixed = pa.concat_tables([samples.slice(2, 3), fresh.cast(samples.schema)])
    fresh_keys = set(
        zip(fresh.column("case_id").to_pylist(), fresh.column("variant").to_pylist(), strict=True)
    )
    rows = [
        i
        for i, (case, variant, rep) in enumerate(
            zip(
                *(checks.column(c).to_pylist() for c in ("case_id", "variant", "repeat")),
                strict=True,
            )
        )
        if (case, variant) in fresh_keys and rep == 0
    ]
    mixed_checks = checks.take(rows)
    mixed_checks = mixed_checks.set_column(
        mixed_checks.schema.get_field_index("repeat"),
        "repeat",
        pa.array([99] * len(rows), type=repeat.type),
    )
    time.sleep(0.01)
    pq.write_table(
        mixed_checks.cast(checks.schema), run_dir / "checks" / "part-zzzz-000000.parquet"
    )
    pq.write_table(mixed, run_dir / "samples" / "part-zzzz-000000.parquet")
    (problem,) = diagnose(run_dir)
    assert problem.kind == "duplicate" and "3 of 5 sample keys" in problem.detail
    repair(run_dir)
    after = keys(run_dir)
    assert len(after) == len(set(after)) == len(CASES) * 2 * 4 + 2
    assert len(read_table(run_dir, "checks")) == len(after)
    run = evalnb.load(run_dir)
    assert len(run.samples) == len(after)


def test_unreadable_orphan_and_broken_scoring_files_are_quarantined(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    (run_dir / "samples" / "part-bad-000000.parquet").write_bytes(b"PAR1 this is not parquet")
    (run_dir / "checks" / "part-lone-000000.parquet").write_bytes(b"never committed")
    (run_dir / "samples" / ".part-x.parquet.1234.tmp").write_bytes(b"torn")
    (run_dir / "verdicts" / "part-v-000000.parquet").write_bytes(b"garbage")
    scores = run_dir / "scores" / "broken"
    scores.mkdir(parents=True)
    (scores / "scoring.json").write_text('{"samples": 3}')
    kinds = sorted((p.kind, p.path.name) for p in diagnose(run_dir))
    assert kinds == [
        ("orphan", ".part-x.parquet.1234.tmp"),
        ("orphan", "part-lone-000000.parquet"),
        ("unreadable", "broken"),
        ("unreadable", "part-bad-000000.parquet"),
        ("unreadable", "part-v-000000.parquet"),
    ]
    repair(run_dir)
    assert diagnose(run_dir) == []
    quarantined = {p.name for p in (run_dir / QUARANTINE).rglob("*") if p.is_file()}
    assert quarantined == {
        ".part-x.parquet.1234.tmp",
        "part-lone-000000.parquet",
        "scoring.json",
        "part-bad-000000.parquet",
        "part-v-000000.parquet",
    }
    assert len(evalnb.load(run_dir).samples) == len(CASES) * 2 * 4


def test_doctor_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = make_run(tmp_path / "run")
    assert main(["doctor", str(run_dir)]) == 0
    assert "no problems found" in capsys.readouterr().out
    (run_dir / "samples" / "part-bad-000000.parquet").write_bytes(b"nope")
    assert main(["doctor", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "part-bad-000000.parquet: unreadable" in out and "--repair" in out
    assert main(["doctor", str(run_dir), "--repair"]) == 0
    assert "repaired 1 problem(s)" in capsys.readouterr().out
    assert main(["doctor", str(run_dir)]) == 0
    (run_dir / "manifest.json").write_text(json.dumps([1, 2]))
    assert main(["doctor", str(run_dir), "--repair"]) == 1
    assert "manifest.json: manifest: must be a JSON object; got list" in capsys.readouterr().out


SHOP = str(Path(__file__).resolve().parents[2] / "data" / "cases" / "shop.jsonl")


def test_resumes_during_a_live_run_are_refused_and_every_key_is_stored_once(
    tmp_path: Path,
) -> None:
    out = tmp_path / "r"
    fault = json.dumps({"kind": "latency", "ms": 100})
    args = [
        *(sys.executable, "-m", "evalnb.cli", "run", SHOP, "--standin", "--model", "shop-v1"),
        *("--variant", "v1", "--variant", "v2:model=shop-v2", "--param", f"standin_fault={fault}"),
        *("--repeats", "25", "--concurrency", "2", "--out", str(out), "--no-progress"),
    ]
    original = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (out / "manifest.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # Two resumes at once while the original sends requests (its run takes about 10 s).
    resumes = [
        subprocess.Popen(
            [*args, "--resume"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    errors = [resume.communicate(timeout=60)[1] for resume in resumes]
    assert original.poll() is None, "the original finished before the resumes tried"
    _, stderr = original.communicate(timeout=120)
    assert original.returncode == 0, stderr
    for resume, error in zip(resumes, errors, strict=True):
        assert resume.returncode == 2, error
        (line,) = error.strip().splitlines()
        assert f"another evalnb process is writing this run (PID {original.pid}, run" in line
    written = keys(out)
    assert len(written) == len(set(written)) == 4 * 2 * 25
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert diagnose(out) == []


def test_a_damaged_scoring_or_verdicts_part_leaves_the_rest_readable(tmp_path: Path) -> None:
    from evalnb.store import save_verdict
    from evalnb.store._rundir import DamagedRunWarning

    run_dir = make_run(tmp_path / "run")
    save_verdict(run_dir, "c0", "a", 0, annotator="ana", verdict="fail", reason="no")
    (run_dir / "verdicts" / "part-bad-000000.parquet").write_bytes(b"garbage")
    for label, text in (("broken", "{"), ("undated", '{"samples": 24}')):
        (run_dir / "scores" / label).mkdir(parents=True)
        (run_dir / "scores" / label / "scoring.json").write_text(text)
    with pytest.warns(DamagedRunWarning) as caught:
        run = evalnb.load(run_dir)
        assert len(run.samples) == len(CASES) * 2 * 4
        assert len(run.checks) == len(CASES) * 2 * 4
        rates = evalnb.rates(run, by=["variant"], source="verdicts")
    assert rates[["variant", "k", "n"]].to_dict("records") == [
        {"variant": "a", "k": 0, "n": 1},
        {"variant": "b", "k": 0, "n": 0},
    ]
    messages = " | ".join(str(w.message) for w in caught)
    for name in ("part-bad-000000.parquet", "broken/scoring.json", "undated/scoring.json"):
        assert name in messages
    assert f"evalnb doctor {run_dir} --repair" in messages


def test_doctor_notes_a_run_whose_writer_was_killed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGKILLed runner leaves its manifest saying 'running'; with no lock held, doctor
    says so (a note: nothing to quarantine) and how to finish it; while a writer holds the
    lock it says nothing."""
    from evalnb.store._doctor import stopped_writer

    run_dir = make_run(tmp_path / "run")
    assert stopped_writer(run_dir) is None  # complete
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    with RunLock(run_dir, "run"):
        assert stopped_writer(run_dir) is None
    assert main(["doctor", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "no problems found" in out
    assert "note: the manifest says 'running' but no process is writing the run" in out
    assert "--resume" in out
