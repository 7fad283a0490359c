"""Writing samples and check results as committed Parquet parts.

One sample that cannot be stored never costs the others their flush: when a batch does not
convert to the schema, each sample is converted alone and one that fails is stored as an
incomplete ``malformed`` sample whose ``error`` names the field and what was found there
(its key, order, time and prompt kept, its evidence dropped), and its applicable checks as
failed ``incomplete sample: malformed``. The key is then written, so a resume does not ask it
again and the denominators still count it. Only a sample whose key itself cannot be stored
is left out (with a warning naming it): a resume asks it again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import secrets
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalnb._secrets import active as secrets_registered
from evalnb._secrets import redact_json
from evalnb._types import CheckResult, Sample
from evalnb.store._atomic import atomic_file
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
        with atomic_file(self.run_dir / table / name) as handle:
            pq.write_table(data, handle, compression="zstd")

    def write_checks(self, folder: Path, checks: Sequence[tuple[Sample, CheckResult]]) -> None:
        """Write one part of check results into ``folder`` (a rescoring's)."""
        name = f"part-{self.token}-{self.sequence:06d}.parquet"
        self.sequence += 1
        self._write(str(folder.relative_to(self.run_dir)), checks_table(checks), name)

    def write(
        self, samples: Sequence[Sample], checks: Sequence[tuple[Sample, CheckResult]]
    ) -> tuple[list[Sample], list[tuple[Sample, CheckResult]]]:
        """Write one batch: its checks part, then its samples part (the commit).

        Returns the samples and check results as stored: the same unless one could not be
        stored as given (see the module's docstring)."""
        if not samples:
            return [], []
        try:
            sample_part = samples_table(samples)
        except _UNSTORABLE:
            samples, checks = _isolate(samples, checks)
            if not samples:
                return [], []
            sample_part = samples_table(samples)
        try:
            check_part = checks_table(checks)
        except _UNSTORABLE:
            checks = [(sample, _storable_result(result)) for sample, result in checks]
            check_part = checks_table(checks)
        name = f"part-{self.token}-{self.sequence:06d}.parquet"
        self.sequence += 1
        self._write("checks", check_part, name)
        self._write("samples", sample_part, name)
        return list(samples), list(checks)

    def write_group_checks(self, checks: Sequence[tuple[Sample, CheckResult]]) -> None:
        """Write check results of samples stored earlier (a check graded over a group of
        them): the checks part, then an empty samples part of the same name, its commit."""
        if not checks:
            return
        name = f"part-{self.token}-{self.sequence:06d}.parquet"
        self.sequence += 1
        self._write("checks", checks_table(checks), name)
        self._write("samples", samples_table([]), name)

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


#: What pyarrow raises for a value that does not fit its column.
_UNSTORABLE = (pa.ArrowException, TypeError, ValueError, OverflowError)

#: The fields a sample keeps when it is stored as ``malformed``.
_KEPT = ("run_id", "case_id", "variant", "repeat", "order", "started_at", "latency_ms")


def _problem(sample: Sample) -> str | None:
    """Which field of ``sample`` does not fit the samples schema, and why (``None``: all do)."""
    for name in SAMPLES_SCHEMA.names:
        value = getattr(sample, name)
        convert = _CONVERT.get(name)
        try:
            pa.array([convert(value) if convert else value], SAMPLES_SCHEMA.field(name).type)
        except (*_UNSTORABLE, AttributeError) as exc:
            found = type(value).__name__
            return f"field {name!r} ({found}) does not fit {SAMPLES_SCHEMA.field(name).type}: {exc}"
    return None


def _isolate(
    samples: Sequence[Sample], checks: Sequence[tuple[Sample, CheckResult]]
) -> tuple[list[Sample], list[tuple[Sample, CheckResult]]]:
    """The batch with each sample that cannot be stored made ``malformed`` (its applicable
    checks failed), or left out when even its key cannot be stored."""
    kept: list[Sample] = []
    replaced: dict[int, Sample | None] = {}
    for sample in samples:
        problem = _problem(sample)
        if problem is None:
            kept.append(sample)
            continue
        stand_in = _malformed(sample, problem)
        replaced[id(sample)] = stand_in
        if stand_in is None:
            warnings.warn(
                f"sample {sample.case_id!r}/{sample.variant!r}/{sample.repeat!r} not stored "
                f"(a resume asks it again): {problem}",
                RuntimeWarning,
                stacklevel=3,
            )
        else:
            kept.append(stand_in)
    results: list[tuple[Sample, CheckResult]] = []
    for sample, result in checks:
        if id(sample) not in replaced:
            results.append((sample, result))
        elif (stand_in := replaced[id(sample)]) is not None:
            results.append((stand_in, _failed_result(result, stand_in.status)))
    return kept, results


def _malformed(sample: Sample, problem: str) -> Sample | None:
    stand_in = Sample(
        **{name: getattr(sample, name) for name in _KEPT},
        status="malformed",
        error=f"could not be stored: {problem}"[:2000],
        answer=None,
        prompt=sample.prompt if isinstance(sample.prompt, str) else "",
        request=None,
        response=None,
    )
    return stand_in if _problem(stand_in) is None else None


def _failed_result(result: CheckResult, status: str) -> CheckResult:
    """A check result on a sample stored as incomplete: failed where it applied."""
    if result.outcome is None:
        return result
    score = None if result.score is None else 0.0
    detail = f"incomplete sample: {status}"
    return dataclasses.replace(result, outcome=False, score=score, detail=detail, evidence=None)


def _storable_result(result: CheckResult) -> CheckResult:
    """``result`` if it fits the checks schema, else failed with a detail saying why."""
    try:
        for name in ("check", "type", "outcome", "score", "detail", "evidence"):
            column = "check_type" if name == "type" else name
            pa.array([getattr(result, name)], CHECKS_SCHEMA.field(column).type)
    except _UNSTORABLE as exc:
        detail = f"check result could not be stored: field {name!r}: {exc}"[:2000]
        name = result.check if isinstance(result.check, str) else repr(result.check)
        kind = result.type if isinstance(result.type, str) else repr(result.type)
        return CheckResult(name, kind, False, detail, None, None)
    return result


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
