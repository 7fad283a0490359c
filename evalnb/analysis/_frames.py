"""A run directory (or several) as pandas frames: :func:`load` and :class:`Run`.

Tables are read on first use and only the columns asked for, so a large run costs what
the analysis needs. Key columns (``run_id``, ``case_id``, ``variant``, ``check``,
``status``...) are categoricals whose categories follow the manifest's order (cases
and variants as defined), which keeps group-bys fast and results in a natural order.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalnb._exceptions import ArgumentError
from evalnb._types import STATUSES
from evalnb.analysis import _display as display
from evalnb.analysis._args import choice, names
from evalnb.store import KEY, TABLES, VERDICTS, Manifest, read_manifest, read_table, run_path

__all__ = ["Run", "load"]

# Columns always read with a table, so frames can be joined and re-read consistently.
_ALWAYS = {
    "samples": KEY,
    "checks": [*KEY, "check"],
    "verdicts": [*KEY, "annotator", "verdict", "created_at"],
}
_CATEGORICAL = {
    "run_id",
    "case_id",
    "variant",
    "check",
    "check_type",
    "status",
    "model",
    "finish_reason",
    "annotator",
    "verdict",
}
_CASE_COLUMNS = [
    "run_id",
    "case_id",
    "group",
    "split",
    "tags",
    "review",
    "agreement_min",
    "prompt",
    "messages",
    "fixtures",
    "checks",
    "metadata",
]


def load(
    path_or_paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    scoring: str | None = None,
) -> Run:
    """Open one run directory, or several as one :class:`Run` (``run_id`` tells them apart).

    Only the manifests are read here; tables are read when first used. ``scoring``
    picks the check results: ``None`` the newest (a rescoring, if any), ``"run"`` the
    run's own, or a rescoring's label (``evalnb score``).

    >>> run = evalnb.load("runs/2024-06-01-shop")      # doctest: +SKIP
    >>> run.samples.groupby("variant").size()           # doctest: +SKIP
    """
    if isinstance(path_or_paths, str | os.PathLike):
        paths = [run_path(path_or_paths)]
    else:
        paths = [run_path(p) for p in path_or_paths]
    if not paths:
        raise ArgumentError("'path_or_paths' must name at least one run directory; got none")
    manifests: dict[str, dict[str, Any]] = {}
    where: dict[str, Path] = {}
    for path in paths:
        manifest = read_manifest(path)
        run_id = str(manifest.get("run_id") or path.name)
        if run_id in manifests:
            raise ArgumentError(
                f"'path_or_paths' holds run {run_id!r} twice ({where[run_id]} and {path}); "
                "load each run once"
            )
        manifests[run_id] = manifest
        where[run_id] = path
    return Run(where, manifests, scoring=scoring)


class Run:
    """One or more run directories, read lazily into pandas frames.

    ``samples``, ``checks`` and ``verdicts`` are the stored tables (all columns);
    ``cases`` holds the case definitions from the manifests; :meth:`table` reads
    chosen columns only. Each table is read once, and again only when a call needs
    more of its columns; call :func:`load` again to see samples written since.
    """

    def __init__(
        self,
        paths: Mapping[str, Path],
        manifests: Mapping[str, dict[str, Any]],
        scoring: str | None = None,
    ):
        self.scoring = scoring
        self.paths: dict[str, Path] = dict(paths)
        self.manifests: dict[str, dict[str, Any]] = dict(manifests)
        self._tables: dict[str, pd.DataFrame] = {}
        self._cases: pd.DataFrame | None = None
        self._derived: dict[Any, Any] = {}

    # -- identity -------------------------------------------------------------------

    @property
    def run_ids(self) -> list[str]:
        """The run ids, in the order the directories were given."""
        return list(self.manifests)

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest of a single run (use :attr:`manifests` when there are several)."""
        if len(self.manifests) != 1:
            raise ArgumentError(
                f"this Run holds {len(self.manifests)} runs ({', '.join(self.manifests)}); "
                "use run.manifests[run_id]"
            )
        return next(iter(self.manifests.values()))

    @property
    def info(self) -> Manifest:
        """The manifest of a single run, typed (:class:`evalnb.store.Manifest`)."""
        return Manifest.from_dict(self.manifest, f"{self.run_ids[0]}/manifest.json")

    @property
    def variants(self) -> list[str]:
        """Variant names in manifest order (across runs, first seen first)."""
        return _ordered(v["name"] for m in self.manifests.values() for v in m.get("variants", []))

    # -- tables ---------------------------------------------------------------------

    @property
    def samples(self) -> pd.DataFrame:
        """Every sample, one row each, all columns of the samples schema."""
        return self.table("samples")

    @property
    def checks(self) -> pd.DataFrame:
        """Every check result, long format: one row per (sample, check)."""
        return self.table("checks")

    @property
    def verdicts(self) -> pd.DataFrame:
        """Every saved human verdict (append-only: a later verdict supersedes)."""
        return self.table("verdicts")

    @property
    def cases(self) -> pd.DataFrame:
        """The case definitions, one row per (run_id, case_id).

        Columns: ``run_id``, ``case_id``, ``group``, ``split``, ``tags`` (list),
        ``review``, ``agreement_min`` (from the metadata; NaN when not set),
        ``prompt``, ``messages``, ``fixtures``, ``checks`` (specs), ``metadata``.
        """
        if self._cases is None:
            rows = []
            for run_id, manifest in self.manifests.items():
                for case in manifest.get("cases", []):
                    metadata = dict(case.get("metadata") or {})
                    rows.append(
                        {
                            "run_id": run_id,
                            "case_id": case["id"],
                            "group": case.get("group") or case["id"],
                            "split": case.get("split") or "dev",
                            "tags": list(case.get("tags") or []),
                            "review": case.get("review"),
                            "agreement_min": metadata.get("agreement_min"),
                            "prompt": case.get("prompt"),
                            "messages": case.get("messages"),
                            "fixtures": dict(case.get("fixtures") or {}),
                            "checks": list(case.get("checks") or []),
                            "metadata": metadata,
                        }
                    )
            frame = pd.DataFrame(rows, columns=_CASE_COLUMNS)
            frame["agreement_min"] = pd.to_numeric(frame["agreement_min"], errors="coerce")
            for column in ("run_id", "case_id"):
                frame[column] = pd.Categorical(
                    frame[column].astype(object), categories=self._categories(column, ())
                )
            frame["split"] = pd.Categorical(
                frame["split"], categories=_ordered(["dev", "heldout", *frame["split"]])
            )
            self._cases = frame
        return self._cases.copy()

    def table(self, name: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """One table with only the columns given (plus its key columns).

        ``name`` is ``"samples"``, ``"checks"`` or ``"verdicts"``; ``columns`` are
        names from that table's schema (``evalnb.store``). Columns already read are
        kept, so asking again is free.
        """
        choice("name", name, TABLES)
        schema_names = TABLES[name].names
        extra = names("columns", columns) if columns is not None else schema_names
        unknown = [c for c in extra if c not in schema_names]
        if unknown:
            raise ArgumentError(
                f"'columns' must be {name} columns ({', '.join(schema_names)}); got {unknown!r}"
            )
        wanted = [c for c in schema_names if c in {*_ALWAYS[name], *extra}]
        cached = self._tables.get(name)
        if cached is not None and set(wanted) <= set(cached.columns):
            return cached[wanted]
        have = set(cached.columns) if cached is not None else set()
        union = [c for c in schema_names if c in have | set(wanted)]
        frame = self._read(name, union)
        if cached is not None and not _same_rows(cached, frame, _ALWAYS[name]):
            # The run grew between reads: rows derived from the old ones point at stale
            # positions. Other tables stay as read; joins only match samples both hold.
            self._derived.clear()
        self._tables[name] = frame
        return frame[wanted]

    def forget(self, name: str) -> None:
        """Drop the cached ``name`` table and what was derived from it: the next use reads
        it again from disk.

        The review panel calls ``run.forget("verdicts")`` after each save, so that
        ``rates(run, source="verdicts")`` and ``calibrate(run)`` count the new verdict.
        """
        choice("name", name, TABLES)
        self._tables.pop(name, None)
        # Derived rows are keyed by the table they come from ("check_rows",
        # ("verdict_rows", ...)); every one of them holds sample positions.
        stem = name.removesuffix("s")
        for key in list(self._derived):
            first = key[0] if isinstance(key, tuple) else key
            if name == "samples" or stem in str(first):
                del self._derived[key]

    def _read(self, name: str, columns: list[str]) -> pd.DataFrame:
        scoring = self.scoring if name == "checks" else None
        coded = [c for c in columns if c in _CATEGORICAL]
        tables = [
            read_table(path, name, columns, scoring, dictionaries=coded)
            for path in self.paths.values()
        ]
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        data = {
            column: self._run_id_column(tables, table)
            if column == "run_id"
            else self._column(column, table.column(column))
            for column in columns
        }
        return pd.DataFrame(data)

    def _run_id_column(self, tables: list[pa.Table], table: pa.Table) -> pd.Series:
        """``run_id`` is nearly always its directory's own id throughout: check, don't hash."""
        codes = []
        for index, (run_id, part) in enumerate(zip(self.paths, tables, strict=True)):
            values = part.column("run_id")
            same = len(values) == 0 or (
                values.null_count == 0
                and all(
                    # A chunk's dictionary holds the values it uses: all equal, all equal.
                    pc.all(pc.equal(chunk.dictionary, run_id)).as_py()
                    for chunk in values.chunks
                )
            )
            if not same:
                return self._column("run_id", table.column("run_id"))
            codes.append(np.full(len(values), index, dtype=np.int8 if index < 127 else np.int32))
        categorical = pd.Categorical.from_codes(np.concatenate(codes), self.run_ids)
        return pd.Series(categorical, copy=False)

    def _column(self, name: str, values: pa.ChunkedArray) -> pd.Series:
        kind = values.type
        if name in _CATEGORICAL and pa.types.is_dictionary(kind):
            return pd.Series(self._categorical(name, values), copy=False)
        if name in _CATEGORICAL and pa.types.is_string(kind):
            return pd.Series(self._categorical(name, pc.dictionary_encode(values)), copy=False)
        if pa.types.is_boolean(kind):
            if values.null_count:
                return values.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)
            return values.to_pandas()
        if pa.types.is_integer(kind) and values.null_count:
            return values.to_pandas(types_mapper=pd.ArrowDtype)
        if pa.types.is_nested(kind):
            return values.to_pandas(types_mapper=pd.ArrowDtype)
        return values.to_pandas()

    def _categorical(self, name: str, values: pa.ChunkedArray) -> pd.Categorical:
        """Key strings (dictionary arrays) as a Categorical whose categories follow the
        manifest's order; each chunk's few distinct strings are looked up, not every row."""
        values = values.unify_dictionaries()
        chunks = values.chunks
        words = chunks[0].dictionary if chunks else pa.array([], pa.string())
        if name == "check":
            # No manifest order for check names: keep the order they were first written.
            categories = words.to_pylist()
            remap = np.arange(len(categories), dtype=np.int64)
        else:
            categories = self._categories(name, words.to_pylist())
            lookup = pc.index_in(words, value_set=pa.array(categories, pa.string()))
            remap = lookup.to_numpy(zero_copy_only=False).astype(np.int64)
        codes = np.empty(len(values), dtype=np.int32 if len(categories) < 2**31 else np.int64)
        start = 0
        for chunk in chunks:
            if chunk.null_count == len(chunk) or not len(remap):
                part: Any = -1
            elif chunk.null_count:
                indices = pc.fill_null(chunk.indices, 0).to_numpy(zero_copy_only=False)
                valid = chunk.is_valid().to_numpy(zero_copy_only=False)
                part = np.where(valid, remap[indices], -1)
            else:
                part = remap[chunk.indices.to_numpy(zero_copy_only=False)]
            codes[start : start + len(chunk)] = part
            start += len(chunk)
        return pd.Categorical.from_codes(codes, categories)

    def _categories(self, name: str, observed: Iterable[Any]) -> list[Any]:
        """Known values in manifest order, then any other observed ones, sorted."""
        if name == "run_id":
            known = self.run_ids
        elif name == "case_id":
            known = _ordered(c["id"] for m in self.manifests.values() for c in m.get("cases", []))
        elif name == "variant":
            known = self.variants
        elif name == "status":
            known = list(STATUSES)
        elif name == "verdict":
            known = list(VERDICTS)
        else:
            known = []
        present = set(known)
        return [*known, *sorted({v for v in observed if v not in present})]

    # -- display --------------------------------------------------------------------

    def summary(self) -> pd.DataFrame:
        """Per run and variant: ``cases``, ``repeats`` (planned), ``samples``,
        ``completed``, ``incomplete``."""
        samples = self.table("samples", ["status"])
        completed = (samples["status"] == "completed").astype("int64")
        frame = (
            samples.assign(completed=completed, incomplete=1 - completed)
            .groupby(["run_id", "variant"], observed=True)
            .agg(
                cases=("case_id", "nunique"),
                samples=("case_id", "size"),
                completed=("completed", "sum"),
                incomplete=("incomplete", "sum"),
            )
            .reset_index()
        )
        repeats = {run_id: m.get("repeats") for run_id, m in self.manifests.items()}
        frame.insert(3, "repeats", frame["run_id"].astype(object).map(repeats))
        return frame

    def __repr__(self) -> str:
        paths = ", ".join(repr(str(p)) for p in self.paths.values())
        cases = sum(len(m.get("cases", [])) for m in self.manifests.values())
        return f"Run({paths}; {cases} cases, variants {self.variants})"

    def _repr_html_(self) -> str:
        esc = html.escape
        runs = "".join(
            f"<li><code>{esc(run_id)}</code> · {esc(str(m.get('status')))} · "
            f"started {esc(str(m.get('started_at')))}</li>"
            for run_id, m in self.manifests.items()
        )
        cases = self.cases
        splits = ", ".join(f"{esc(str(k))} {v}" for k, v in cases["split"].value_counts().items())
        checks = self.table("checks", ["outcome"])["check"].cat.categories
        check_list = ", ".join(f"<code>{esc(str(c))}</code>" for c in checks) or "none"
        table = self.summary().to_html(index=False, border=0)
        return (
            f"<div class='evalnb-run {display.NO_MATH}'>"
            f"<strong>evalnb run</strong><ul>{runs}</ul>"
            f"<p>{cases['case_id'].nunique()} cases ({splits}) · "
            f"variants {esc(', '.join(self.variants))} · checks {check_list}</p>"
            f"{table}</div>"
        )


def _ordered(values: Iterable[Any]) -> list[Any]:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def _same_rows(old: pd.DataFrame, new: pd.DataFrame, key: list[str]) -> bool:
    return len(old) == len(new) and all(_same_values(old[c], new[c]) for c in key)


def _same_values(old: pd.Series, new: pd.Series) -> bool:
    if isinstance(old.dtype, pd.CategoricalDtype) and isinstance(new.dtype, pd.CategoricalDtype):
        if list(old.cat.categories) == list(new.cat.categories):
            return bool(np.array_equal(old.cat.codes.to_numpy(), new.cat.codes.to_numpy()))
        return bool(old.astype(object).equals(new.astype(object)))
    return bool(old.equals(new))
