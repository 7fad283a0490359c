"""The explorer in the notebook: :func:`explore` and the :class:`Explorer` widget.

The page is an anywidget of evalnb's own (:file:`explore.js`, :file:`explore.css`, shipped
with the package: no build step, no network). It draws what the kernel puts in its synced
state (the overview's shown page, the list's shown page, the header) with
``textContent`` only, and sends each click or search to the kernel as a message; the kernel
answers by updating the state, then ``answered`` with the message's number. Below it sits
the review panel, opened at a sample on request.
"""

from __future__ import annotations

import contextlib
import html
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as widgets
import pandas as pd
import traitlets

from evalnb._exceptions import ArgumentError, EvalnbError
from evalnb.analysis._frames import Run
from evalnb.analysis._tally import ALL
from evalnb.explorer._preference import preference_lines
from evalnb.explorer._state import LIST_FILTERS, ExploreState, GridFilters
from evalnb.review import Annotator, SampleKey

__all__ = ["Explorer", "explore"]

_HERE = Path(__file__).parent
_GRID_FILTERS = ("tag", "split", "group", "different", "different_answers")
_SAMPLE_FILTERS = LIST_FILTERS


def explore(
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
) -> Explorer:
    """A widget to look at ``run`` (a Run from :func:`evalnb.load`, or a run directory).

    On top, the suite rate per variant and the paired comparison of ``b`` against ``a``
    (the line :func:`evalnb.compare` displays). Below, the overview: one row per case, one
    cell per variant with ``k/n`` of ``check`` (``"all"`` by default), the rate and its
    interval as a bar, the unscored and incomplete counts, ``flaky`` when the draws
    disagree and the human verdicts; a column of per-case differences (B - A). Sort by
    any column; filter by tag, split, group, only the cases whose variants' rates differ
    ("variants differ") or whose answers differ ("different answers", equal rates or not).
    Each cell shows its first answer on one line (whole on hover). "go to" jumps to a page
    number or to the cases whose id holds a text, highlighted. The filters on are named
    above the grid, with a button that clears them.

    Clicking a cell lists its samples (every repeat): status, answer, each check with its
    detail, latency, tokens (and cost, with ``prices`` as for :func:`evalnb.costs`), tool
    actions, verdict. ``⇆`` shows a case side by side, the answers of each variant in
    columns, plain or with a word-level diff against the first where two answers are near
    (at least half their words in common). Search takes words or a regular expression over
    prompts, answers and check details, its hits marked; the sample filters (failing,
    incomplete, flaky, changed, reviewed, unreviewed, verdict ≠ check) apply to every list.
    From a sample, ``review`` opens the review panel at it (without ``annotator`` the page
    asks for a name first), and with an annotator the verdict buttons save a verdict in
    place (the grid shows it at once). :attr:`Explorer.selection` gives the listed samples
    as a frame; :meth:`Explorer.reset` goes back to the overview as it opened.

    The kernel keeps the run; the page holds one page of cases (``page_size``) and one of
    samples (``sample_page_size``).

    The options shared with :func:`evalnb.annotate` have its names and order: ``run``,
    ``annotator`` (here optional), then by name ``check`` and ``a``, ``b``; the explorer's
    own follow. The samples, their outcomes, verdicts, filters and search are the same
    :class:`~evalnb.review.SampleIndex` the review panel reads.

    >>> explorer = evalnb.explore(run, a="v1", b="v2")                 # doctest: +SKIP
    >>> explorer                                                        # doctest: +SKIP
    >>> explorer.selection                                              # doctest: +SKIP
    """
    return Explorer(
        run,
        annotator,
        check=check,
        a=a,
        b=b,
        prices=prices,
        level=level,
        page_size=page_size,
        sample_page_size=sample_page_size,
    )


class ExplorerView(anywidget.AnyWidget):
    """The page of the explorer: draws the synced state, sends clicks as messages."""

    _esm = _HERE / "explore.js"
    _css = _HERE / "explore.css"
    header = traitlets.Dict().tag(sync=True)
    overview = traitlets.Dict().tag(sync=True)
    listing = traitlets.Dict().tag(sync=True)
    controls = traitlets.Dict().tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    answered = traitlets.Int(0).tag(sync=True)


class Explorer(widgets.VBox):
    """What :func:`explore` returns (an ipywidgets ``VBox``): the page (``view``, an
    anywidget) and, below it, the review panel when one is open (``panel``).

    It takes the arguments of :func:`explore`. A script or a test drives it as a person
    would: :meth:`open_cell`, :meth:`side_by_side`, :meth:`side_view`, :meth:`search`,
    :meth:`set_filters`, :meth:`goto`, :meth:`sort_by`, :meth:`record`, :meth:`review`,
    :meth:`set_annotator`, and :meth:`reset` back to the overview as it opened; ``state``
    is the :class:`~evalnb.explorer.ExploreState` it draws.
    """

    def __init__(
        self, run: Run | str | os.PathLike[str], annotator: str | None = None, **options: Any
    ):
        self.state = ExploreState(run, annotator, **options)
        self.view = ExplorerView()
        self.panel: Annotator | None = None
        self._panel_box = widgets.VBox()
        #: One sentence per pair of variants reviewers compared side by side (none: empty).
        self.preferences = widgets.HTML(preference_lines(self.state.run, self.state.level))
        super().__init__([self.view, self._panel_box, self.preferences])
        self.add_class("evalnb-explorer")
        self.view.on_msg(self._handle)
        # The first answers of the cells need the run's texts: the page asks for them once
        # it shows (a worker thread is reading them by then), so opening does not wait.
        self._draw_header()
        self._draw_grid(answers=False)
        self._draw_list()
        # The first list of samples and the first search would read the run's text columns
        # and lower-case them (0.3 s on 100,000 samples); a worker does it while the
        # person looks at the overview, and a click that comes sooner waits for it.
        threading.Thread(target=self._warm, name="evalnb-explore-warm", daemon=True).start()

    def _warm(self) -> None:
        # A worker thread has no one to tell: the click that needs the texts does the work
        # again and shows its one-line error there.
        with contextlib.suppress(Exception):
            self.state.warm()

    # -- what a person does -----------------------------------------------------------

    @property
    def selection(self) -> pd.DataFrame:
        """The samples listed (every page, in the order shown), whole: see
        :attr:`ExploreState.selection`."""
        return self.state.selection

    @property
    def overview(self) -> pd.DataFrame:
        """The overview's cases as the grid lists them (filtered, sorted, every page): one
        row per case with ``case_id``, ``group``, ``split``, ``tags``; per variant ``v``
        the cell's ``k:v``, ``n:v``, ``unscored:v``, ``incomplete:v``, ``estimate:v``,
        ``low:v``, ``high:v``, ``flaky:v``, ``human_pass:v``, ``human_fail:v``; then
        ``diff`` (B - A of the chosen pair), ``absdiff``, ``flaky`` (any variant),
        ``incomplete`` (all variants) and ``different`` (the variants' rates differ)."""
        return self.state.grid_rows().reset_index(drop=True)

    def open_cell(self, case_id: str, variant: str) -> None:
        """List the samples of ``case_id`` under ``variant`` (every repeat)."""
        self.state.open_cell(case_id, variant)
        self._draw_list()

    def side_by_side(self, case_id: str) -> None:
        """Show ``case_id``'s answers side by side, one column per variant."""
        self.state.open_side(case_id)
        self._draw_list()

    def search(self, query: str, *, regex: bool = False) -> None:
        """List the samples matching ``query`` (words, or a regular expression)."""
        self.state.open_search(query, use_regex=regex)
        self._draw_list()

    def set_filters(self, **filters: Any) -> None:
        """Change filters by name: the overview's ``tag``, ``split``, ``group``,
        ``different`` (the rates differ), ``different_answers`` (the answers differ); the
        samples' ``failing``, ``incomplete``, ``flaky``, ``changed``, ``reviewed``,
        ``unreviewed``, ``disagree``. The page names the filters on above the grid."""
        unknown = sorted(set(filters) - {*_GRID_FILTERS, *_SAMPLE_FILTERS})
        if unknown:
            options = ", ".join(repr(f) for f in (*_GRID_FILTERS, *_SAMPLE_FILTERS))
            raise ArgumentError(f"filters must be among {options}; got {unknown!r}")
        grid = {k: v for k, v in filters.items() if k in _GRID_FILTERS}
        samples = {k: v for k, v in filters.items() if k in _SAMPLE_FILTERS}
        if grid:
            current = self.state.grid_filters.__dict__
            self.state.set_grid_filters(GridFilters(**{**current, **grid}))
        if samples:
            self.state.set_sample_filters(self.state.with_filters(**samples))
        self._draw_all()

    def reset(self) -> None:
        """Back to the overview as it opened: no samples listed, no filter, no search, the
        first sort and page (a notebook cell that drove the explorer ends with this)."""
        self.state.reset()
        self._draw_all()

    def goto(self, target: str | int) -> None:
        """Show page ``target`` (a number, from 1) of the overview, or the page of the first
        case whose id holds ``target``, the cases found highlighted."""
        self.state.goto(str(target))
        self._draw_grid()
        self.view.message = self.state.message

    def side_view(self, view: str) -> None:
        """Side by side as ``"diff"`` (words marked where answers are near) or ``"plain"``."""
        self.state.set_side_view(view)
        self._draw_list()

    def sort_by(self, column: str, *, descending: bool = False) -> None:
        """Sort the overview by ``column`` (``case_id``, ``diff``, ``absdiff``, ``flaky``,
        ``incomplete``, ``group``, ``split`` or ``rate:<variant>``)."""
        self.state.set_sort(column, descending)
        self._draw_grid()

    def set_check(self, check: str) -> None:
        """Show ``check`` (a check name, or ``"all"``)."""
        self.state.set_check(check)
        self._draw_all()

    def compare_pair(self, a: str, b: str) -> None:
        """Take the differences and the verdict line for ``b`` against ``a``."""
        self.state.set_pair(a, b)
        self._draw_all()

    def record(self, position: int, verdict: str) -> None:
        """Save ``verdict`` for the listed sample at ``position`` (the sample's position
        in the run, as each listed sample gives it)."""
        self.state.record(position, verdict)
        self._draw_all()

    def review(self, position: int, annotator: str | None = None) -> Annotator:
        """Open the review panel below, at the sample at ``position``, for ``annotator``
        (given here, to :func:`explore`, or typed on the page when the review button
        asks)."""
        if annotator is not None:
            self.set_annotator(annotator)
        state, annotator = self.state, self.state.annotator
        if annotator is None:
            raise ArgumentError(
                "'annotator' is needed to review: type your name, or "
                "explore(run, annotator='your name')"
            )
        # the reviewer picked this sample: browsing, so its verdict describes it alone
        panel = Annotator(
            state.run,
            annotator,
            check=state.check,
            start=state.key(position),
            advance=False,
            design="queue",
        )
        panel.state.on_save.append(self._heard)
        self.panel = panel
        self._panel_box.children = [panel]
        return panel

    def set_annotator(self, annotator: str) -> None:
        """Give verdicts as ``annotator`` from here on (the verdict buttons show)."""
        self.state.set_annotator(annotator)
        self._draw_all()

    def _heard(self, key: SampleKey, verdict: str) -> None:
        self.state.heard(key, verdict)
        self._draw_all()

    # -- messages from the page -------------------------------------------------------

    def _handle(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        seq = content.get("seq")
        try:
            self.view.message = ""
            self._act(content)
        except (EvalnbError, ValueError, TypeError, KeyError) as exc:
            self.view.message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        finally:
            if isinstance(seq, int):
                self.view.answered = seq

    def _act(self, content: dict[str, Any]) -> None:
        action = content.get("action")
        if action == "cell":
            self.open_cell(str(content["case_id"]), str(content["variant"]))
        elif action == "side":
            self.side_by_side(str(content["case_id"]))
        elif action == "search":
            self.search(str(content.get("query", "")), regex=bool(content.get("regex")))
        elif action == "filters":
            values = content.get("filters") or {}
            self.set_filters(**{k: values[k] for k in values})
        elif action == "sort":
            self.sort_by(str(content["sort"]), descending=bool(content.get("descending")))
        elif action == "check":
            self.set_check(str(content["check"]))
        elif action == "pair":
            self.compare_pair(str(content["a"]), str(content["b"]))
        elif action == "grid_page":
            self.state.grid_at = max(0, int(content["page"]))
            self._draw_grid()
        elif action == "list_page":
            self.state.list_at = max(0, int(content["page"]))
            self._draw_list()
        elif action == "verdict":
            self.record(int(content["position"]), str(content["verdict"]))
        elif action == "review":
            name = content.get("annotator")
            self.review(int(content["position"]), str(name) if name else None)
        elif action == "goto":
            self.goto(str(content.get("target", "")))
        elif action == "reset":
            self.reset()
        elif action == "side_view":
            self.side_view(str(content["view"]))
        else:
            raise ArgumentError(f"unknown action {action!r}")

    # -- drawing ----------------------------------------------------------------------

    def _draw_all(self) -> None:
        self._draw_header()
        self._draw_grid()
        self._draw_list()

    def _draw_header(self) -> None:
        state, frame = self.state, self.state.grid.frame
        self.view.header = {
            "check": state.check,
            "checks": state.checks,
            "variants": state.variants,
            "a": state.pair[0],
            "b": state.pair[1],
            "suite": state.suite,
            "story": state.story,
            "note": state.note,
            "cautions": state.cautions,
            "method": f"{state.grid.method} intervals at {state.level * 100:g}% per case",
            "annotator": state.annotator or "",
            "tags": sorted({str(t) for tags in state._cases["tags"] for t in tags}),
            "splits": sorted(set(frame["split"])),
            "groups": sorted(set(frame["group"]))
            if frame["group"].ne(frame["case_id"]).any()
            else [],
        }

    def _draw_grid(self, *, answers: bool = True) -> None:
        state = self.state
        self.view.overview = state.grid_page(answers=answers)
        self.view.controls = {
            "sort": state.sort,
            "descending": state.descending,
            "grid": dict(state.grid_filters.__dict__),
            "samples": dict(state.sample_filters.__dict__),
            "named": state.filter_names(),
        }

    def _draw_list(self) -> None:
        listing = self.state.list_page()
        self.view.listing = listing
        if self.state.message:
            self.view.message = self.state.message

    # -- without a live kernel --------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        bundle = dict(bundle)
        bundle["text/html"] = static_html(self.state)
        return bundle


def static_html(state: ExploreState, rows: int = 50) -> str:
    """The overview as plain, escaped HTML (what a saved notebook or ``make docs`` shows
    where the widget cannot run): the verdict line, the suite rates, and the first
    ``rows`` cases of the grid as sorted."""
    esc = html.escape
    head = "".join(f"<th>{esc(v)}</th>" for v in state.variants)
    diff_head = f"<th>{esc(state.pair[1])} − {esc(state.pair[0])}</th>"
    lines = []
    frame = state.grid_rows().head(rows)
    for row in frame.to_dict("records"):
        cells = "".join(f"<td>{_cell_text(row, v)}</td>" for v in state.variants)
        diff = row["diff"]
        shown = "" if pd.isna(diff) else f"{diff * 100:+.1f} pp"
        lines.append(f"<tr><td>{esc(str(row['case_id']))}</td>{cells}<td>{shown}</td></tr>")
    suite = "".join(f"<div>{esc(s['variant'])}: {esc(s['text'])}</div>" for s in state.suite)
    more = len(state.grid_rows()) - len(frame)
    tail = f"<div>… and {more} more cases (open the notebook to explore)</div>" if more > 0 else ""
    return (
        "<div class='evalnb-explore-static tex2jax_ignore mathjax_ignore'>"
        f"<div><b>{esc(state.story)}</b></div>{suite}"
        f"<div>check <code>{esc(state.check)}</code> · k/n per case, {esc(state.grid.method)} "
        f"interval</div><table><tr><th>case</th>{head}{diff_head}</tr>{''.join(lines)}</table>"
        f"{tail}</div>"
    )


def _cell_text(row: Mapping[str, Any], variant: str) -> str:
    k, n = row[f"k:{variant}"], row[f"n:{variant}"]
    if not n:
        return "no scored sample"
    low, high = row[f"low:{variant}"], row[f"high:{variant}"]
    text = f"{k}/{n} · {k / n * 100:.0f}% [{low * 100:.0f}–{high * 100:.0f}]"
    extra = [
        f"{row[f'{name}:{variant}']} {label}"
        for name, label in (("incomplete", "incomplete"), ("unscored", "unscored"))
        if row[f"{name}:{variant}"]
    ]
    if row[f"flaky:{variant}"]:
        extra.append("flaky")
    return html.escape(" · ".join([text, *extra]))
