"""Writing samples and check results as committed Parquet parts."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalnb._secrets import active as secrets_registered
from evalnb._secrets import redact_json
from evalnb._types import CheckResult, Sample
from evalnb.store._rundir import open_private, replace_atomically
from evalnb.store._schema import CASES_SCHEMA, CHECKS_SCHEMA, SAMPLES_SCHEMA, VERDICTS_SCHEMA

__all__ = ["RunWriter", "cases_table", "checks_table", "samples_table"]


def _tool_calls(calls: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]


def _actions(actions: Iterable[Any]) -> list[dict[str, Any]]:
    return [
        {
            "tool": a.tool,
            "arguments": a.arguments,
            "path": a.path,
            "error": a.error,
            "result": a.result,
        }
        for a in actions
    ]


def _order(order: Any) -> list[int] | None:
    return None if order is None else list(order)


_CONVERT = {
    "tool_calls": _tool_calls,
    "requested": _actions,
    "executed": _actions,
    "choice_order": _order,
}


class RunWriter:
    """Appends batches of samples and their check results to a run directory.

    Each writer has its own random token, so several writers (resumes, shards on other
    machines) never collide on a part name; a shard attempt passes its own ``token``.
    """

    def __init__(self, run_dir: str | os.PathLike[str], token: str | None = None):
        self.run_dir = Path(run_dir)
        self.token = token or secrets.token_hex(4)
        self.sequence = 0

    def _write(self, table: str, data: pa.Table, name: str) -> None:
        final = self.run_dir / table / name
        tmp = final.with_name(f".{name}.tmp")
        with open_private(tmp) as handle:
            pq.write_table(data, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        replace_atomically(tmp, final)

    def write_checks(self, folder: Path, checks: Sequence[tuple[Sample, CheckResult]]) -> None:
        """Write one part of check results into ``folder`` (a rescoring's)."""
        name = f"part-{self.token}-{self.sequence:06d}.parquet"
        self.sequence += 1
        self._write(str(folder.relative_to(self.run_dir)), checks_table(checks), name)

    def write(
        self, samples: Sequence[Sample], checks: Sequence[tuple[Sample, CheckResult]]
    ) -> None:
        """Write one batch: its checks part, then its samples part (the commit)."""
        if not samples:
            return
        name = f"part-{self.token}-{self.sequence:06d}.parquet"
        self.sequence += 1
        self._write("checks", checks_table(checks), name)
        self._write("samples", samples_table(samples), name)

    def write_cases(self, cases: Sequence[Any]) -> None:
        """Write the case definitions as ``cases/part-<token>.parquet`` (once, as a run
        starts) and an empty ``verdicts/schema.parquet``, so globs over both work."""
        for folder in ("cases", "verdicts"):
            (self.run_dir / folder).mkdir(mode=0o700, exist_ok=True)
        self._write("cases", cases_table(self.run_dir.name, cases), f"part-{self.token}.parquet")
        if not (self.run_dir / "verdicts" / "schema.parquet").exists():
            self._write("verdicts", VERDICTS_SCHEMA.empty_table(), "schema.parquet")

    def write_verdicts(self, table: pa.Table) -> Path:
        """Write one verdicts part (each save is its own part)."""
        stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S%f}"
        name = f"part-{stamp}-{self.token}-{self.sequence:06d}.parquet"
        self.sequence += 1
        self._write("verdicts", table.cast(VERDICTS_SCHEMA), name)
        return self.run_dir / "verdicts" / name


def samples_table(samples: Sequence[Sample]) -> pa.Table:
    """Samples as a Table with :data:`SAMPLES_SCHEMA`."""
    columns: dict[str, list[Any]] = {}
    for name in SAMPLES_SCHEMA.names:
        values = [getattr(s, name) for s in samples]
        convert = _CONVERT.get(name)
        columns[name] = [convert(v) for v in values] if convert else values
    return _redacted(pa.Table.from_pydict(columns, schema=SAMPLES_SCHEMA))


def checks_table(rows: Sequence[tuple[Sample, CheckResult]]) -> pa.Table:
    """Check results as a long Table with :data:`CHECKS_SCHEMA`."""
    table = pa.Table.from_pydict(
        {
            "run_id": [s.run_id for s, _ in rows],
            "case_id": [s.case_id for s, _ in rows],
            "variant": [s.variant for s, _ in rows],
            "repeat": [s.repeat for s, _ in rows],
            "check": [r.check for _, r in rows],
            "check_type": [r.type for _, r in rows],
            "outcome": [r.outcome for _, r in rows],
            "score": [r.score for _, r in rows],
            "detail": [r.detail for _, r in rows],
            "evidence": [r.evidence for _, r in rows],
        },
        schema=CHECKS_SCHEMA,
    )
    return _redacted(table)


def _redacted(table: pa.Table) -> pa.Table:
    """``table`` with every registered secret redacted from its strings, nested ones too
    (nothing to do, and nothing done, while no secret is registered)."""
    if not secrets_registered():
        return table
    return pa.Table.from_pylist(
        [redact_json(row) for row in table.to_pylist()], schema=table.schema
    )


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


def cases_table(run_id: str, cases: Sequence[Any]) -> pa.Table:
    """Case definitions (:class:`~evalnb.Case`) as a Table with :data:`CASES_SCHEMA`."""
    rows = [case.to_dict() for case in cases]
    return pa.Table.from_pydict(
        {
            "run_id": [run_id] * len(rows),
            "case_id": [r["id"] for r in rows],
            "group": [r.get("group") or r["id"] for r in rows],
            "split": [r.get("split") or "dev" for r in rows],
            "tags": [list(r.get("tags") or []) for r in rows],
            "target": [_json_or_none(r.get("target")) for r in rows],
            "choices": [r.get("choices") for r in rows],
            "vars": [_json_or_none(r.get("vars") or {}) for r in rows],
            "metadata": [_json_or_none(r.get("metadata") or {}) for r in rows],
            "prompt": [r.get("prompt") for r in rows],
            "review": [r.get("review") for r in rows],
        },
        schema=CASES_SCHEMA,
    )
