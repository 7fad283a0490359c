"""The explorer without widgets: the overview, the listed samples, search and verdicts.

:class:`ExploreState` holds what :func:`~evalnb.explorer.explore` shows and does what its
clicks ask; a script or a test drives it with no browser. The whole run stays in the
kernel: :meth:`ExploreState.grid_page` and :meth:`ExploreState.list_page` hand the widget
one page at a time (plain JSON values, model text clipped to :data:`TEXT_CHARS`), and
:attr:`ExploreState.selection` gives the listed samples, whole, as a frame.

The statistics are the analysis layer's own: each cell is a row of :func:`evalnb.rates`
(``by=["case_id", "variant"]``), the suite rate per variant is :func:`evalnb.suite_rate`
and the line on top is the sentence :func:`evalnb.compare` displays.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from evalnb._exceptions import ArgumentError, EvalnbError
from evalnb.analysis import compare, costs, rates, suite_rate
from evalnb.analysis._display import cautions_as_warnings
from evalnb.analysis._frames import Run, load
from evalnb.analysis._sequence import is_sequential
from evalnb.analysis._story import story
from evalnb.analysis._tally import (
    ALL,
    Outcome,
    check_outcome,
    check_outcomes,
    sample_positions,
)
from evalnb.explorer._diff import word_diff
from evalnb.explorer._grid import CELL_FIELDS, Grid, build_grid, sort_grid
from evalnb.explorer._search import SearchError, Texts, search
from evalnb.review._queue import SampleKey
from evalnb.store import KEY, VERDICTS
from evalnb.store._verdicts import VerdictStore, latest_verdicts

__all__ = ["TEXT_CHARS", "ExploreState", "GridFilters", "SampleFilters"]

#: Model text longer than this is clipped in the widget (the selection holds it whole).
TEXT_CHARS = 20_000
_NONE = -1
_SEARCHES_KEPT = 8
_OUTCOME_WORDS = {Outcome.FAIL: "fail", Outcome.PASS: "pass", Outcome.UNSCORED: "unscored"}
_LIGHT = ["status", "latency_ms", "prompt_tokens", "completion_tokens", "model"]
_TEXT = ["prompt", "answer", "error", "requested", "executed"]


@dataclass(frozen=True)
class GridFilters:
    """Which cases the overview lists: by tag, split and group (``""``: any), and with
    ``different`` only the cases whose variants disagree on the check."""

    tag: str = ""
    split: str = ""
    group: str = ""
    different: bool = False


@dataclass(frozen=True)
class SampleFilters:
    """Which samples a list keeps (all of them must hold). ``failing``: the check fails;
    ``incomplete``: the sample did not complete; ``flaky``: its cell's draws disagree;
    ``changed``: its case's rate differs between the two chosen variants; ``reviewed`` /
    ``unreviewed``: a human verdict exists or not; ``disagree``: the verdict differs from
    the check (pass against fail, or fail against pass)."""

    failing: bool = False
    incomplete: bool = False
    flaky: bool = False
    changed: bool = False
    reviewed: bool = False
    unreviewed: bool = False
    disagree: bool = False


class ExploreState:
    """What :func:`~evalnb.explorer.explore` shows of ``run``; its arguments are those of
    :func:`~evalnb.explorer.explore`."""

    def __init__(
        self,
        run: Run | str | os.PathLike[str],
        *,
        check: str = ALL,
        a: str | None = None,
        b: str | None = None,
        annotator: str | None = None,
        prices: Mapping[str, tuple[float, float]] | str | os.PathLike[str] | None = None,
        level: float = 0.95,
        page_size: int = 25,
        sample_page_size: int = 10,
    ):
        self.run = run if isinstance(run, Run) else load(run)
        for name, value in (("page_size", page_size), ("sample_page_size", sample_page_size)):
            if not isinstance(value, int) or not 1 <= value <= 500:
                raise ArgumentError(f"'{name}' must be an int from 1 to 500; got {value!r}")
        if annotator is not None and (not isinstance(annotator, str) or not annotator.strip()):
            raise ArgumentError(
                f"'annotator' must be a non-empty string or None; got {annotator!r}"
            )
        self.annotator = annotator.strip() if annotator else None
        self.level = level
        self.page_size = page_size
        self.sample_page_size = sample_page_size
        self._samples = self.run.table("samples", _LIGHT)
        present = set(self._samples["variant"].astype(str).unique())
        self.variants = [v for v in self.run.variants if v in present] or sorted(present)
        checks = self.run.table("checks", ["check"])["check"]
        self.checks = [ALL, *(str(c) for c in checks.cat.categories)]
        self.pair = _pair(self.variants, a, b)
        self._cases = self.run.cases.drop_duplicates("case_id", ignore_index=True)
        self._codes = {
            c: self._samples[c].cat.codes.to_numpy() for c in ("run_id", "case_id", "variant")
        }
        self._repeat = self._samples["repeat"].to_numpy()
        self._cost = _costs(self.run, self._samples, prices)
        self._texts: pd.DataFrame | None = None
        self._all_checks: pd.DataFrame | None = None
        self._search_texts: Texts | None = None
        self._check_arrays: tuple[np.ndarray, ...] | None = None
        self._searches: dict[tuple[str, bool], np.ndarray | str] = {}
        self._stores: dict[str, VerdictStore] = {}
        # Held while the run's text columns, check rows or search index are built, by
        # whichever comes first: a click, or :meth:`warm` on a worker thread.
        self._building = threading.RLock()
        self._tallying = threading.Lock()
        self._tallied: dict[str, tuple[np.ndarray, pd.DataFrame]] = {}
        self.grid_filters = GridFilters()
        self.sample_filters = SampleFilters()
        self.sort, self.descending = (
            ("absdiff", True) if len(self.variants) > 1 else ("case_id", False)
        )
        self.grid_at = 0
        self.list_at = 0
        self.mode = "none"
        self.focus: dict[str, Any] = {}
        self._listed = np.zeros(0, dtype=np.int64)
        self.message = ""
        self.cautions: list[str] = []
        self._load_verdicts()
        self.set_check(check)

    # -- the overview ---------------------------------------------------------------------

    def set_check(self, check: str) -> None:
        """Show ``check`` (a check name, or ``"all"``) in the grid and the samples."""
        if check not in self.checks:
            options = ", ".join(repr(c) for c in self.checks)
            raise ArgumentError(f"'check' must be one of {options}; got {check!r}")
        self.check = check
        self._outcome, self._counts = self._tally(check)
        self._rebuild()

    def _tally(self, check: str) -> tuple[np.ndarray, pd.DataFrame]:
        """Each sample's outcome of ``check``, and one tally of the run per (variant, case,
        group): the cells, the suite rate and the comparison all read it (the same counts
        each would tally from the Run). Kept per check: going back to a check is free, and
        :meth:`warm` tallies them all while the overview shows."""
        with self._tallying:
            if check not in self._tallied:
                outcome = check_outcomes(self.run, check)[0]
                with warnings.catch_warnings():
                    # the run's cases without a check are the notebook's rates() caution
                    warnings.simplefilter("ignore")
                    counts = rates(
                        self.run, by=["variant", "case_id", "group"], check=check, level=self.level
                    )
                self._tallied[check] = (outcome, pd.DataFrame(counts))
            return self._tallied[check]

    def set_pair(self, a: str, b: str) -> None:
        """Take the per-case difference and the verdict line for ``b`` against ``a``."""
        self.pair = _pair(self.variants, a, b)
        self._rebuild()

    def _rebuild(self) -> None:
        self.grid: Grid = build_grid(
            self._counts.drop(columns="group"),
            self._cases,
            self.variants,
            self.check,
            self._verdict_counts(),
            self.pair,
            self.level,
        )
        self.suite = self._suite()
        self.story, self.note = self._story()
        self._cell_flaky = self._per_sample_cell_flaky()
        self.grid_at = 0
        self._relist()

    def _suite(self) -> list[dict[str, Any]]:
        try:
            with cautions_as_warnings(), warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                suite = suite_rate(self._counts, by="variant", check=self.check, level=self.level)
        except EvalnbError as exc:
            return [{"variant": "", "text": f"no suite rate: {exc}"}]
        self.cautions = [str(w.message) for w in said]
        out = []
        for row in suite.to_dict("records"):
            out.append(
                {
                    "variant": str(row["variant"]),
                    "text": f"{_pct(row['estimate'])} ({row['level'] * 100:g}% CI "
                    f"{_pct(row['low'])} to {_pct(row['high'])}), {int(row['cases'])} cases, "
                    f"{int(row['samples'])} samples · {row['method']}",
                }
            )
        return out

    def _story(self) -> tuple[str, str]:
        a, b = self.pair
        if a == b:
            return "one variant: nothing to compare", ""
        try:
            with cautions_as_warnings(), warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                # A run stopped by its sequence is compared by that sequence, as compare()
                # does; any other from the tallies already made.
                data = self.run if is_sequential(self.run) else self._counts
                frame = compare(data, a=a, b=b, check=self.check, level=self.level)
        except EvalnbError as exc:
            return f"no comparison of {b} with {a}: {exc}", ""
        row = frame.to_dict("records")[0]
        told = story(row)  # compare's own sentence: its test named, its interval the test's
        return told.line(a, b, self.check), told.note

    def set_grid_filters(self, filters: GridFilters) -> None:
        """List only the cases ``filters`` keeps; back to the first page."""
        self.grid_filters = filters
        self.grid_at = 0

    def set_sort(self, sort: str, descending: bool) -> None:
        """Sort the overview by ``sort`` (see :data:`~evalnb.explorer._grid.SORTS`, or
        ``rate:<variant>``)."""
        sort_grid(self.grid.frame.head(0), sort, descending, self.variants)
        self.sort, self.descending, self.grid_at = sort, descending, 0

    def grid_rows(self) -> pd.DataFrame:
        """The overview's cases after the filters, sorted: every page of it."""
        frame, f = self.grid.frame, self.grid_filters
        keep = np.ones(len(frame), dtype=bool)
        if f.tag:
            keep &= np.array([f.tag in tags for tags in self._cases["tags"]], dtype=bool)
        if f.split:
            keep &= (frame["split"] == f.split).to_numpy()
        if f.group:
            keep &= (frame["group"] == f.group).to_numpy()
        if f.different:
            keep &= frame["different"].to_numpy()
        return sort_grid(frame[keep], self.sort, self.descending, self.variants)

    def grid_page(self) -> dict[str, Any]:
        """The shown page of the overview, as the widget draws it."""
        rows = self.grid_rows()
        pages = max(1, math.ceil(len(rows) / self.page_size))
        self.grid_at = min(self.grid_at, pages - 1)
        page = rows.iloc[self.grid_at * self.page_size : (self.grid_at + 1) * self.page_size]
        return {
            "rows": [self._grid_row(r) for r in page.to_dict("records")],
            "page": self.grid_at,
            "pages": pages,
            "total": len(rows),
            "cases": len(self.grid.frame),
        }

    def _grid_row(self, row: dict[str, Any]) -> dict[str, Any]:
        cells = []
        for v in self.variants:
            cell = {field: _plain(row[f"{field}:{v}"]) for field in CELL_FIELDS}
            cells.append({"variant": v, **cell})
        return {
            "case_id": row["case_id"],
            "group": row["group"],
            "split": row["split"],
            "tags": row["tags"],
            "diff": _plain(row["diff"]),
            "different": bool(row["different"]),
            "cells": cells,
        }

    # -- the listed samples ---------------------------------------------------------------

    def open_cell(self, case_id: str, variant: str) -> None:
        """List every sample (every repeat) of ``case_id`` under ``variant``."""
        self.mode, self.focus = "cell", {"case_id": case_id, "variant": variant}
        self.list_at = 0
        self._relist()

    def open_side(self, case_id: str) -> None:
        """List ``case_id`` side by side: each repeat, one column per variant."""
        self.mode, self.focus = "side", {"case_id": case_id}
        self.list_at = 0
        self._relist()

    def open_search(self, query: str, *, use_regex: bool = False) -> None:
        """List the samples whose prompt, answer or a check's detail match ``query`` (every
        word, case-insensitive; or a regular expression). A bad or too slow pattern lists
        nothing and sets :attr:`message` (one line)."""
        self.mode, self.focus = "search", {"query": query, "regex": bool(use_regex)}
        self.list_at = 0
        self._relist()

    def set_sample_filters(self, filters: SampleFilters) -> None:
        """Keep only the samples ``filters`` lets through, in every list."""
        self.sample_filters = filters
        self.list_at = 0
        self._relist()

    def _relist(self) -> None:
        self.message = ""
        mask = self._filter_mask()
        if self.mode == "cell":
            mask &= self._is_case(self.focus["case_id"])
            mask &= self._codes["variant"] == self._variant_code(self.focus["variant"])
        elif self.mode == "side":
            mask &= self._is_case(self.focus["case_id"])
        elif self.mode == "search":
            found = self._searched(self.focus["query"], self.focus["regex"])
            if isinstance(found, str):
                self.message = found
                mask[:] = False
            else:
                mask &= found
        else:
            mask[:] = False
        found = np.flatnonzero(mask)
        order = np.lexsort(
            (
                self._codes["variant"][found],
                self._repeat[found],
                self._codes["case_id"][found],
                self._codes["run_id"][found],
            )
        )
        self._listed = found[order]

    def _filter_mask(self) -> np.ndarray:
        f, size = self.sample_filters, len(self._samples)
        keep = np.ones(size, dtype=bool)
        verdict = self._verdict
        if f.failing:
            keep &= self._outcome == Outcome.FAIL
        if f.incomplete:
            keep &= (self._samples["status"] != "completed").to_numpy()
        if f.flaky:
            keep &= self._cell_flaky
        if f.changed:
            moved = self.grid.frame.loc[self.grid.frame["diff"].fillna(0) != 0, "case_id"]
            keep &= self._samples["case_id"].isin(set(moved)).to_numpy()
        if f.reviewed:
            keep &= verdict != _NONE
        if f.unreviewed:
            keep &= verdict == _NONE
        if f.disagree:
            human_pass, human_fail = verdict == 0, verdict == 1
            keep &= (human_pass & (self._outcome == Outcome.FAIL)) | (
                human_fail & (self._outcome == Outcome.PASS)
            )
        return keep

    def _is_case(self, case_id: str) -> np.ndarray:
        categories = self._samples["case_id"].cat.categories
        if case_id not in categories:
            raise ArgumentError(f"'case_id' must be a case of the run; got {case_id!r}")
        return np.asarray(self._codes["case_id"] == categories.get_loc(case_id))

    def _variant_code(self, variant: str) -> int:
        categories = self._samples["variant"].cat.categories
        if variant not in categories:
            options = ", ".join(repr(v) for v in self.variants)
            raise ArgumentError(f"'variant' must be one of {options}; got {variant!r}")
        return int(categories.get_loc(variant))

    def _per_sample_cell_flaky(self) -> np.ndarray:
        frame = self.grid.frame.set_index("case_id")
        flaky = np.zeros(len(self._samples), dtype=bool)
        case_names = self._samples["case_id"].cat.categories.astype(str)
        variant_names = self._samples["variant"].cat.categories.astype(str)
        for v_code, variant in enumerate(variant_names):
            if f"flaky:{variant}" not in frame.columns:
                continue
            per_case = frame[f"flaky:{variant}"].reindex(case_names).fillna(False).to_numpy(bool)
            at = self._codes["variant"] == v_code
            flaky[at] = per_case[self._codes["case_id"][at]]
        return flaky

    @property
    def listed(self) -> int:
        """How many samples the current list holds (every page)."""
        return len(self._listed)

    def list_page(self) -> dict[str, Any]:
        """The shown page of the list, as the widget draws it: samples, or with the
        side-by-side mode one row per repeat holding each variant's sample."""
        if self.mode == "side":
            return self._side_page()
        size = self.sample_page_size
        pages = max(1, math.ceil(len(self._listed) / size))
        self.list_at = min(self.list_at, pages - 1)
        shown = self._listed[self.list_at * size : (self.list_at + 1) * size]
        return {
            "mode": self.mode,
            "focus": dict(self.focus),
            "samples": [self.sample_view(int(p)) for p in shown],
            "page": self.list_at,
            "pages": pages,
            "total": len(self._listed),
        }

    def _side_page(self) -> dict[str, Any]:
        repeats = sorted({int(r) for r in self._repeat[self._listed]})
        size = self.sample_page_size
        pages = max(1, math.ceil(len(repeats) / size))
        self.list_at = min(self.list_at, pages - 1)
        shown = repeats[self.list_at * size : (self.list_at + 1) * size]
        rows = []
        for repeat in shown:
            at = self._listed[self._repeat[self._listed] == repeat]
            by_variant = {str(self._samples["variant"].iat[p]): int(p) for p in at}
            cells: list[dict[str, Any] | None] = []
            base: str | None = None
            for variant in self.variants:
                p = by_variant.get(variant)
                if p is None:
                    cells.append(None)
                    continue
                view = self.sample_view(p)
                answer = _text(self._text_frame()["answer"].iat[p])[:TEXT_CHARS]
                if base is None:
                    base = answer
                else:
                    view["diff"] = word_diff(base, answer)
                cells.append(view)
            rows.append({"repeat": repeat, "cells": cells})
        return {
            "mode": "side",
            "focus": dict(self.focus),
            "variants": list(self.variants),
            "rows": rows,
            "page": self.list_at,
            "pages": pages,
            "total": len(self._listed),
        }

    def sample_view(self, position: int) -> dict[str, Any]:
        """One sample as the widget shows it (JSON values; long text clipped)."""
        s, t = self._samples, self._text_frame()
        answer, prompt = _text(t["answer"].iat[position]), _text(t["prompt"].iat[position])
        checks = self._checks_of(position)
        code = int(self._verdict[position])
        cost = self._cost[position] if self._cost is not None else math.nan
        return {
            "position": position,
            "run_id": str(s["run_id"].iat[position]),
            "case_id": str(s["case_id"].iat[position]),
            "variant": str(s["variant"].iat[position]),
            "repeat": int(s["repeat"].iat[position]),
            "status": str(s["status"].iat[position]),
            "error": _text(t["error"].iat[position])[:TEXT_CHARS],
            "answer": answer[:TEXT_CHARS],
            "answer_more": max(0, len(answer) - TEXT_CHARS),
            "prompt": prompt[:TEXT_CHARS],
            "prompt_more": max(0, len(prompt) - TEXT_CHARS),
            "latency_ms": _plain(s["latency_ms"].iat[position]),
            "prompt_tokens": _plain(s["prompt_tokens"].iat[position]),
            "completion_tokens": _plain(s["completion_tokens"].iat[position]),
            "cost": _plain(cost),
            "outcome": _OUTCOME_WORDS.get(Outcome(self._outcome[position]), "none"),
            "checks": checks,
            "requested": _actions(t["requested"].iat[position], ran=False),
            "executed": _actions(t["executed"].iat[position], ran=True),
            "verdict": "" if code == _NONE else VERDICTS[code],
            "verdict_by": self._verdict_by.get(position, ""),
        }

    def warm(self) -> None:
        """Read the text columns, the check rows and the search index (words in lower case
        too), then tally every check, so the first list of samples, the first search and a
        change of check do not wait for them; the widget calls this on a worker thread once
        the overview shows."""
        texts = self._search_index()
        for name in ("prompt", "answer", "detail"):
            with self._building:
                texts.lower(name)
        for check in self.checks:  # then every check's tally, for a change of check
            self._tally(check)

    def _text_frame(self) -> pd.DataFrame:
        with self._building:
            if self._texts is None:
                self._texts = self.run.table("samples", _TEXT)
            return self._texts

    def _checks_frame(self) -> pd.DataFrame:
        with self._building:
            if self._all_checks is None:
                rows = check_outcomes(self.run, ALL)[1]
                self._all_checks = rows.sort_values("position", kind="stable")
            return self._all_checks

    def _search_index(self) -> Texts:
        with self._building:
            if self._search_texts is None:
                t, rows = self._text_frame(), self._checks_frame()
                self._search_texts = Texts(
                    prompt=_arrow(t["prompt"]),
                    answer=_arrow(t["answer"]),
                    detail=_arrow(rows["detail"]),
                    detail_sample=rows["position"].to_numpy(),
                    samples=len(self._samples),
                )
            return self._search_texts

    def _checks_of(self, position: int) -> list[list[Any]]:
        if self._check_arrays is None:
            rows = self._checks_frame()
            names = np.asarray(rows["check"].cat.categories.astype(str), dtype=object)
            self._check_arrays = (
                rows["position"].to_numpy(),
                names[rows["check"].cat.codes.to_numpy()],
                check_outcome(rows["outcome"]),
                rows["detail"].to_numpy(dtype=object),
            )
        at, names, outcomes, details = self._check_arrays
        start, end = np.searchsorted(at, position, "left"), np.searchsorted(at, position, "right")
        return [
            [names[i], _OUTCOME_WORDS[Outcome(outcomes[i])], _text(details[i])[:TEXT_CHARS]]
            for i in range(start, end)
        ]

    def _searched(self, query: str, use_regex: bool) -> np.ndarray | str:
        """The mask of samples ``query`` finds, or the one-line reason it found none;
        the last few searches are kept, so a filter change does not search again."""
        key = (query, use_regex)
        found = self._searches.pop(key, None)
        if found is None:
            texts = self._search_index()
            try:
                with self._building:  # the lower-cased fields may still be in the making
                    found = search(texts, query, use_regex=use_regex)
            except SearchError as exc:
                found = str(exc)
        self._searches[key] = found
        while len(self._searches) > _SEARCHES_KEPT:
            self._searches.pop(next(iter(self._searches)))
        return found

    @property
    def selection(self) -> pd.DataFrame:
        """The listed samples (every page, in the order shown) with their whole text:
        the key, ``status``, ``prompt``, ``answer``, ``error``, ``latency_ms``, the token
        counts, ``outcome`` (the chosen check: ``pass``, ``fail``, ``unscored``, ``none``)
        and ``verdict`` (the latest human verdict, ``""`` when none)."""
        at = self._listed
        s, t = self._samples.iloc[at], self._text_frame().iloc[at]
        frame = pd.DataFrame({c: s[c].astype(object).to_numpy() for c in KEY})
        frame["repeat"] = frame["repeat"].astype(int)
        for column in ("status", "latency_ms", "prompt_tokens", "completion_tokens"):
            frame[column] = s[column].to_numpy()
        for column in ("prompt", "answer", "error"):
            frame[column] = t[column].to_numpy()
        frame["outcome"] = [
            _OUTCOME_WORDS.get(Outcome(o), "none") for o in self._outcome[at].tolist()
        ]
        frame["verdict"] = ["" if v == _NONE else VERDICTS[v] for v in self._verdict[at].tolist()]
        return frame

    # -- verdicts -------------------------------------------------------------------------

    def _load_verdicts(self) -> None:
        """The latest human verdict per sample (this annotator's, or anyone's)."""
        self._verdict = np.full(len(self._samples), _NONE, dtype=np.int8)
        self._verdict_by: dict[int, str] = {}
        latest = latest_verdicts(list(self.run.paths.values()), annotator=self.annotator)
        if latest.empty:
            return
        latest = latest.sort_values("created_at", kind="stable").drop_duplicates(KEY, keep="last")
        for column in ("run_id", "case_id", "variant"):
            latest[column] = pd.Categorical(
                latest[column], categories=self._samples[column].cat.categories
            )
        at = sample_positions(self._samples, latest)
        found = at >= 0
        codes = latest["verdict"].map({v: i for i, v in enumerate(VERDICTS)}).to_numpy()
        self._verdict[at[found]] = codes[found]
        self._verdict_by.update(
            zip(at[found].tolist(), latest["annotator"].astype(str)[found], strict=True)
        )

    def _verdict_counts(self) -> pd.DataFrame:
        cases = len(self._samples["case_id"].cat.categories)
        variants = len(self._samples["variant"].cat.categories)
        cell = self._codes["case_id"].astype(np.int64) * variants + self._codes["variant"]
        counts = {
            name: np.bincount(cell[self._verdict == code], minlength=cases * variants)
            for name, code in (("human_pass", 0), ("human_fail", 1))
        }
        index = pd.MultiIndex.from_product(
            [
                self._samples["case_id"].cat.categories.astype(str),
                self._samples["variant"].cat.categories.astype(str),
            ],
            names=["case_id", "variant"],
        )
        return pd.DataFrame(counts, index=index).reset_index()

    def record(self, position: int, verdict: str, reason: str = "") -> dict[str, Any]:
        """Save ``verdict`` for the sample at ``position`` through the verdict store (one
        part, written before anything changes here); the grid and the list show it."""
        if self.annotator is None:
            raise ArgumentError(
                "'annotator' is needed to record a verdict: explore(run, annotator='your name')"
            )
        s = self._samples
        if not 0 <= position < len(s):
            raise ArgumentError(
                f"'position' must be a sample position of the run; got {position!r}"
            )
        run_id = str(s["run_id"].iat[position])
        store = self._stores.get(run_id)
        if store is None:
            store = VerdictStore(self.run.paths[run_id], run_id=run_id)
            self._stores[run_id] = store
        store.save(
            str(s["case_id"].iat[position]),
            str(s["variant"].iat[position]),
            int(s["repeat"].iat[position]),
            annotator=self.annotator,
            verdict=verdict,
            reason=reason,
        )
        self.heard(self.key(position), verdict)
        return self.sample_view(position)

    def heard(self, key: SampleKey | None = None, verdict: str | None = None) -> None:
        """This annotator saved ``verdict`` for the sample ``key`` (here or in a review
        panel; ``unreviewed`` takes one back): show it. Without ``key``, every verdict is
        read again from the run."""
        self.run.forget("verdicts")
        if key is None:
            self._load_verdicts()
        else:
            position = self._position(key)
            if position >= 0:
                code = VERDICTS.index(verdict) if verdict in VERDICTS else _NONE
                self._verdict[position] = code
                self._verdict_by[position] = self.annotator or ""
        counts = self._verdict_counts().set_index(["case_id", "variant"])
        frame = self.grid.frame
        for variant in self.variants:
            for name in ("human_pass", "human_fail"):
                per_case = counts[name].xs(variant, level="variant").reindex(frame["case_id"])
                frame[f"{name}:{variant}"] = per_case.fillna(0).astype(int).to_numpy()
        self._relist()

    def _position(self, key: SampleKey) -> int:
        one = pd.DataFrame([{column: key[column] for column in KEY}])  # type: ignore[literal-required]
        for column in ("run_id", "case_id", "variant"):
            one[column] = pd.Categorical(
                one[column], categories=self._samples[column].cat.categories
            )
        return int(sample_positions(self._samples, one)[0])

    def key(self, position: int) -> SampleKey:
        """The sample key at ``position``."""
        s = self._samples
        return {
            "run_id": str(s["run_id"].iat[position]),
            "case_id": str(s["case_id"].iat[position]),
            "variant": str(s["variant"].iat[position]),
            "repeat": int(s["repeat"].iat[position]),
        }

    def with_filters(self, **changes: Any) -> SampleFilters:
        """The sample filters with ``changes``."""
        return replace(self.sample_filters, **changes)


def _pair(variants: list[str], a: str | None, b: str | None) -> tuple[str, str]:
    for name, value in (("a", a), ("b", b)):
        if value is not None and value not in variants:
            options = ", ".join(repr(v) for v in variants)
            raise ArgumentError(f"'{name}' must be one of {options}; got {value!r}")
    a = a if a is not None else variants[0]
    others = [v for v in variants if v != a]
    b = b if b is not None else (others[0] if others else a)
    return a, b


def _costs(run: Run, samples: pd.DataFrame, prices: Any) -> np.ndarray | None:
    if prices is None:
        return None
    priced = costs(run, by=["run_id", "case_id", "variant", "repeat"], prices=prices)
    priced = pd.DataFrame(priced)
    for column in ("run_id", "case_id", "variant"):
        priced[column] = pd.Categorical(
            priced[column].astype(object), categories=samples[column].cat.categories
        )
    at = sample_positions(samples, priced)
    out = np.full(len(samples), np.nan)
    out[at[at >= 0]] = priced["cost"].to_numpy(dtype=float)[at >= 0]
    return out


def _actions(actions: Any, *, ran: bool) -> list[str]:
    if actions is None or (isinstance(actions, float) and math.isnan(actions)):
        return []
    out = []
    for action in list(actions):
        call = f"{action.get('tool')}({action.get('arguments')})"
        if ran:
            call += " → error" if action.get("error") else " → ok"
        out.append(call[:2000])
    return out


def _arrow(column: pd.Series) -> pa.Array:
    return pa.array(column.astype(object).to_numpy(), type=pa.large_string(), from_pandas=True)


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _pct(value: Any) -> str:
    return (
        "n/a" if value is None or not math.isfinite(float(value)) else f"{float(value) * 100:.1f}%"
    )


def _plain(value: Any) -> Any:
    """A JSON value: NaN and NA become None, numpy scalars Python ones."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
