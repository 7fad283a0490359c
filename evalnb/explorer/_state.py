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
import re
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import pandas as pd
import regex

from evalnb._exceptions import ArgumentError, EvalnbError
from evalnb.analysis import compare, costs, rates, suite_rate
from evalnb.analysis._display import cautions_as_warnings
from evalnb.analysis._frames import Run, load
from evalnb.analysis._stopped import holds_stopped
from evalnb.analysis._story import story
from evalnb.analysis._tally import ALL, OutcomeCode, sample_positions
from evalnb.explorer._diff import near_diff
from evalnb.explorer._grid import CELL_FIELDS, Grid, answers_differ, build_grid, sort_grid
from evalnb.review import SampleFilters, SampleIndex, SampleKey, SearchError
from evalnb.store import KEY

__all__ = ["FILTER_LABELS", "LIST_FILTERS", "TEXT_CHARS", "ExploreState", "GridFilters"]

#: Model text longer than this is clipped in the widget (the selection holds it whole).
TEXT_CHARS = 20_000
#: The first answer shown in a grid cell is clipped to this (its tooltip to TIP_CHARS).
LINE_CHARS = 160
TIP_CHARS = 2_000
_SEARCHES_KEPT = 8
_LIGHT = ["status", "latency_ms", "prompt_tokens", "completion_tokens", "model"]
#: The sample filters a list takes (its variant and case come from the cell opened).
LIST_FILTERS = tuple(f.name for f in fields(SampleFilters) if f.name not in ("variant", "case"))
#: What each switch filter is called on the page (and in :meth:`ExploreState.filter_names`).
FILTER_LABELS = {
    "different": "variants differ",
    "different_answers": "different answers",
    "failing": "failing",
    "incomplete": "incomplete",
    "flaky": "flaky",
    "changed": "changed between variants",
    "reviewed": "reviewed",
    "unreviewed": "unreviewed",
    "disagree": "verdict ≠ check",
}


@dataclass(frozen=True)
class GridFilters:
    """Which cases the overview lists: by tag, split and group (``""``: any); with
    ``different`` only the cases whose variants' rates of the check differ, and with
    ``different_answers`` only those whose variants' answers differ (some answer one variant
    gave, the other never gave: equal rates and different words are kept)."""

    tag: str = ""
    split: str = ""
    group: str = ""
    different: bool = False
    different_answers: bool = False


class ExploreState:
    """What :func:`~evalnb.explorer.explore` shows of ``run``; its arguments are those of
    :func:`~evalnb.explorer.explore`."""

    def __init__(
        self,
        run: Run | str | os.PathLike[str],
        annotator: str | None = None,
        *,
        check: str = ALL,
        a: str | None = None,
        b: str | None = None,
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
        #: The samples, their outcomes and verdicts, the filters and the search: the same
        #: index the review panel stands on.
        self.index = SampleIndex(self.run, _LIGHT, annotator=self.annotator)
        self._samples = self.index.samples
        present = set(self._samples["variant"].astype(str).unique())
        self.variants = [v for v in self.run.variants if v in present] or sorted(present)
        checks = self.run.table("checks", ["check"])["check"]
        self.checks = [ALL, *(str(c) for c in checks.cat.categories)]
        self.pair = _pair(self.variants, a, b)
        self._cases = self.run.cases.drop_duplicates("case_id", ignore_index=True)
        self._repeat = self.index.repeat
        self._cost = _costs(self.run, self._samples, prices)
        self._searches: dict[tuple[str, bool], np.ndarray | str] = {}
        self._tallying = threading.Lock()
        self._tallied: dict[str, tuple[np.ndarray, pd.DataFrame]] = {}
        self.grid_filters = GridFilters()
        self.sample_filters = SampleFilters()
        self.sort, self.descending = self._first_sort()
        self.grid_at = 0
        self.list_at = 0
        self.mode = "none"
        self.focus: dict[str, Any] = {}
        #: Side by side: ``"diff"`` marks each answer's words against the first variant's
        #: where the two are near; ``"plain"`` shows every answer as it is.
        self.side_view = "diff"
        #: The cases the last :meth:`goto` found (highlighted in the grid).
        self.hits: list[str] = []
        self._answers_differ: np.ndarray | None = None
        self._first: np.ndarray | None = None
        self._answer_array: np.ndarray | None = None
        self._listed = np.zeros(0, dtype=np.int64)
        self.message = ""
        self.cautions: list[str] = []
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
                outcome = self.index.outcome(check)
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
                # A run stopped by its sequence is compared by that sequence, and runs one of
                # which was stopped are refused, as compare() does; any other from the
                # tallies already made.
                data = self.run if holds_stopped(self.run) else self._counts
                frame = compare(data, a=a, b=b, check=self.check, level=self.level)
        except EvalnbError as exc:
            return f"no comparison of {b} with {a}: {exc}", ""
        row = frame.to_dict("records")[0]
        told = story(row)  # compare's own sentence: its test named, its interval the test's
        return told.line(a, b, self.check), told.note

    def _first_sort(self) -> tuple[str, bool]:
        return ("absdiff", True) if len(self.variants) > 1 else ("case_id", False)

    def set_grid_filters(self, filters: GridFilters) -> None:
        """List only the cases ``filters`` keeps; back to the first page."""
        self.grid_filters = filters
        self.grid_at = 0

    def reset(self) -> None:
        """Back to the overview as it opened: no list of samples, no filter, no search, no
        highlighted case, the first sort, the first page (the check and the pair stay)."""
        self.grid_filters, self.sample_filters = GridFilters(), SampleFilters()
        self.sort, self.descending = self._first_sort()
        self.mode, self.focus, self.hits = "none", {}, []
        self.grid_at = self.list_at = 0
        self.side_view = "diff"
        self._relist()

    def filter_names(self) -> list[str]:
        """The filters on, as the page names them (tag, split and group with their value)."""
        g = self.grid_filters
        named = [f"{name} {value}" for name, value in (("tag", g.tag), ("split", g.split),
                 ("group", g.group)) if value]  # fmt: skip
        for name, label in FILTER_LABELS.items():
            source = g if name in ("different", "different_answers") else self.sample_filters
            if getattr(source, name):
                named.append(label)
        return named

    def set_annotator(self, annotator: str) -> None:
        """Who gives verdicts from here on (the review button asks on the page)."""
        if not isinstance(annotator, str) or not annotator.strip():
            raise ArgumentError(f"'annotator' must be a non-empty string; got {annotator!r}")
        self.annotator = self.index.annotator = annotator.strip()
        self.index.load_verdicts()
        self._show_verdicts()

    def goto(self, target: str) -> None:
        """Jump the overview to page ``target`` (a number, from 1) or to the first case whose
        id holds ``target`` (case-insensitive; an exact id first), highlighting every case
        found on the page; nothing found is a one-line :attr:`message`."""
        text = str(target).strip()
        rows = self.grid_rows()
        pages = max(1, math.ceil(len(rows) / self.page_size))
        self.message, self.hits = "", []
        if not text:
            return
        if text.isdigit():
            page = int(text)
            if not 1 <= page <= pages:
                self.message = f"page must be from 1 to {pages}; got {page}"
                return
            self.grid_at = page - 1
            return
        ids = rows["case_id"].astype(str)
        exact = np.flatnonzero((ids == text).to_numpy())
        found = np.flatnonzero(ids.str.contains(text, case=False, regex=False).to_numpy())
        if not len(found):
            hidden = "" if len(rows) == len(self.grid.frame) else " among the cases listed"
            self.message = f"no case id holds {text!r}{hidden}"
            return
        first = int(exact[0]) if len(exact) else int(found[0])
        self.grid_at = first // self.page_size
        self.hits = ids.iloc[found].tolist()

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
        if f.different_answers:
            keep &= self.answers_differ()
        return sort_grid(frame[keep], self.sort, self.descending, self.variants)

    def answers_differ(self) -> np.ndarray:
        """Per case of the overview (in its order): whether the variants' answers differ,
        that is some completed answer (spaces at its ends aside) of one variant is not among
        another's, or one variant has a completed answer and another none. Made once (by
        :meth:`warm`, or at the first use) and kept."""
        if self._answers_differ is None:
            index = self.index
            differ = answers_differ(
                index.codes["case_id"],
                index.codes["variant"],
                index.search_texts().answer,
                ~index.incomplete,
                cases=len(self._samples["case_id"].cat.categories),
                variants=len(self._samples["variant"].cat.categories),
            )
            categories = self._samples["case_id"].cat.categories.astype(str)
            at = categories.get_indexer(self.grid.frame["case_id"])
            self._answers_differ = np.where(at >= 0, differ[np.clip(at, 0, None)], False)
        return self._answers_differ

    def _answers(self) -> np.ndarray:
        """Every sample's answer (read at the first call, then kept)."""
        if self._answer_array is None:
            self._answer_array = np.asarray(self.index.texts()["answer"].to_numpy(dtype=object))
        return self._answer_array

    def grid_page(self, *, answers: bool = True) -> dict[str, Any]:
        """The shown page of the overview, as the widget draws it; with ``answers``, each
        cell holds its first answer (the lowest repeat's: one line, and longer on hover),
        which reads the run's texts the first time."""
        rows = self.grid_rows()
        pages = max(1, math.ceil(len(rows) / self.page_size))
        self.grid_at = min(self.grid_at, pages - 1)
        page = rows.iloc[self.grid_at * self.page_size : (self.grid_at + 1) * self.page_size]
        firsts = self._first_answers(page["case_id"]) if answers else None
        hits = set(self.hits)
        return {
            "rows": [self._grid_row(r, firsts, hits) for r in page.to_dict("records")],
            "page": self.grid_at,
            "pages": pages,
            "total": len(rows),
            "cases": len(self.grid.frame),
            "answers": firsts is not None,
            "filters": self.filter_names(),
        }

    def _first_answers(self, case_ids: pd.Series) -> dict[tuple[str, str], str]:
        """The first answer (lowest repeat) of each shown case under each variant."""
        if self._first is None:
            variants = len(self._samples["variant"].cat.categories)
            cell = self.index.codes["case_id"].astype(np.int64) * variants + self.index.codes[
                "variant"
            ].astype(np.int64)
            order = np.lexsort((self._repeat, cell))
            cells, first = np.unique(cell[order], return_index=True)
            table = np.full(len(self._samples["case_id"].cat.categories) * variants, -1)
            table[cells] = order[first]
            self._first = table
        answers = self._answers()
        names = list(case_ids)
        codes = self._samples["case_id"].cat.categories.get_indexer(names)
        variant_names = self._samples["variant"].cat.categories
        columns = [(v, int(variant_names.get_loc(v))) for v in self.variants]
        out = {}
        for case, code in zip(names, codes.tolist(), strict=True):
            if code < 0:
                continue
            for v, column in columns:
                at = self._first[code * len(variant_names) + column]
                if at >= 0:
                    out[(case, v)] = _text(answers[at])
        return out

    def _grid_row(
        self,
        row: dict[str, Any],
        firsts: dict[tuple[str, str], str] | None = None,
        hits: set[str] | frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        cells = []
        for v in self.variants:
            cell = {field: _plain(row[f"{field}:{v}"]) for field in CELL_FIELDS}
            if firsts is not None:
                first = firsts.get((row["case_id"], v))
                if first is not None:
                    line = " ".join(first.split())
                    cell["answer"] = line[:LINE_CHARS] + ("…" if len(line) > LINE_CHARS else "")
                    cell["answer_tip"] = first[:TIP_CHARS] + ("…" if len(first) > TIP_CHARS else "")
            cells.append({"variant": v, **cell})
        return {
            "hit": row["case_id"] in hits,
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

    def set_side_view(self, view: str) -> None:
        """Side by side ``"diff"`` (words marked where two answers are near) or ``"plain"``."""
        if view not in ("diff", "plain"):
            raise ArgumentError(f"'view' must be 'diff' or 'plain'; got {view!r}")
        self.side_view = view

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
        index = self.index
        mask = index.mask(self.sample_filters, self.check, self.pair)
        if self.mode == "cell":
            mask &= index.codes["case_id"] == index.code("case_id", self.focus["case_id"])
            mask &= index.codes["variant"] == index.code("variant", self.focus["variant"])
        elif self.mode == "side":
            mask &= index.codes["case_id"] == index.code("case_id", self.focus["case_id"])
        elif self.mode == "search":
            found = self._searched(self.focus["query"], self.focus["regex"])
            if isinstance(found, str):
                self.message = found
                mask[:] = False
            else:
                mask &= found
        else:
            mask[:] = False
        self._listed = index.order(np.flatnonzero(mask), ("run_id", "case_id", "repeat", "variant"))

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
        samples = [self.sample_view(int(p)) for p in shown]
        if self.mode == "search":
            for sample in samples:
                for name in ("prompt", "answer"):
                    sample[f"{name}_hits"] = self._hits(sample[name])
        return {
            "mode": self.mode,
            "focus": dict(self.focus),
            "filters": self.filter_names(),
            "samples": samples,
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
                answer = _text(self.index.texts()["answer"].iat[p])[:TEXT_CHARS]
                if base is None:
                    base = answer
                elif self.side_view == "diff":
                    segments, ratio = near_diff(base, answer)
                    view["similarity"] = round(ratio, 3)
                    if segments is not None:
                        view["diff"] = segments
                cells.append(view)
            rows.append({"repeat": repeat, "cells": cells})
        return {
            "mode": "side",
            "focus": dict(self.focus),
            "view": self.side_view,
            "filters": self.filter_names(),
            "variants": list(self.variants),
            "rows": rows,
            "page": self.list_at,
            "pages": pages,
            "total": len(self._listed),
        }

    def sample_view(self, position: int) -> dict[str, Any]:
        """One sample as the widget shows it (JSON values; long text clipped)."""
        s, t = self._samples, self.index.texts()
        answer, prompt = _text(t["answer"].iat[position]), _text(t["prompt"].iat[position])
        checks = [
            [name, OutcomeCode(outcome).label, _text(detail)[:TEXT_CHARS]]
            for name, outcome, detail in self.index.checks_of(position)
        ]
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
            "outcome": OutcomeCode(self._outcome[position]).label,
            "checks": checks,
            "requested": _actions(t["requested"].iat[position], ran=False),
            "executed": _actions(t["executed"].iat[position], ran=True),
            "verdict": self.index.verdict_of(position) or "",
            "verdict_by": self.index.verdict_by(position),
        }

    def _hits(self, text: str) -> list[list[Any]]:
        """``text`` as segments ``[hit, part]``, the parts the search found marked."""
        query, use_regex = self.focus["query"], self.focus["regex"]
        spans: list[tuple[int, int]] = []
        if use_regex:
            try:
                pattern = regex.compile(query, regex.IGNORECASE)
                spans = [
                    m.span() for m in pattern.finditer(text, timeout=0.2) if m.end() > m.start()
                ]
            except (regex.error, TimeoutError):
                spans = []
        else:
            lower = text.lower()
            for word in {w for w in query.lower().split() if w}:
                spans += [m.span() for m in re.finditer(re.escape(word), lower)]
        spans.sort()
        out: list[list[Any]] = []
        at = 0
        for start, end in spans:
            if end <= at:
                continue
            start = max(start, at)
            if start > at:
                out.append([False, text[at:start]])
            out.append([True, text[start:end]])
            at = end
        if at < len(text):
            out.append([False, text[at:]])
        return out

    def warm(self) -> None:
        """Read the text columns, the check rows and the search index (words in lower case
        too), then tally every check and find the cases whose answers differ, so the first
        list of samples, the first search, a change of check and the "different answers"
        filter do not wait for them; the widget calls this on a worker thread once the
        overview shows."""
        self.index.warm()
        for check in self.checks:  # then every check's tally, for a change of check
            self._tally(check)
        self.answers_differ()  # and the cases whose answers differ, for that filter

    def _searched(self, query: str, use_regex: bool) -> np.ndarray | str:
        """The mask of samples ``query`` finds, or the one-line reason it found none;
        the last few searches are kept, so a filter change does not search again."""
        key = (query, use_regex)
        found = self._searches.pop(key, None)
        if found is None:
            try:
                found = self.index.search(query, use_regex=use_regex)
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
        s, t = self._samples.iloc[at], self.index.texts().iloc[at]
        frame = pd.DataFrame({c: s[c].astype(object).to_numpy() for c in KEY})
        frame["repeat"] = frame["repeat"].astype(int)
        for column in ("status", "latency_ms", "prompt_tokens", "completion_tokens"):
            frame[column] = s[column].to_numpy()
        for column in ("prompt", "answer", "error"):
            frame[column] = t[column].to_numpy()
        frame["outcome"] = [OutcomeCode(o).label for o in self._outcome[at].tolist()]
        frame["verdict"] = [self.index.verdict_of(p) or "" for p in at.tolist()]
        return frame

    # -- verdicts -------------------------------------------------------------------------

    def _verdict_counts(self) -> pd.DataFrame:
        cases = self._samples["case_id"].cat.categories.astype(str)
        variants = self._samples["variant"].cat.categories.astype(str)
        codes, verdict = self.index.codes, self.index.verdict
        cell = codes["case_id"].astype(np.int64) * len(variants) + codes["variant"]
        counts = {
            name: np.bincount(cell[verdict == code], minlength=len(cases) * len(variants))
            for name, code in (("human_pass", OutcomeCode.PASS), ("human_fail", OutcomeCode.FAIL))
        }
        index = pd.MultiIndex.from_product([cases, variants], names=["case_id", "variant"])
        return pd.DataFrame(counts, index=index).reset_index()

    def record(self, position: int, verdict: str, reason: str = "") -> dict[str, Any]:
        """Save ``verdict`` for the sample at ``position`` through the verdict store (one
        part, written before anything changes here); the grid and the list show it."""
        if self.annotator is None:
            raise ArgumentError(
                "'annotator' is needed to record a verdict: explore(run, annotator='your name')"
            )
        self.index.save(position, verdict, reason)
        self._show_verdicts()
        return self.sample_view(position)

    def heard(self, key: SampleKey | None = None, verdict: str | None = None) -> None:
        """This annotator saved ``verdict`` for the sample ``key`` (here or in a review
        panel; ``unreviewed`` takes one back): show it. Without ``key``, every verdict is
        read again from the run."""
        self.run.forget("verdicts")
        if key is None or verdict is None:
            self.index.load_verdicts()
        else:
            position = self.index.position(key)
            if position >= 0:
                self.index.note(position, verdict, by=self.annotator or "")
        self._show_verdicts()

    def _show_verdicts(self) -> None:
        """The grid's human counts and the list, after a verdict came or went."""
        counts = self._verdict_counts().set_index(["case_id", "variant"])
        frame = self.grid.frame
        for variant in self.variants:
            for name in ("human_pass", "human_fail"):
                per_case = counts[name].xs(variant, level="variant").reindex(frame["case_id"])
                frame[f"{name}:{variant}"] = per_case.fillna(0).astype(int).to_numpy()
        self._relist()

    def key(self, position: int) -> SampleKey:
        """The sample key at ``position``."""
        return self.index.key(position)

    def with_filters(self, **changes: Any) -> SampleFilters:
        """The sample filters with ``changes`` (names of :data:`LIST_FILTERS`)."""
        unknown = sorted(set(changes) - set(LIST_FILTERS))
        if unknown:
            options = ", ".join(repr(f) for f in LIST_FILTERS)
            raise ArgumentError(f"sample filters must be among {options}; got {unknown!r}")
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
