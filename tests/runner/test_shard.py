"""A shard commits once: retried, duplicated, fenced out or killed, no key is stored twice.

These run the engine-neutral shard function in this process; tests/runner/test_distributed.py
runs it on a real Dask cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import evalnb
from evalnb import Case, Function, StoreError
from evalnb.runner._distributed import public_address, split
from evalnb.runner._session import _Execution
from evalnb.runner._shard import Shard, ShardJob, run_shard
from evalnb.store import create_run_dir, fence_shards, read_table, shard_token
from evalnb.store._doctor import diagnose, repair

CASES = [
    Case(f"c{i}", prompt=f"say {i}", checks=[{"type": "contains", "text": "ok"}]) for i in range(4)
]


def keys(run_dir: Path) -> list[tuple[str, str, int]]:
    table = read_table(run_dir, "samples", ["case_id", "variant", "repeat"])
    return list(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


def write_part(run_dir: Path, name: str, source: Path) -> None:
    """A part of every table as an attempt writes it, copied from a finished run."""
    for table in ("checks", "samples"):
        pq.write_table(read_table(source, table), run_dir / table / name)


def job_and_shards(run_dir: Path, session: str, size: int) -> tuple[ShardJob, list[Shard]]:
    """A job as the driver makes it, for a plan of 4 cases x 1 variant x 3 repeats."""
    from evalnb.checks import built_cases, checks_for
    from evalnb.runner._session import _default_canonical, plan

    cases = built_cases(CASES)
    planned = plan(cases, [evalnb.Variant("baseline")], 3)
    execution = _Execution(
        Function(lambda request: f"ok {request.repeat}"),
        None,  # type: ignore[arg-type]  # each attempt brings its own writer
        run_dir.name,
        {c.id: checks_for(c, ()) for c in cases},
        timeout=None,
        flush_every=5000,
        flush_seconds=5.0,
        canonical=_default_canonical,
    )
    job = ShardJob(str(run_dir), session, execution, concurrency=2)
    return job, split(list(enumerate(planned)), session, size)


def test_a_retried_shard_stores_its_keys_once(tmp_path: Path) -> None:
    run_dir = create_run_dir(tmp_path / "run")
    session = fence_shards(run_dir)
    job, shards = job_and_shards(run_dir, session, 5)
    assert [len(s.entries) for s in shards] == [5, 5, 2]
    first = [run_shard(job, shard) for shard in shards]
    again = run_shard(job, shards[0])  # a retry whose first result was lost
    assert again["attempt"] == first[0]["attempt"]
    assert len(keys(run_dir)) == len(set(keys(run_dir))) == 12
    assert len(read_table(run_dir, "checks")) == 12
    assert [p for p in diagnose(run_dir) if p.kind != "manifest"] == []


def test_the_second_attempt_to_commit_a_shard_loses_and_leaves_nothing(tmp_path: Path) -> None:
    run_dir = create_run_dir(tmp_path / "run")
    session = fence_shards(run_dir)
    job, shards = job_and_shards(run_dir, session, 12)
    # Another attempt of the same shard wrote and committed its parts first.
    source = evalnb.run(CASES[:1], Function(lambda r: "ok"), out=tmp_path / "src", progress=False)
    name = f"part-{shard_token(shards[0].id, '0ther000')}-000000.parquet"
    write_part(run_dir, name, source.path)
    marker = {"shard": shards[0].id, "attempt": "0ther000", "session": session, "parts": [name]}
    (run_dir / "shards" / f"{shards[0].id}.json").write_text(json.dumps(marker))
    report = run_shard(job, shards[0])
    assert report["attempt"] == "0ther000"
    assert sorted(p.name for p in (run_dir / "samples").iterdir()) == [name]
    assert keys(run_dir) == [("c0", "baseline", 0)]


def test_a_shard_of_a_session_fenced_out_does_not_commit(tmp_path: Path) -> None:
    run_dir = create_run_dir(tmp_path / "run")
    old = fence_shards(run_dir)
    job, shards = job_and_shards(run_dir, old, 12)
    fence_shards(run_dir)  # a resumed driver took the run over
    with pytest.raises(StoreError, match="has taken the run over; its parts were not committed"):
        run_shard(job, shards[0])
    assert keys(run_dir) == []
    assert list((run_dir / "samples").iterdir()) == []
    assert not (run_dir / "shards" / f"{shards[0].id}.json").exists()


def test_an_attempt_that_never_committed_is_invisible_and_found_by_doctor(
    tmp_path: Path,
) -> None:
    run_dir = create_run_dir(tmp_path / "run")
    done = evalnb.run(CASES, Function(lambda r: "ok"), out=tmp_path / "src", progress=False)
    # A worker killed after writing a part, before the marker: what it leaves behind.
    write_part(
        run_dir, f"part-{shard_token('dead0000-000000', 'a1b2c3d4')}-000000.parquet", done.path
    )
    assert keys(run_dir) == []
    assert len(read_table(run_dir, "checks", scoring="run")) == 0
    (run_dir / "manifest.json").write_text("{}")
    problems = [p for p in diagnose(run_dir) if p.kind != "manifest"]
    assert sorted((p.path.parent.name, p.kind) for p in problems) == [
        ("checks", "orphan"),
        ("samples", "orphan"),
    ]
    assert all("shard attempt that never committed" in p.detail for p in problems)
    repair(run_dir)
    assert list((run_dir / "samples").iterdir()) == []
    assert len(list((run_dir / "quarantine").rglob("part-shard-*.parquet"))) == 2


def test_the_recorded_scheduler_address_has_no_credentials() -> None:
    assert public_address("tls://alice:s3cret@sched.example:8786/?token=t0k") == (
        "tls://sched.example:8786/"
    )
    assert public_address("tcp://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
