"""The run directory: Parquet schemas, manifest, and atomic, private parts.

::

    runs/<run_id>/
      manifest.json            what produced the run
      samples/part-*.parquet   one row per sample
      checks/part-*.parquet    one row per (sample, check), long format
      verdicts/part-*.parquet  one row per saved verdict (append-only)
      scores/<label>/          a rescoring: part-*.parquet like checks/, then scoring.json

Every file is written under a temporary name and renamed, so a crash never leaves a
torn file. A samples part is the commit of its batch: the runner writes a batch's
checks part first and its samples part second, both with the same name, and readers
ignore a checks part whose samples part is missing. The directory is ``0700`` and
every file ``0600``: answers may hold private text.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from evalnb._exceptions import StoreError
from evalnb._types import CheckResult, Sample

__all__ = [
    "CHECKS_SCHEMA",
    "SAMPLES_SCHEMA",
    "SCHEMA_VERSION",
    "VERDICTS_SCHEMA",
    "RunWriter",
    "create_run_dir",
    "read_manifest",
    "read_table",
    "sample_keys",
    "schema_markdown",
    "write_json_atomic",
]

SCHEMA_VERSION = 1
_META = {b"evalnb.schema_version": str(SCHEMA_VERSION).encode()}
_TS = pa.timestamp("us", tz="UTC")


def _field(name: str, type_: pa.DataType, doc: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={b"doc": doc.encode()})


_KEY = [
    _field("run_id", pa.string(), "Run identifier (the run directory's name).", False),
    _field("case_id", pa.string(), "Case id from the cases file.", False),
    _field("variant", pa.string(), "Variant name.", False),
    _field("repeat", pa.int32(), "Repeat index, 0-based.", False),
]

TOOL_CALL = pa.struct([("id", pa.string()), ("name", pa.string()), ("arguments", pa.string())])

ACTION = pa.struct(
    [
        ("tool", pa.string()),
        ("arguments", pa.string()),
        ("path", pa.string()),
        ("error", pa.bool_()),
        ("result", pa.string()),
    ]
)

SAMPLES_SCHEMA = pa.schema(
    [
        *_KEY,
        _field("order", pa.int64(), "Position in the planned execution order.", False),
        _field("started_at", _TS, "When the target was called (UTC).", False),
        _field("latency_ms", pa.float64(), "Wall time of the whole attempt, retries included."),
        _field(
            "status",
            pa.string(),
            "completed, or why not: error, timeout, empty, budget, malformed.",
            False,
        ),
        _field("error", pa.string(), "Error text of an incomplete sample."),
        _field("answer", pa.string(), "The final answer text (null when none came back)."),
        _field("prompt", pa.string(), "The last user message exactly as sent."),
        _field("request", pa.string(), "JSON of the request sent, secrets removed."),
        _field("response", pa.string(), "JSON (or raw text) of the response received."),
        _field("model", pa.string(), "Model name the server reported."),
        _field("finish_reason", pa.string(), "Why generation stopped (stop, length, ...)."),
        _field("tool_calls", pa.list_(TOOL_CALL), "Tool calls the model requested, in order."),
        _field("retries", pa.int32(), "Retries the target made for this sample."),
        _field("prompt_tokens", pa.int64(), "Prompt tokens (usage), when reported."),
        _field("completion_tokens", pa.int64(), "Completion tokens (usage), when reported."),
        _field("total_tokens", pa.int64(), "Total tokens (usage), when reported."),
        _field("exit_code", pa.int32(), "Command targets: the process exit code."),
        _field("stdout", pa.string(), "Command targets: captured stdout (truncated)."),
        _field("stderr", pa.string(), "Command targets: captured stderr (truncated)."),
        _field("stdout_truncated", pa.bool_(), "Command targets: stdout hit its cap."),
        _field("stderr_truncated", pa.bool_(), "Command targets: stderr hit its cap."),
        _field("trace", pa.string(), "Command targets: the JSONL trace file (truncated)."),
        _field("trace_truncated", pa.bool_(), "Command targets: the trace hit its cap."),
        _field("fingerprint", pa.string(), "First 12 hex of SHA-256 of the prompt as sent."),
        _field("canonical", pa.string(), "Canonical answer for agreement (see checks)."),
        _field("requested", pa.list_(ACTION), "Tool calls the model requested, in order."),
        _field("executed", pa.list_(ACTION), "Tool calls the application executed, in order."),
        _field(
            "evidence_problem", pa.string(), "Why the trace could not be read, if it could not."
        ),
        _field("facts", pa.string(), "JSON of what the target observed (e.g. containment)."),
    ],
    metadata=_META,
)

CHECKS_SCHEMA = pa.schema(
    [
        *_KEY,
        _field("check", pa.string(), "Check name, unique within its case.", False),
        _field("check_type", pa.string(), "Check type (contains, regex, python, ...).", False),
        _field("outcome", pa.bool_(), "True pass, False fail, null unscored (not applicable)."),
        _field("detail", pa.string(), "The problem found, or why it was unscored."),
        _field("evidence", pa.string(), "JSON of what the check relied on (a judge's exchange)."),
    ],
    metadata=_META,
)

VERDICTS_SCHEMA = pa.schema(
    [
        *_KEY,
        _field("annotator", pa.string(), "Who gave the verdict.", False),
        _field("verdict", pa.string(), "pass, fail or needs_review.", False),
        _field("reason", pa.string(), "The reviewer's short reason."),
        _field("created_at", _TS, "When the verdict was saved (UTC).", False),
    ],
    metadata=_META,
)

TABLES = {"samples": SAMPLES_SCHEMA, "checks": CHECKS_SCHEMA, "verdicts": VERDICTS_SCHEMA}


def _private_open(path: Path) -> Any:
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")


def _replace_atomically(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)
    os.chmod(final, 0o600)


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON under a temporary name, fsync, and rename over ``path`` (mode 0600)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    with _private_open(tmp) as handle:
        handle.write(json.dumps(data, indent=2, ensure_ascii=False, default=str).encode())
        handle.flush()
        os.fsync(handle.fileno())
    _replace_atomically(tmp, path)


def create_run_dir(path: str | os.PathLike[str]) -> Path:
    """Create a new, private run directory; an existing path is an error."""
    path = Path(path)
    if path.exists():
        raise StoreError(
            f"{path}: output directory already exists; choose a new path or resume it "
            "(--resume / resume=True)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        raise StoreError(f"{path}: output directory already exists") from None
    os.chmod(path, 0o700)
    for table in TABLES:
        (path / table).mkdir(mode=0o700)
        os.chmod(path / table, 0o700)
    return path


def read_manifest(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The run's manifest; a clear error when it is missing or not JSON."""
    path = Path(run_dir) / "manifest.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StoreError(f"{path}: not a run directory (no manifest.json)") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}:{exc.lineno}: manifest is not valid JSON ({exc.msg})") from None
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"{path}: 'schema_version' must be {SCHEMA_VERSION}; got {version!r} "
            "(written by another evalnb version)"
        )
    return manifest


def _committed_parts(run_dir: Path, table: str) -> list[Path]:
    folder = run_dir / table
    if not folder.is_dir():
        return []
    parts = sorted(p for p in folder.glob("part-*.parquet"))
    if table == "checks":
        committed = {p.name for p in (run_dir / "samples").glob("part-*.parquet")}
        parts = [p for p in parts if p.name in committed]
    return parts


def scorings(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every committed set of check results, oldest first: the run's own (``run``) and
    each rescoring under ``scores/<label>/`` whose ``scoring.json`` was written."""
    run_dir = Path(run_dir)
    found = [{"label": "run", "created_at": None}]
    rescored = []
    for marker in (run_dir / "scores").glob("*/scoring.json"):
        info = json.loads(marker.read_text(encoding="utf-8"))
        rescored.append({**info, "label": marker.parent.name})
    return found + sorted(rescored, key=lambda info: info["created_at"])


def _scoring_parts(run_dir: Path, scoring: str | None) -> list[Path]:
    labels = [info["label"] for info in scorings(run_dir)]
    label = labels[-1] if scoring is None else scoring
    if label not in labels:
        raise StoreError(
            f"{run_dir}: no committed scoring {label!r}; scorings: {', '.join(labels)}"
        )
    if label == "run":
        return _committed_parts(run_dir, "checks")
    return sorted((run_dir / "scores" / label).glob("part-*.parquet"))


def read_table(
    run_dir: str | os.PathLike[str],
    table: str,
    columns: Sequence[str] | None = None,
    scoring: str | None = None,
) -> pa.Table:
    """All committed parts of one table as a pyarrow Table with the declared schema.

    For ``checks``, ``scoring`` picks a set of results by label: ``"run"`` for the run's
    own, a rescoring's label, or ``None`` for the newest.
    """
    if table not in TABLES:
        raise ValueError(f"'table' must be one of {sorted(TABLES)}; got {table!r}")
    schema = TABLES[table]
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise ValueError(f"'columns' has names not in the {table} schema: {unknown!r}")
        schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
    if table == "checks":
        parts = _scoring_parts(Path(run_dir), scoring)
    else:
        parts = _committed_parts(Path(run_dir), table)
    if not parts:
        return schema.empty_table()
    # One dataset over all parts reads them in parallel; a run has a part per flush.
    dataset = ds.dataset([str(p) for p in parts], schema=TABLES[table], format="parquet")
    return dataset.to_table(columns=list(schema.names)).replace_schema_metadata(schema.metadata)


def sample_keys(run_dir: str | os.PathLike[str]) -> set[tuple[str, str, int]]:
    """The (case_id, variant, repeat) keys already written."""
    table = read_table(run_dir, "samples", ["case_id", "variant", "repeat"])
    return set(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


def remove_orphan_parts(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Delete leftovers of a batch that never committed (temporary files, lone checks parts)."""
    run_dir = Path(run_dir)
    committed = {p.name for p in (run_dir / "samples").glob("part-*.parquet")}
    removed = []
    for table in TABLES:
        for path in (run_dir / table).glob(".*.tmp"):
            path.unlink()
            removed.append(path)
    for path in (run_dir / "checks").glob("part-*.parquet"):
        if path.name not in committed:
            path.unlink()
            removed.append(path)
    return removed


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


_CONVERT = {"tool_calls": _tool_calls, "requested": _actions, "executed": _actions}


class RunWriter:
    """Appends batches of samples and their check results to a run directory.

    Each writer has its own random token, so several writers (resumes, shards on other
    machines) never collide on a part name.
    """

    def __init__(self, run_dir: str | os.PathLike[str]):
        self.run_dir = Path(run_dir)
        self.token = secrets.token_hex(4)
        self.sequence = 0

    def _write(self, table: str, data: pa.Table, name: str) -> None:
        final = self.run_dir / table / name
        tmp = final.with_name(f".{name}.tmp")
        with _private_open(tmp) as handle:
            pq.write_table(data, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        _replace_atomically(tmp, final)

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
    return pa.Table.from_pydict(columns, schema=SAMPLES_SCHEMA)


def checks_table(rows: Sequence[tuple[Sample, CheckResult]]) -> pa.Table:
    """Check results as a long Table with :data:`CHECKS_SCHEMA`."""
    return pa.Table.from_pydict(
        {
            "run_id": [s.run_id for s, _ in rows],
            "case_id": [s.case_id for s, _ in rows],
            "variant": [s.variant for s, _ in rows],
            "repeat": [s.repeat for s, _ in rows],
            "check": [r.check for _, r in rows],
            "check_type": [r.type for _, r in rows],
            "outcome": [r.outcome for _, r in rows],
            "detail": [r.detail for _, r in rows],
            "evidence": [r.evidence for _, r in rows],
        },
        schema=CHECKS_SCHEMA,
    )


def schema_markdown() -> str:
    """The schemas as Markdown tables (docs/schema.md is generated from this)."""
    lines = [
        "# Run directory schema",
        "",
        f"Schema version {SCHEMA_VERSION}. Generated by `evalnb.store.schema_markdown()`",
        "(`make schema-doc`); a test keeps this page and the code in step.",
        "",
    ]
    for table, schema in TABLES.items():
        lines += [f"## {table}/part-*.parquet", "", "| column | type | null | meaning |"]
        lines.append("|---|---|---|---|")
        for field in schema:
            doc = (field.metadata or {}).get(b"doc", b"").decode()
            null = "yes" if field.nullable else "no"
            lines.append(f"| `{field.name}` | `{field.type}` | {null} | {doc} |")
        lines.append("")
    return "\n".join(lines)
