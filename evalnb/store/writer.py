"""Writing samples and check results as committed Parquet parts."""

from __future__ import annotations

import datetime as dt
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
from evalnb.store.rundir import open_private, replace_atomically
from evalnb.store.schema import CHECKS_SCHEMA, SAMPLES_SCHEMA, VERDICTS_SCHEMA

__all__ = ["RunWriter", "checks_table", "samples_table"]


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
