"""Human verdicts on samples: saved one part per click, read back as history or latest.

A verdict is ``pass``, ``fail`` or ``needs_review`` with a short reason, given by one
annotator to one sample. Each save is its own small Parquet part under ``verdicts/``,
written to a temporary name, synced and renamed, so a kernel that dies loses nothing
already clicked. Nothing is overwritten: the latest verdict per (sample, annotator)
counts and the full history stays readable. A verdict is taken back by saving
:data:`UNREVIEWED` after it: the history keeps both rows, and :func:`latest_verdicts`
then has no row for that sample and annotator, as if none had been given.

Many small parts read slowly; :func:`compact_verdicts` merges them into one. It writes
the merged part first and only then deletes the parts it merged, so a crash in between
leaves every row twice rather than once missing; readers drop exact duplicate rows.

>>> store = VerdictStore("runs/shop")                                   # doctest: +SKIP
>>> store.save("order-status", "v1", 3, annotator="ana", verdict="fail",
...            reason="promises a delivery date")                      # doctest: +SKIP
>>> latest_verdicts("runs/shop")                                        # doctest: +SKIP

:func:`verdicts` reads them from a Run or a run directory and :func:`save_verdicts` writes
verdicts recorded elsewhere (a frame, or a CSV file) in one part; both are ``evalnb``'s.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalnb._exceptions import ArgumentError, StoreError
from evalnb.store._lock import RunLock
from evalnb.store._rundir import read_manifest, read_table, sample_keys
from evalnb.store._schema import DESIGN_COLUMNS, KEY, VERDICTS, VERDICTS_SCHEMA
from evalnb.store._writer import RunWriter

__all__ = [
    "UNREVIEWED",
    "VERDICTS",
    "RunDirectories",
    "VerdictStore",
    "compact_verdicts",
    "latest_verdicts",
    "save_verdict",
    "save_verdicts",
    "verdict_history",
    "verdicts",
]

#: The value saved to take a verdict back: the sample is unreviewed again for that
#: annotator. Not a verdict a person gives, so it is not in :data:`VERDICTS`.
UNREVIEWED = "unreviewed"
_SAVABLE = (*VERDICTS, UNREVIEWED)
_READ_ATTEMPTS = 5


def _check_values(annotator: Any, verdict: Any, reason: Any) -> None:
    if not isinstance(annotator, str) or not annotator.strip():
        raise ArgumentError(f"'annotator' must be a non-empty string (a name); got {annotator!r}")
    if verdict not in _SAVABLE:
        options = ", ".join(repr(v) for v in VERDICTS)
        raise ArgumentError(
            f"'verdict' must be one of {options}; got {verdict!r} ({UNREVIEWED!r} takes "
            "a verdict back)"
        )
    if reason is not None and not isinstance(reason, str):
        raise TypeError(f"'reason' must be a string or None; got {type(reason).__name__}")


class VerdictStore:
    """Saves verdicts into one run directory, one atomic part per save.

    One store per panel (or script) is enough; several stores, in one process or in
    many, may write to the same run at once: every part has a unique name.
    """

    def __init__(self, run_dir: str | os.PathLike[str], *, run_id: str | None = None):
        self.run_dir = Path(run_dir)
        if run_id is None:  # a caller that has read the manifest already passes its run id
            run_id = str(read_manifest(self.run_dir).get("run_id") or self.run_dir.name)
        self.run_id = run_id
        self._writer = _writer(self.run_dir)
        self._last = dt.datetime.min.replace(tzinfo=dt.UTC)

    def _now(self) -> dt.datetime:
        # Two clicks within one clock tick still get distinct, ordered times: the later
        # one must win when the latest verdict is picked.
        now = dt.datetime.now(dt.UTC)
        if now <= self._last:
            now = self._last + dt.timedelta(microseconds=1)
        self._last = now
        return now

    def save(
        self,
        case_id: str,
        variant: str,
        repeat: int,
        *,
        annotator: str,
        verdict: str,
        reason: str | None = "",
        design: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write one verdict as its own part and return the row written.

        ``verdict`` is one of :data:`VERDICTS`, or :data:`UNREVIEWED` to take back the
        annotator's verdict on the sample. ``design`` holds how the review chose the
        sample (the columns :data:`~evalnb.store.DESIGN_COLUMNS`: ``design``, ``seed``,
        ``rank``, ``population``, ``size``, ``threshold``, ``inclusion``); without it they
        are null. The sample key is not looked up (the panel knows its samples exist); use
        :func:`save_verdict` to have it checked.
        """
        _check_values(annotator, verdict, reason)
        unknown = sorted(set(design or {}) - set(DESIGN_COLUMNS))
        if unknown:
            raise ArgumentError(f"'design' may hold {DESIGN_COLUMNS!r}; got also {unknown!r}")
        row = {
            "run_id": self.run_id,
            "case_id": str(case_id),
            "variant": str(variant),
            "repeat": int(repeat),
            "annotator": annotator.strip(),
            "verdict": verdict,
            "reason": reason or "",
            "created_at": self._now(),
            **{c: (design or {}).get(c) for c in DESIGN_COLUMNS},
        }
        self._writer.write_verdicts(pa.Table.from_pylist([row], schema=VERDICTS_SCHEMA))
        return row


def _writer(run_dir: Path) -> RunWriter:
    """A writer of verdicts parts into ``run_dir``; its ``verdicts/`` made when missing."""
    folder = run_dir / "verdicts"
    if not folder.is_dir():
        folder.mkdir(mode=0o700)
        os.chmod(folder, 0o700)
    return RunWriter(run_dir)


def save_verdict(
    run_dir: str | os.PathLike[str],
    case_id: str,
    variant: str,
    repeat: int,
    *,
    annotator: str,
    verdict: str,
    reason: str | None = "",
) -> dict[str, Any]:
    """Save one verdict on an existing sample of the run in ``run_dir``.

    >>> save_verdict("runs/shop", "order-status", "v1", 3, annotator="ana",
    ...              verdict="pass", reason="names the order")      # doctest: +SKIP
    """
    _check_values(annotator, verdict, reason)
    key = (str(case_id), str(variant), int(repeat))
    if key not in sample_keys(run_dir):
        raise ArgumentError(
            f"no sample (case_id, variant, repeat) = {key!r} in {os.fspath(run_dir)}; "
            "a verdict must name a stored sample"
        )
    store = VerdictStore(run_dir)
    return store.save(*key, annotator=annotator, verdict=verdict, reason=reason)


def _read(run_dir: Path) -> pa.Table:
    """Every verdict row of one run, retried when a compaction removes a part mid-read."""
    for attempt in range(_READ_ATTEMPTS):
        try:
            return read_table(run_dir, "verdicts")
        except (FileNotFoundError, pa.ArrowException, OSError):
            if attempt == _READ_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _frame(table: pa.Table) -> pd.DataFrame:
    frame = table.to_pandas()
    for column in ("run_id", "case_id", "variant", "annotator", "verdict", "reason"):
        frame[column] = frame[column].astype(object)
    return frame


def _dedupe(frame: pd.DataFrame) -> pd.DataFrame:
    """Drop rows stored twice (a compaction interrupted between write and delete)."""
    return frame.drop_duplicates(VERDICTS_SCHEMA.names, keep="first", ignore_index=True)


def verdict_history(
    run_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    annotator: str | None = None,
) -> pd.DataFrame:
    """Every verdict ever saved, oldest first, each once (columns of the verdicts schema).

    ``run_dir`` may be several run directories; ``annotator`` keeps one person's. Rows
    of :data:`UNREVIEWED` (a verdict taken back) are part of the history.
    """
    paths = _paths(run_dir)
    tables = [_read(path) for path in paths]
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    frame = _dedupe(_frame(table))
    if annotator is not None:
        frame = frame[frame["annotator"] == annotator]
    return frame.sort_values("created_at", kind="stable", ignore_index=True)


def latest_verdicts(
    data: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pd.DataFrame,
    *,
    annotator: str | None = None,
) -> pd.DataFrame:
    """The verdict that counts per (sample, annotator): the latest saved.

    ``data`` is a run directory, several, or a frame of verdict rows (``run.verdicts``).
    Ties in ``created_at`` keep the row stored last. Where the latest row is
    :data:`UNREVIEWED` the verdict was taken back: that sample and annotator have no
    row, so every verdict left is one of :data:`VERDICTS`.
    """
    if isinstance(data, pd.DataFrame):
        missing = [c for c in (*KEY, "annotator", "verdict", "created_at") if c not in data]
        if missing:
            raise ArgumentError(f"'data' must hold verdict rows; missing columns {missing!r}")
        frame = data
        if annotator is not None:
            frame = frame[frame["annotator"].astype(object) == annotator]
        frame = frame.sort_values("created_at", kind="stable")
    else:
        frame = verdict_history(data, annotator=annotator)
    identity = [*KEY, "annotator"]
    latest = frame.drop_duplicates(identity, keep="last")
    return latest[(latest["verdict"] != UNREVIEWED).to_numpy()].reset_index(drop=True)


def compact_verdicts(run_dir: str | os.PathLike[str]) -> Path | None:
    """Merge every verdicts part of one run into a single part; no row is lost.

    The merged part is written (temporary name, fsync, rename, directory fsync) before
    any merged part is deleted, so a crash leaves either the old parts, or the old and
    the merged ones (readers drop the duplicates). Parts saved while this runs are not
    touched. Returns the merged part, or None when there was at most one part. Holds the
    run's lock: a compaction during a run, or a second one, is refused.
    """
    run_dir = Path(run_dir)
    with RunLock(run_dir, "compaction"):
        return _compact(run_dir)


def _compact(run_dir: Path) -> Path | None:
    folder = run_dir / "verdicts"
    for attempt in range(_READ_ATTEMPTS):
        parts = sorted(folder.glob("part-*.parquet"))
        if len(parts) <= 1:
            return None
        try:
            table = _read_parts(parts)
            break
        except OSError:
            # Another compaction removed a part after it was listed: list again.
            if attempt == _READ_ATTEMPTS - 1:
                raise StoreError(
                    f"{folder}: parts kept disappearing while compacting; is another "
                    "compaction running? Try again when it has finished"
                ) from None
    frame = _dedupe(_frame(table)).sort_values("created_at", kind="stable", ignore_index=True)
    merged = pa.Table.from_pandas(frame, schema=VERDICTS_SCHEMA, preserve_index=False)
    path = RunWriter(run_dir).write_verdicts(merged)
    _fsync_dir(folder)
    for part in parts:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
    _fsync_dir(folder)
    return path


def _read_parts(parts: Sequence[Path]) -> pa.Table:
    tables = [pq.read_table(part, schema=VERDICTS_SCHEMA) for part in parts]
    return pa.concat_tables(tables)


def _fsync_dir(folder: Path) -> None:
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _paths(run_dir: Any) -> list[Path]:
    if isinstance(run_dir, str | os.PathLike):
        return [Path(run_dir)]
    paths = [Path(p) for p in run_dir]
    if not paths:
        raise ArgumentError("'run_dir' must name at least one run directory; got none")
    return paths


@runtime_checkable
class RunDirectories(Protocol):
    """Run directories by run id, such as a Run from :func:`evalnb.load`."""

    @property
    def paths(self) -> Mapping[str, Path]:
        """Each run's directory, by run id."""
        ...

    def forget(self, name: str) -> None:
        """Drop what was read of table ``name``."""
        ...


def verdicts(
    run: RunDirectories | str | os.PathLike[str],
    *,
    annotator: str | None = None,
    history: bool = False,
) -> pd.DataFrame:
    """The human verdicts saved on ``run`` (a Run from :func:`evalnb.load`, or a run
    directory): the one that counts per sample and annotator (the latest; one taken back
    is left out), or with ``history=True`` every row ever saved, oldest first. Columns:
    ``run_id``, ``case_id``, ``variant``, ``repeat``, ``annotator``, ``verdict``,
    ``reason``, ``created_at``. ``annotator`` keeps one person's.

    >>> evalnb.verdicts(run, annotator="ana")                          # doctest: +SKIP
    """
    if not isinstance(history, bool):
        raise TypeError(f"'history' must be True or False; got {history!r}")
    paths = list(_directories(run).values())
    if history:
        return verdict_history(paths, annotator=annotator)
    return latest_verdicts(paths, annotator=annotator)


def save_verdicts(
    run: RunDirectories | str | os.PathLike[str],
    rows: pd.DataFrame | str | os.PathLike[str],
    *,
    annotator: str | None = None,
) -> pd.DataFrame:
    """Save verdicts given elsewhere on the samples of ``run`` (a Run from
    :func:`evalnb.load`, or a run directory), through the store the review panel writes to.

    ``rows`` is a frame or a CSV file with ``case_id``, ``variant``, ``repeat`` and
    ``verdict`` (``pass``, ``fail``, ``needs_review``; ``unreviewed`` takes one back), and
    ``annotator`` unless given here for every row; ``reason``, ``run_id`` (needed when
    ``run`` holds several runs), ``created_at`` (else the time of saving, in row order)
    and the design columns (:data:`~evalnb.store.DESIGN_COLUMNS`, how each sample came to
    be reviewed, as the panel stores them; null when absent, and then the verdicts
    describe the reviewed samples only) are optional. Every row is checked first (a stored
    sample, a known verdict), then each run's rows are written as one part. Returns the rows saved.

    >>> evalnb.save_verdicts(run, "reviews.csv", annotator="ana")        # doctest: +SKIP
    """
    where = _directories(run)
    frame = _verdict_rows(rows, annotator, where)
    saved = []
    for run_id, part in frame.groupby("run_id", sort=False):
        table = pa.Table.from_pandas(part, schema=VERDICTS_SCHEMA, preserve_index=False)
        _writer(where[str(run_id)]).write_verdicts(table)
        saved.append(part)
    if isinstance(run, RunDirectories):
        run.forget("verdicts")
    return pd.concat(saved, ignore_index=True) if saved else frame


def _directories(run: Any) -> dict[str, Path]:
    if isinstance(run, str | os.PathLike):
        path = Path(run)
        return {str(read_manifest(path).get("run_id") or path.name): path}
    if isinstance(run, RunDirectories):
        return {str(k): Path(v) for k, v in run.paths.items()}
    raise TypeError(f"'run' must be a Run or a run directory; got {type(run).__name__}")


def _verdict_rows(
    rows: pd.DataFrame | str | os.PathLike[str], annotator: str | None, where: dict[str, Path]
) -> pd.DataFrame:
    """``rows`` as verdict rows of the verdicts schema, each checked; a bad row is named."""
    if isinstance(rows, str | os.PathLike):
        source, frame = os.fspath(rows), pd.read_csv(rows, dtype={"repeat": "Int64"})
        line = 2  # a CSV's first row is line 2, below the header
    elif isinstance(rows, pd.DataFrame):
        source, frame, line = "rows", rows.reset_index(drop=True), 0
    else:
        raise TypeError(f"'rows' must be a frame or a CSV file; got {type(rows).__name__}")
    if annotator is not None:
        frame = frame.assign(annotator=annotator)
    if "run_id" not in frame and len(where) == 1:
        frame = frame.assign(run_id=next(iter(where)))
    needed = ["run_id", "case_id", "variant", "repeat", "annotator", "verdict"]
    missing = [c for c in needed if c not in frame]
    if missing:
        raise ArgumentError(f"{source}: verdict rows must have {needed!r}; missing {missing!r}")
    keys = {run_id: sample_keys(path) for run_id, path in where.items()}
    for i, row in enumerate(frame[needed].to_dict("records")):
        _check_row(f"{source}:{i + line}" if line else f"{source}[{i}]", row, keys)
    out = pd.DataFrame({c: frame[c].astype(object) for c in needed})
    out["repeat"] = frame["repeat"].astype("int64")
    out["annotator"] = out["annotator"].str.strip()
    reason = frame["reason"] if "reason" in frame else pd.Series("", index=frame.index)
    out["reason"] = reason.fillna("").astype(str)
    out["created_at"] = _stamps(frame)
    for column in DESIGN_COLUMNS:
        out[column] = frame.get(column, None)
    return out[VERDICTS_SCHEMA.names]


def _check_row(at: str, row: dict[str, Any], keys: dict[str, set[tuple[str, str, int]]]) -> None:
    try:
        _check_values(row["annotator"], row["verdict"], None)
    except ArgumentError as exc:
        raise ArgumentError(f"{at}: {exc}") from None
    run_id, repeat = str(row["run_id"]), row["repeat"]
    if run_id not in keys:
        raise ArgumentError(f"{at}: 'run_id' must be one of {sorted(keys)!r}; got {run_id!r}")
    key = (str(row["case_id"]), str(row["variant"]), repeat)
    if pd.isna(repeat) or (key[0], key[1], int(repeat)) not in keys[run_id]:
        raise ArgumentError(
            f"{at}: no sample (case_id, variant, repeat) = {key!r} in run {run_id!r}; "
            "a verdict must name a stored sample"
        )


def _stamps(frame: pd.DataFrame) -> pd.Series:
    """``created_at`` as given, else now, a microsecond apart per row: the later row wins."""
    if "created_at" in frame:
        return pd.to_datetime(frame["created_at"], utc=True)
    now = pd.Timestamp(dt.datetime.now(dt.UTC))
    return pd.Series(now + pd.to_timedelta(np.arange(len(frame)), unit="us"), index=frame.index)
