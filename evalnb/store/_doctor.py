"""Finding and repairing what can go wrong in a run directory: duplicate sample keys, parts
that never committed, files that cannot be read.

A repair deletes nothing: what it takes out is moved under ``<run>/quarantine/<time>/`` with
its path inside the run kept, and a part that holds both good rows and duplicates is replaced
by a part holding only the good rows (the original goes to quarantine). The first written
copy of a key stays: parts are taken in the order they were written (modification time,
then name).

>>> for problem in diagnose("runs/shop"): print(problem)             # doctest: +SKIP
>>> repair("runs/shop")                                               # doctest: +SKIP
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalnb._exceptions import StoreError
from evalnb.store._atomic import atomic_file
from evalnb.store._layout import SCORES, SCORING, manifest_path
from evalnb.store._lock import RunLock
from evalnb.store._schema import ADDED_COLUMNS, KEY, TABLES
from evalnb.store._shards import committed_shard_parts, is_shard_part

__all__ = ["QUARANTINE", "Problem", "diagnose", "repair", "stopped_writer"]

QUARANTINE = "quarantine"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a run: where, what kind, and what a repair does about it.

    ``kind`` is ``unreadable``, ``orphan`` (a part or temporary file of a batch or a shard
    attempt that never committed), ``duplicate`` (a samples part repeating keys already
    stored) or ``manifest`` (which a repair cannot fix: it is reported only).
    """

    path: Path
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.kind}: {self.detail}"


def _parts(folder: Path) -> list[Path]:
    return sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []


def _unreadable(path: Path, schema: pa.Schema) -> str | None:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        return f"cannot be read as Parquet ({str(exc).splitlines()[0][:160]})"
    missing = [n for n in schema.names if n not in table.column_names and n not in ADDED_COLUMNS]
    if missing:
        return f"lacks the columns {missing!r}"
    return None


def _json_object(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(object, None)`` read from the JSON file ``path``, or ``(None, why not)``:
    ``"missing"``, or what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "missing"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"cannot be read as JSON ({exc})"
    if not isinstance(data, dict):
        return None, f"must be a JSON object; got {type(data).__name__}"
    return data, None


def _manifest(run_dir: Path) -> Iterator[Problem]:
    path = manifest_path(run_dir)
    _, problem = _json_object(path)
    if problem == "missing":
        yield Problem(path, "manifest", "missing: this is not a run directory")
    elif problem is not None:
        yield Problem(path, "manifest", problem)


def _files(run_dir: Path) -> Iterator[Problem]:
    committed = {p.name for p in _parts(run_dir / "samples")}
    shards = committed_shard_parts(run_dir)
    for table, schema in TABLES.items():
        folder = run_dir / table
        for path in sorted(folder.glob(".*.tmp")) if folder.is_dir() else []:
            yield Problem(path, "orphan", "temporary file of a write that never finished")
        for path in _parts(folder):
            if is_shard_part(path.name) and path.name not in shards:
                yield Problem(path, "orphan", "part of a shard attempt that never committed")
            elif table == "checks" and path.name not in committed:
                yield Problem(path, "orphan", "checks part whose samples part was never written")
            elif (reason := _unreadable(path, schema)) is not None:
                yield Problem(path, "unreadable", reason)
    for label in sorted((run_dir / SCORES).glob("*")) if (run_dir / SCORES).is_dir() else []:
        info, problem = _json_object(label / SCORING)
        if problem == "missing":
            yield Problem(label, "orphan", "a rescoring that never wrote its scoring.json")
            continue
        if info is not None and "created_at" not in info:
            problem = "it has no 'created_at'"
        if problem is not None:
            yield Problem(label, "unreadable", f"scoring.json cannot be used ({problem})")
            continue
        for path in _parts(label):
            if (reason := _unreadable(path, TABLES["checks"])) is not None:
                yield Problem(path, "unreadable", reason)


def _duplicates(run_dir: Path, skip: set[Path]) -> Iterator[tuple[Problem, pa.Table | None]]:
    """Samples parts repeating a key stored by an earlier part, with the rows to keep."""
    seen: set[tuple[object, ...]] = set()
    written = sorted(_parts(run_dir / "samples"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    for path in written:
        if path in skip:
            continue
        table = pq.read_table(path)
        keys = list(zip(*(table.column(c).to_pylist() for c in KEY), strict=True))
        keep = []
        for key in keys:
            keep.append(key not in seen)
            seen.add(key)
        repeated = keep.count(False)
        if repeated:
            rest = table.filter(pa.array(keep)) if repeated < len(keys) else None
            detail = f"{repeated} of {len(keys)} sample keys were already stored by an earlier part"
            yield Problem(path, "duplicate", detail), rest


def diagnose(run_dir: str | os.PathLike[str]) -> list[Problem]:
    """Every problem found in ``run_dir``, in a stable order."""
    run_dir = Path(run_dir)
    problems = [*_manifest(run_dir), *_files(run_dir)]
    skip = {p.path for p in problems}
    problems += [problem for problem, _ in _duplicates(run_dir, skip)]
    return problems


def stopped_writer(run_dir: str | os.PathLike[str]) -> str | None:
    """A note when the manifest says ``running`` but no process holds the run's lock: its
    writer was killed before it could record how it ended (nothing to repair: resume it)."""
    run_dir = Path(run_dir)
    try:
        status = json.loads(manifest_path(run_dir).read_text(encoding="utf-8"))["status"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    if status != "running":
        return None
    try:
        with RunLock(run_dir, "doctor"):
            pass
    except StoreError:
        return None  # a writer is at work: running is the truth
    return (
        "the manifest says 'running' but no process is writing the run: it was stopped "
        "before it could record how it ended; resume it (--resume / resume=True)"
    )


def _move(run_dir: Path, path: Path, into: Path) -> None:
    target = into / path.relative_to(run_dir)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.move(str(path), str(target))


def _rewrite(path: Path, table: pa.Table) -> None:
    with atomic_file(path) as handle:
        pq.write_table(table, handle)


def repair(run_dir: str | os.PathLike[str]) -> list[Problem]:
    """Quarantine what :func:`diagnose` finds (the manifest excepted) and return it.

    Holds the run's lock: no process may write the run meanwhile.
    """
    run_dir = Path(run_dir)
    with RunLock(run_dir, "repair"):
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        into = run_dir / QUARANTINE / stamp
        problems = [*_manifest(run_dir), *_files(run_dir)]
        for problem in problems:
            if problem.kind != "manifest" and problem.path.exists():
                _move(run_dir, problem.path, into)
        found = list(_duplicates(run_dir, set()))
        for problem, rest in found:
            checks = run_dir / "checks" / problem.path.name
            _move(run_dir, problem.path, into)
            if checks.exists():
                checks_table = pq.read_table(checks)
                _move(run_dir, checks, into)
            else:
                checks_table = None
            if rest is None:
                continue
            if checks_table is not None:
                kept = rest.select(KEY).append_column("_keep", pa.array([True] * rest.num_rows))
                joined = checks_table.join(kept, KEY, join_type="left outer")
                mask = pc.fill_null(joined.column("_keep"), False)
                kept_checks = joined.filter(mask).select(checks_table.column_names)
                _rewrite(checks, kept_checks.cast(checks_table.schema))
            _rewrite(problem.path, rest)  # a filter of the part as read: its own schema
        return problems + [problem for problem, _ in found]
