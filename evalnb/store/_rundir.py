"""The run directory on disk: creating it, the manifest, committed parts, reading tables.

Every file is written under a temporary name and renamed, so a crash never leaves a
torn file; the directory is ``0700`` and every file ``0600``.
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pyarrow as pa
import pyarrow.parquet as pq

from evalnb._exceptions import ArgumentError, StoreError
from evalnb._secrets import redact
from evalnb.store._atomic import write_atomic
from evalnb.store._layout import SCORES, SCORING, manifest_path, scoring_path
from evalnb.store._schema import SCHEMA_VERSION, TABLES
from evalnb.store._shards import committed_shard_parts, is_shard_part

__all__ = [
    "DamagedRunWarning",
    "PartialScoringWarning",
    "create_run_dir",
    "read_manifest",
    "read_table",
    "remove_orphan_parts",
    "run_path",
    "sample_keys",
    "scorings",
    "write_json_atomic",
    "write_text_file",
]


def _json_text(data: Any) -> str:
    """``data`` as JSON, an object one top-level key per line and each value compact: as
    readable as ``indent=2`` for a person scanning it, and written by the C encoder (a
    manifest of 20,000 planned samples took a second to indent)."""
    if not isinstance(data, dict) or not data:
        return json.dumps(data, ensure_ascii=False, default=str)
    lines = [
        f"  {json.dumps(str(key), ensure_ascii=False)}: "
        f"{json.dumps(value, ensure_ascii=False, default=str)}"
        for key, value in data.items()
    ]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON under a temporary name, fsync, and rename over ``path`` (mode 0600)."""
    write_atomic(path, redact(_json_text(data)))


def run_path(location: str | os.PathLike[str]) -> Path:
    """The folder a run directory names: a path, or a ``file://`` URL.

    A run directory needs what a POSIX filesystem gives: atomic rename, fsync and an
    advisory lock. An object store (``s3://``, ``gs://``, ...) has none of them, so its
    URL is refused, saying to mount it or share a folder instead.
    """
    text = os.fsdecode(os.fspath(location))
    scheme, sep, _ = text.partition("://")
    if not sep or "/" in scheme or "\\" in scheme:
        return Path(text)
    if scheme.lower() == "file":
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise StoreError(
                f"{text}: a file:// URL must name this machine; got host {parts.netloc!r}"
            )
        return Path(url2pathname(parts.path))
    raise StoreError(
        f"{text}: a run directory must be a folder (local, or shared by every worker: NFS, a "
        f"mounted bucket); {scheme}:// has no atomic rename or lock for the run's parts"
    )


def make_parents(path: Path) -> None:
    """Create the missing folders above ``path``, at most ``0755`` whatever the umask (under
    ``umask 000`` a plain ``mkdir`` makes them writable by everyone). The umask can only
    take bits away from the mode asked for, so it is never read (reading it means setting
    it, for the whole process, for a moment)."""
    missing = [p for p in path.parents if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o755, exist_ok=True)


def write_text_file(path: str | os.PathLike[str], text: str) -> None:
    """Write an output file a user asked for (a report, a JUnit file) into an existing
    folder: readable by others, writable only by its owner (``0644`` at most, whatever the
    umask; an existing file keeps no more than that either)."""
    fd = os.open(Path(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
        if mode & ~0o644:
            os.fchmod(handle.fileno(), mode & 0o644)
        handle.write(text)


def create_run_dir(path: str | os.PathLike[str]) -> Path:
    """Create a new, private run directory; an existing path is an error."""
    path = Path(path)
    if path.exists():
        raise StoreError(
            f"{path}: output directory already exists; choose a new path or resume it "
            "(--resume / resume=True)"
        )
    make_parents(path)
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
    path = manifest_path(run_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StoreError(f"{path}: not a run directory (no manifest.json)") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}:{exc.lineno}: manifest is not valid JSON ({exc.msg})") from None
    if not isinstance(manifest, dict):
        raise StoreError(f"{path}: manifest must be a JSON object; got {type(manifest).__name__}")
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
    return _without_uncommitted_shards(run_dir, parts)


def _without_uncommitted_shards(run_dir: Path, parts: list[Path]) -> list[Path]:
    """Leave out the parts of shard attempts no commit marker lists (store/shards.py)."""
    if not any(is_shard_part(p.name) for p in parts):
        return parts
    committed = committed_shard_parts(run_dir)
    return [p for p in parts if not is_shard_part(p.name) or p.name in committed]


def scorings(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every committed set of check results, oldest first: the run's own (``run``) and
    each rescoring under ``scores/<label>/`` whose ``scoring.json`` was written."""
    run_dir = Path(run_dir)
    found = [{"label": "run", "created_at": None}]
    rescored = []
    for marker in (run_dir / SCORES).glob(f"*/{SCORING}"):
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
            if not isinstance(info, dict) or not isinstance(info.get("created_at"), str):
                raise ArgumentError("expected an object with 'created_at'")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            _skipped(run_dir, marker, f"cannot be used ({exc})")
            continue
        rescored.append({**info, "label": marker.parent.name})
    return found + sorted(rescored, key=lambda info: info["created_at"])


class DamagedRunWarning(UserWarning):
    """A file of a run could not be read and was left out; ``evalnb doctor`` repairs it."""


def _skipped(run_dir: Path, path: Path, why: str) -> None:
    warnings.warn(
        f"{path}: {why}; left out (`evalnb doctor {run_dir} --repair` quarantines it)",
        DamagedRunWarning,
        stacklevel=3,
    )


def _readable(run_dir: Path, parts: list[Path]) -> list[Path]:
    """The parts whose Parquet footer reads; the others are left out with a warning."""
    kept = []
    for part in parts:
        try:
            pq.read_metadata(part)
        except (OSError, pa.ArrowException) as exc:
            _skipped(
                run_dir, part, f"not a readable Parquet file ({str(exc).splitlines()[0][:120]})"
            )
            continue
        kept.append(part)
    return kept


class PartialScoringWarning(UserWarning):
    """A scoring that covers fewer samples than its run: read only when asked for by label."""


def _sample_count(run_dir: Path) -> int:
    """Rows of the committed samples parts, from their footers (no data read)."""
    return sum(pq.read_metadata(p).num_rows for p in _committed_parts(run_dir, "samples"))


def _choose_scoring(run_dir: Path, scoring: str | None) -> str:
    """The label to read: ``scoring``, or by default the newest scoring that covers every
    sample of the run (a partial one never; saying so when it is passed over)."""
    infos = scorings(run_dir)
    labels = [info["label"] for info in infos]
    if scoring is not None and scoring not in labels:
        raise StoreError(
            f"{run_dir}: no committed scoring {scoring!r}; scorings: {', '.join(labels)}"
        )
    if len(infos) == 1:
        return "run"
    count = _sample_count(run_dir)

    def short(info: dict[str, Any]) -> str | None:
        covered = info.get("samples")
        if info["label"] == "run":
            return None
        if info.get("partial") or (isinstance(covered, int) and covered < count):
            return f"scoring {info['label']!r} covers {covered} of the run's {count} samples"
        return None

    if scoring is not None:
        why = short(next(i for i in infos if i["label"] == scoring))
        if why:
            warnings.warn(
                f"{run_dir}: {why}; the samples it lacks have no check results in it, so "
                "its rates leave them out",
                PartialScoringWarning,
                stacklevel=4,
            )
        return scoring
    chosen = next(i for i in reversed(infos) if short(i) is None)
    passed = [short(i) for i in infos[infos.index(chosen) + 1 :]]
    if passed:
        warnings.warn(
            f"{run_dir}: {'; '.join(w for w in passed if w)}: read scoring "
            f"{chosen['label']!r} instead (ask for a partial one by its label)",
            PartialScoringWarning,
            stacklevel=4,
        )
    return str(chosen["label"])


def _scoring_parts(run_dir: Path, scoring: str | None) -> list[Path]:
    label = _choose_scoring(run_dir, scoring)
    if label == "run":
        return _committed_parts(run_dir, "checks")
    return sorted(scoring_path(run_dir, label).glob("part-*.parquet"))


def read_table(
    run_dir: str | os.PathLike[str],
    table: str,
    columns: Sequence[str] | None = None,
    scoring: str | None = None,
    dictionaries: Sequence[str] = (),
) -> pa.Table:
    """All committed parts of one table as a pyarrow Table with the declared schema.

    For ``checks``, ``scoring`` picks a set of results by label: ``"run"`` for the run's
    own, a rescoring's label, or ``None`` for the newest. The string columns named in
    ``dictionaries`` come as dictionary arrays (one string per distinct value and chunk, as
    Parquet stores them): key columns read this way are several times faster to turn into
    categories.
    """
    if table not in TABLES:
        raise ArgumentError(f"'table' must be one of {sorted(TABLES)}; got {table!r}")
    schema = TABLES[table]
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise ArgumentError(f"'columns' has names not in the {table} schema: {unknown!r}")
        schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
    if table == "checks":
        parts = _scoring_parts(Path(run_dir), scoring)
    else:
        parts = _committed_parts(Path(run_dir), table)
    if table == "verdicts":
        # Verdicts are small parts saved one click at a time: one damaged part must not
        # hide the rest (samples and checks stay strict: a gap there would bias rates).
        parts = _readable(Path(run_dir), parts)
    coded = [c for c in dictionaries if c in schema.names]
    if coded:
        schema = pa.schema(
            [
                pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in coded else f
                for f in schema
            ],
            metadata=schema.metadata,
        )
    if not parts:
        return schema.empty_table()
    # One dataset over all parts reads them in parallel; a run has a part per flush.
    # Imported when a table is read: importing the store (the runner, the CLI) then loads
    # neither pyarrow.dataset nor the pandas it imports.
    import pyarrow.dataset as ds

    full = pa.schema(
        [schema.field(f.name) if f.name in coded else f for f in TABLES[table]],
        metadata=schema.metadata,
    )
    options = ds.ParquetReadOptions(dictionary_columns=coded)
    parquet = ds.ParquetFileFormat(read_options=options)
    dataset = ds.dataset([str(p) for p in parts], schema=full, format=parquet)
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
