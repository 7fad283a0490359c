"""Pairwise preferences: which of two variants' answers to one case and repeat a reviewer
preferred, saved one part per click like the verdicts, read back as history or latest.

A preference names the two variants compared (``a``, ``b``: the order the reviewer asked
for), which of them the panel showed on the left (``left``: sides are drawn at random per
pair so that position does not favour a variant) and the choice, always said of the
variants, never of the sides: ``a_better``, ``b_better``, ``tie`` or ``both_bad``.
``design`` and ``seed`` say how the pairs were ordered. Each save is its own small Parquet
part under ``preferences/``, written under a temporary name, synced and renamed, so a
kernel that dies loses nothing clicked. Nothing is overwritten: the latest row per pair
and annotator counts, and :data:`UNDECIDED` saved after a choice takes it back.

>>> store = PreferenceStore("runs/shop")                              # doctest: +SKIP
>>> store.save("order-status", 2, a="v1", b="v2", left="v2", annotator="ana",
...            preference="b_better")                                 # doctest: +SKIP
>>> latest_preferences("runs/shop")                                   # doctest: +SKIP
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalnb._exceptions import ArgumentError
from evalnb.store._atomic import atomic_file
from evalnb.store._rundir import read_manifest

__all__ = [
    "PREFERENCES",
    "PREFERENCES_SCHEMA",
    "UNDECIDED",
    "PreferenceStore",
    "latest_preferences",
    "preference_history",
]

#: What a reviewer can say of two answers, in the variants' terms.
PREFERENCES = ("a_better", "b_better", "tie", "both_bad")
#: Saved to take a preference back: the pair is undecided again for that annotator.
UNDECIDED = "undecided"
_SAVABLE = (*PREFERENCES, UNDECIDED)
#: The folder of the preference parts in a run directory.
FOLDER = "preferences"


def _field(name: str, type_: pa.DataType, doc: str) -> pa.Field:
    return pa.field(name, type_, metadata={b"doc": doc.encode()})


PREFERENCES_SCHEMA = pa.schema(
    [
        _field("run_id", pa.string(), "the run of both samples"),
        _field("case_id", pa.string(), "the case of both samples"),
        _field("repeat", pa.int64(), "the repeat of both samples"),
        _field("a", pa.string(), "the first variant compared (A)"),
        _field("b", pa.string(), "the second variant compared (B)"),
        _field("left", pa.string(), "the variant shown on the left"),
        _field("annotator", pa.string(), "who chose"),
        _field("preference", pa.string(), "a_better, b_better, tie, both_bad or undecided"),
        _field("reason", pa.string(), "the reviewer's reason, may be empty"),
        _field("design", pa.string(), "how the pairs were ordered: random or queue"),
        _field("seed", pa.int64(), "the seed of the order and of the sides"),
        _field("created_at", pa.timestamp("us", tz="UTC"), "when it was saved"),
    ]
)
#: A pair of samples, as a preference names it.
PAIR = ["run_id", "case_id", "repeat", "a", "b"]


def _check(annotator: Any, preference: Any, a: Any, b: Any, left: Any) -> None:
    if not isinstance(annotator, str) or not annotator.strip():
        raise ArgumentError(f"'annotator' must be a non-empty string (a name); got {annotator!r}")
    if preference not in _SAVABLE:
        options = ", ".join(repr(p) for p in PREFERENCES)
        raise ArgumentError(
            f"'preference' must be one of {options}; got {preference!r} "
            f"({UNDECIDED!r} takes one back)"
        )
    if not isinstance(a, str) or not isinstance(b, str) or a == b:
        raise ArgumentError(f"'a' and 'b' must be two different variant names; got {a!r}, {b!r}")
    if left not in (a, b):
        raise ArgumentError(
            f"'left' must be {a!r} or {b!r} (the variant on the left); got {left!r}"
        )


class PreferenceStore:
    """Saves preferences into one run directory, one atomic part per save; several
    stores may write to one run at once (every part has a unique name)."""

    def __init__(self, run_dir: str | os.PathLike[str], *, run_id: str | None = None):
        self.run_dir = Path(run_dir)
        if run_id is None:
            run_id = str(read_manifest(self.run_dir).get("run_id") or self.run_dir.name)
        self.run_id = run_id
        self._token = secrets.token_hex(4)
        self._sequence = 0
        self._last = dt.datetime.min.replace(tzinfo=dt.UTC)

    def _now(self) -> dt.datetime:
        # Two clicks in one clock tick still get distinct, ordered times: the later wins.
        now = dt.datetime.now(dt.UTC)
        if now <= self._last:
            now = self._last + dt.timedelta(microseconds=1)
        self._last = now
        return now

    def save(
        self,
        case_id: str,
        repeat: int,
        *,
        a: str,
        b: str,
        left: str,
        annotator: str,
        preference: str,
        reason: str = "",
        design: str = "random",
        seed: int = 0,
    ) -> dict[str, Any]:
        """Write one preference as its own part and return the row written."""
        _check(annotator, preference, a, b, left)
        row = {
            "run_id": self.run_id,
            "case_id": str(case_id),
            "repeat": int(repeat),
            "a": a,
            "b": b,
            "left": left,
            "annotator": annotator.strip(),
            "preference": preference,
            "reason": reason or "",
            "design": design,
            "seed": int(seed),
            "created_at": self._now(),
        }
        folder = self.run_dir / FOLDER
        if not folder.is_dir():
            folder.mkdir(mode=0o700, exist_ok=True)
            os.chmod(folder, 0o700)
        name = f"part-{row['created_at']:%Y%m%dT%H%M%S%f}-{self._token}-{self._sequence:06d}"
        self._sequence += 1
        with atomic_file(folder / f"{name}.parquet") as handle:
            pq.write_table(pa.Table.from_pylist([row], schema=PREFERENCES_SCHEMA), handle)
        return row


def preference_history(
    run_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    annotator: str | None = None,
) -> pd.DataFrame:
    """Every preference ever saved in ``run_dir`` (one or several run directories), oldest
    first, each once; :data:`UNDECIDED` rows (a choice taken back) included."""
    paths = [Path(run_dir)] if isinstance(run_dir, str | os.PathLike) else list(map(Path, run_dir))
    tables = [
        pq.read_table(part, schema=PREFERENCES_SCHEMA)
        for path in paths
        for part in sorted((path / FOLDER).glob("part-*.parquet"))
    ]
    if not tables:
        return PREFERENCES_SCHEMA.empty_table().to_pandas()
    frame = pa.concat_tables(tables).to_pandas()
    frame = frame.drop_duplicates(ignore_index=True)
    if annotator is not None:
        frame = frame[frame["annotator"] == annotator]
    return frame.sort_values("created_at", kind="stable", ignore_index=True)


def latest_preferences(
    run_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    annotator: str | None = None,
) -> pd.DataFrame:
    """The preference that counts per (pair, annotator): the latest saved; a pair whose
    latest row is :data:`UNDECIDED` has no row."""
    frame = preference_history(run_dir, annotator=annotator)
    latest = frame.drop_duplicates([*PAIR, "annotator"], keep="last")
    return latest[(latest["preference"] != UNDECIDED).to_numpy()].reset_index(drop=True)
