"""The review panel: one sample at a time, a verdict and a reason, saved at each click.

:func:`annotate` shows a sample as the reviewer needs it (case, variant, repeat; the
prompt as sent, the answer and the tool actions requested and executed, in a box that
scrolls; beside it the case's review instruction and the check outcomes, which never
scroll away; this reviewer's earlier verdict) with buttons for
``pass``, ``fail`` and ``needs_review``, ``skip`` and ``undo``. The panel only draws a
:class:`~evalnb.review._state.ReviewState` and forwards each click and key to it; the
state saves every verdict before the panel moves on, and a new panel resumes at the
first sample not yet reviewed. Keys come through :class:`~evalnb.review._keys.KeyCapture`
(anywidget), in order, whenever the panel has the focus or the pointer. The HTML, with
every model-written string escaped, comes from :mod:`evalnb.review._render`; dropdown
labels are set as text by ipywidgets itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from evalnb._exceptions import ArgumentError
from evalnb.analysis._frames import Run, load
from evalnb.analysis._tally import ALL
from evalnb.review import _render as render
from evalnb.review._assign import assigned_samples, describe
from evalnb.review._design import ReviewDesign
from evalnb.review._index import SampleFilters, SampleKey
from evalnb.review._keys import KeyCapture
from evalnb.review._prefer_panel import PreferencePanel
from evalnb.review._state import LIST_SORTS, ReviewState

__all__ = ["KEYS", "Annotator", "annotate"]

# verdict -> (label, button style, icon) of its button
_VERDICT_BUTTONS = {
    "pass": ("Pass", "success", "check"),
    "fail": ("Fail", "danger", "times"),
    "needs_review": ("Needs review", "warning", "question"),
}

# The panel's keys: key -> (what the help calls it, what it does).
_SHORTCUTS: dict[str, tuple[str, Callable[[Annotator], None]]] = {
    "p": ("pass", lambda panel: panel.record("pass")),
    "f": ("fail", lambda panel: panel.record("fail")),
    "r": ("needs review", lambda panel: panel.record("needs_review")),
    "s": ("skip", lambda panel: panel.skip()),
    "z": ("undo", lambda panel: panel.undo()),
    "j": ("next", lambda panel: panel.next()),
    "k": ("previous", lambda panel: panel.previous()),
    "u": ("unreviewed", lambda panel: panel.next_unreviewed()),
    "e": ("reason box", lambda panel: panel.focus_reason()),
    "l": ("sample list", lambda panel: panel.toggle_list()),
}
# The keys the page handles itself (the focus is the browser's, and keys typed after
# them must reach the box at once): what KeyCapture does with each.
_IN_PAGE = {"e": "reason", "l": "list"}
# Keys that do what a letter does, and keys that do nothing and say nothing.
_SAME = {"ArrowRight": "j", "ArrowLeft": "k"}
_QUIET = {"Escape", "Enter", " "}

#: What each key of the panel does.
KEYS = {key: label for key, (label, _) in _SHORTCUTS.items()}
_HINT = "keys: " + " · ".join(f"{k} {label}" for k, label in KEYS.items()) + " · Esc leaves a box"


def annotate(
    run: Run | str | os.PathLike[str],
    annotator: str,
    *,
    where: Any = None,
    check: str = ALL,
    a: str | None = None,
    b: str | None = None,
    start: SampleKey | None = None,
    advance: bool = True,
    design: str | ReviewDesign | None = None,
    seed: int = 0,
    by: str = "case",
    allocation: str = "proportional",
    floor: float = 0.1,
    compare: tuple[str, str] | None = None,
    ask: str | None = None,
) -> Annotator | PreferencePanel:
    """A panel in which ``annotator`` gives verdicts on the samples of ``run``.

    The options shared with :func:`evalnb.explore` have its names and order: ``run``,
    ``annotator``, then by name ``check`` and ``a``, ``b``; the panel's own follow.

    ``run`` is a Run (from :func:`evalnb.load`) or a run directory. ``where`` narrows
    the samples once: a :meth:`pandas.DataFrame.query` string over the samples columns
    (``"status != 'completed'"``), a function of the samples frame returning a boolean
    mask, a boolean Series over ``run.samples``, or a frame of sample keys (such as
    ``calibrate(...).disagreements``). ``check`` is the check (name, type or ``"all"``,
    the default) that the "failing" and "verdict ≠ check" filters read. A verdict
    also moves to the next sample (``advance=False``, or the panel's checkbox, stays).

    ``a="v1", b="v2"`` reviews a comparison: only those two variants' samples, in
    the order case, repeat, ``v1`` then ``v2``, each shown beside the other variant's
    sample of the same case and repeat (``v1`` on the left) with both answers and checks;
    a verdict is for the outlined one. ``start`` (a sample key: ``run_id``, ``case_id``,
    ``variant``, ``repeat``) opens the panel at that sample instead of the first one not
    yet reviewed; :func:`evalnb.explore` opens the panel this way. The "Sample list"
    button opens a searchable, sortable list of the selected samples (case, variant,
    status, checks, verdict); choosing one jumps to it.

    When :func:`evalnb.assign_review` has dealt the run's samples to several reviewers and
    ``where`` is not given, ``annotator`` reviews only their own samples (their share and
    the overlap), and the progress counts them: "12 of 60 of your samples reviewed".

    Keys (:data:`KEYS`) work while the pointer is over the panel, or after a click in
    it: ``p`` pass, ``f`` fail, ``r`` needs review, ``s`` skip, ``z`` undo (a first
    verdict too: the sample is unreviewed again), ``j``/``k`` next/previous, ``u`` next
    unreviewed, ``e`` to type in the reason box, ``l`` to open or close the sample list
    (its search box takes the keys). Escape leaves the reason box or the list.

    ``design`` says which samples come first, so that the verdicts so far are a
    probability sample of the run (:mod:`evalnb.review._design`): ``"random"`` (the
    default; a random order from ``seed``), ``"stratified"`` (strata by ``by``: ``"case"``
    or a check's outcome, shared out by ``allocation``: ``"proportional"`` or
    ``"equal"``), ``"active"`` (what the ``check`` is unsure of first, no sample's size
    below ``floor`` times the uniform one) or ``"queue"`` (run, case, variant, repeat: for
    browsing; such verdicts describe the reviewed samples only). A side-by-side review
    walks the pairs in queue order. Each verdict is saved with its design, seed and
    inclusion probability, and :func:`evalnb.ppi_rate`, :func:`evalnb.calibrate` and
    :func:`evalnb.rates` weight by them. The header shows the human pass rate so far with
    its interval and how many more labels a narrower one needs (:func:`evalnb.review_plan`).

    ``compare=("v1", "v2"), ask="preference"`` (``ask`` defaults to it with ``compare``) is a
    pairwise review instead (:class:`~evalnb.review._prefer_panel.PreferencePanel`): both
    variants' answers to one case and repeat side by side, their sides drawn at random per
    pair from ``seed`` and the variants hidden, with keys ``1`` (answer 1, the left one,
    better), ``2`` (answer 2 better), ``t`` tie, ``x`` both bad, ``z`` undo, ``j``/``k``,
    ``u`` next undecided, ``e`` reason; each choice is saved at once as one part
    (:class:`evalnb.store.PreferenceStore`), and :func:`evalnb.preferences` analyses them.
    The pairs come in a seeded random order; ``design="queue"`` keeps case order.

    >>> panel = evalnb.annotate(run, annotator="ana")                 # doctest: +SKIP
    >>> panel                                                          # doctest: +SKIP
    >>> evalnb.annotate(run, "ana", compare=("v1", "v2"), ask="preference")  # doctest: +SKIP
    """
    if compare is not None or ask is not None:
        pairwise = {"design": design or "random", "seed": seed, "advance": advance}
        unused = {"where": where, "start": start}
        return _pairwise(run, annotator, compare, ask, a=a, b=b, unused=unused, **pairwise)
    options = {"check": check, "a": a, "b": b, "start": start, "advance": advance}
    designed = {"design": design, "seed": seed, "by": by, "allocation": allocation}
    return _own_samples(run, annotator, where, floor=floor, **options, **designed)


def _own_samples(
    run: Run | str | os.PathLike[str], annotator: str, where: Any, **options: Any
) -> Annotator:
    """The verdict panel; a reviewer named in the run's assignment (:func:`assign_review`)
    walks their own samples when no ``where`` narrows the review."""
    run = run if isinstance(run, Run) else load(run)
    mine = (
        assigned_samples(run, annotator) if where is None and isinstance(annotator, str) else None
    )
    panel = Annotator(run, annotator, where=where if mine is None else mine, **options)
    if mine is not None:
        panel.assignment = describe(run)
        panel.state.narrowed = f"{annotator}'s share of the assignment"
        panel._render_progress()
        panel._render_live()
    return panel


#: What a review asks of each item: a verdict on one sample, or which of two answers is better.
ASKS = ("verdict", "preference")


def _pairwise(
    run: Run | str | os.PathLike[str],
    annotator: str,
    compare: Any,
    ask: str | None,
    **options: Any,
) -> PreferencePanel:
    """The pairwise panel for ``annotate(..., compare=, ask="preference")``."""
    ask = "preference" if ask is None else ask
    if ask not in ASKS:
        raise ArgumentError(f"'ask' must be one of {', '.join(map(repr, ASKS))}; got {ask!r}")
    if ask == "verdict" or compare is None:
        raise ArgumentError(
            "'ask=\"preference\"' needs compare=(a, b), the two variants; a verdict review of "
            f"two variants side by side takes a= and b=; got compare={compare!r}, ask={ask!r}"
        )
    given = [name for name, value in options.pop("unused").items() if value is not None]
    if given:
        raise ArgumentError(
            f"a preference review (compare=) walks every pair of the two variants; drop "
            f"{' and '.join(f'{name}=' for name in given)}"
        )
    if options.pop("a") is not None or options.pop("b") is not None:
        raise ArgumentError(
            "'compare' names the two variants of a preference review; drop a= and b="
        )
    return PreferencePanel(run, annotator, compare=compare, **options)


class Annotator(widgets.VBox):
    """The panel :func:`annotate` returns (an ipywidgets ``VBox``); it takes the arguments
    of :func:`annotate`.

    Its controls are attributes, so a script or a test can drive it like a person:
    ``pass_button``, ``fail_button``, ``needs_review_button``, ``reason``,
    ``previous_button``, ``next_button``, ``next_unreviewed_button``, ``skip_button``,
    ``undo_button``, ``advance_box``, the filters ``variant_filter``, ``case_filter``,
    ``failing_only``, ``unreviewed_only``, ``disagreements_only``, the sample list
    ``list_button`` (shows it), ``list_search`` (every word must match), ``list_sort`` and
    ``sample_list`` (choosing an entry jumps to it), the sample view ``body`` (with the
    review instruction and the checks beside what scrolls), and ``key_capture`` (the
    :class:`~evalnb.review._keys.KeyCapture`; :meth:`press` does what a key does).
    ``state`` is the :class:`~evalnb.review._state.ReviewState` it draws.
    """

    #: The assignment this reviewer's samples come from (:func:`evalnb.assign_review`: its
    #: reviewers, overlap, shares and seed); empty when the review is of every sample.
    assignment: dict[str, Any] = {}

    def __init__(self, run: Run | str | os.PathLike[str], annotator: str, **options: Any):
        self.state = ReviewState(run, annotator, **options)
        self._listing = False
        self._rendering = False
        self._late_reason: str | None = None
        self.run = self.state.run
        self.annotator = self.state.annotator
        self._build()
        self._render()
        self._render_live()
        self.state.on_change.append(self._on_peer)

    # -- what the state knows -------------------------------------------------------------

    @property
    def advance(self) -> bool:
        """Whether a verdict also moves to the next sample."""
        return self.state.advance

    @advance.setter
    def advance(self, value: bool) -> None:
        self.state.advance = value
        self.advance_box.value = value

    @property
    def count(self) -> int:
        """Samples in the current selection."""
        return self.state.count

    @property
    def reviewed(self) -> int:
        """Samples in the current selection this annotator has given a verdict."""
        return self.state.reviewed

    @property
    def at(self) -> int:
        """Place (0-based) of the shown sample in the current selection."""
        return self.state.at

    @property
    def current_position(self) -> int | None:
        """Position of the shown sample in the panel's sorted samples (None when none)."""
        return self.state.position

    @property
    def current(self) -> SampleKey | None:
        """The key of the shown sample (``run_id``, ``case_id``, ``variant``, ``repeat``)."""
        return self.state.current

    # -- actions --------------------------------------------------------------------------

    def go(self, at: int) -> None:
        """Show the sample at place ``at`` (0-based) of the current selection."""
        self.state.go(at)
        self._render()

    def next(self) -> None:
        """Show the next sample of the selection."""
        if self.state.next():
            self._render()

    def previous(self) -> None:
        """Show the previous sample of the selection."""
        if self.state.previous():
            self._render()

    def skip(self) -> None:
        """Leave the shown sample without a verdict; show the next one not reviewed."""
        if self.state.skip():
            self._render()
        else:
            self._say("No other sample in this selection is without a verdict.")

    def undo(self) -> None:
        """Take back the last verdict given in this panel and show its sample again."""
        try:
            undone = self.state.undo()
        except OSError as exc:
            self._say(f"NOT SAVED: {exc}", error=True)
            return
        if undone is None:
            self._say("Nothing to undo in this panel.")
            return
        self._render_live()
        key = undone.key
        label = render.esc(f"{key['case_id']} · {key['variant']} · repeat {key['repeat']}")
        taken = render.esc(undone.undone.replace("_", " "))
        restored = "unreviewed" if undone.restored is None else undone.restored
        kept = "; the history keeps both" if undone.restored is None else ""
        self._render(
            f"Undone: {label} is <b>{render.esc(restored.replace('_', ' '))}</b> again "
            f"(was {taken}{kept})."
        )

    def press(self, key: str) -> None:
        """Do what ``key`` does in the panel (see :data:`KEYS`)."""
        key = _SAME.get(key, key)
        if key in _QUIET:
            return
        action = _SHORTCUTS.get(key.lower())
        if action is None:
            keys = ", ".join(f"{k} {label}" for k, label in KEYS.items())
            self._say(f"Key {render.esc(key)} does nothing here; keys: {render.esc(keys)}")
            return
        action[1](self)

    def focus_reason(self) -> None:
        """Put the keyboard focus in the reason box (in the browser that shows the panel)."""
        self.reason.focus()

    def toggle_list(self) -> None:
        """Open the sample list, or close it when it is open."""
        self.list_button.value = not self.list_button.value

    def sync_reason(self, text: str) -> None:
        """Take ``text`` as the reason box's content now: the front end sends it with each
        key and click, ahead of the box's own update (which ipywidgets may hold back while
        the kernel is busy), so a key right after typing never loses the last characters."""
        if text != self.reason.value:
            self.reason.value = text
            self._late_reason = text

    def next_unreviewed(self) -> None:
        """Show the next sample without a verdict, wrapping round to the start."""
        if self.state.next_unreviewed():
            self._render()
        else:
            self._say("Every sample in this selection has a verdict from you.")

    def record(self, verdict: str) -> None:
        """Save ``verdict`` (``pass``, ``fail`` or ``needs_review``) with the reason typed
        for the shown sample: one new verdicts part, written before anything else; with
        ``advance`` the next sample is shown."""
        at = self.state.at
        try:
            key = self.state.record(verdict)
        except OSError as exc:
            self._say(f"NOT SAVED: {exc}", error=True)
            return
        if key is None:
            self._say("No sample is shown: change the filters.")
            return
        self._render_live()  # before the header: a new header means a new number too
        label = f"{key['case_id']} · {key['variant']} · repeat {key['repeat']}"
        # Named by its sample: after advancing it says what was saved for the one left.
        said = f"Saved <b>{render.esc(verdict)}</b> for {render.esc(label)}."
        if self.state.at != at:
            self._render(said)
        else:
            self._render_verdict()
            self._render_progress()
            self._say(said)

    # -- events from the widgets ----------------------------------------------------------

    def _on_filter(self, _change: Any) -> None:
        self.state.select(
            SampleFilters(
                variant=self.variant_filter.value,
                case=self.case_filter.value,
                failing=self.failing_only.value,
                unreviewed=self.unreviewed_only.value,
                disagree=self.disagreements_only.value,
            )
        )
        self._render()

    def _on_peer(self) -> None:
        # Another panel of this reviewer saved a verdict: show what is saved now.
        self._render_verdict()
        self._render_progress()
        self._render_live()

    def _on_advance(self, change: Any) -> None:
        self.state.advance = bool(change["new"])

    def _on_reason(self, change: Any) -> None:
        if self._rendering:
            return
        late, self._late_reason = self._late_reason, None
        if late is not None and change["new"] == late and late != self.state.draft:
            # The box's own update of a reason already taken with a key or a click,
            # arriving after the panel moved on: it belongs to the sample left behind.
            self._rendering = True
            try:
                self.reason.value = self.state.draft
            finally:
                self._rendering = False
            return
        self.state.draft = change["new"]
        self._render_unsaved()

    def _on_list(self, _change: Any) -> None:
        self.list_box.layout.display = "flex" if self.list_button.value else "none"
        self._render_list()

    def _on_jump(self, change: Any) -> None:
        if self._listing or change["new"] is None:
            return
        self.go(int(change["new"]))

    # -- drawing the state ----------------------------------------------------------------

    def _say(self, message: str, *, error: bool = False) -> None:
        """Show ``message`` (HTML: callers escape what they put in it)."""
        self.status.value = render.message(message, error=error)

    def _render(self, said: str = "") -> None:
        """Draw the shown sample, with ``said`` (HTML) as the status line."""
        self._rendering = True
        try:
            self._draw(said)
        finally:
            self._rendering = False
        self._render_list()

    def _draw(self, said: str) -> None:
        # Each part is its own widget, updated in the browser one after another; the header
        # goes last, so a header naming a sample means every other part shows it already
        # (the reason box above all: text typed from then on is never overwritten).
        state = self.state
        shown = state.shown
        disabled = shown is None
        for button in self._verdict_buttons.values():
            button.disabled = disabled
        self.previous_button.disabled = disabled or state.at == 0
        self.next_button.disabled = disabled or state.at + 1 >= state.count
        self.skip_button.disabled = disabled
        self._render_progress()
        self.status.value = render.message(said) if said else ""
        if shown is None:
            self.body.value = ""
            self.earlier.value = ""
            self.reason.value = ""
            self.key_capture.shown = ""
            self.unsaved.value = ""
            self.header.value = render.NOTHING_SELECTED
            return
        self._render_body()
        self._render_verdict()
        self.reason.value = state.draft
        # after the box: the front end then never pairs this name with an older text
        self.key_capture.shown = str(state.position)
        self._render_unsaved()
        self.header.value = render.header(shown, several_runs=len(state.run.run_ids) > 1)

    def _render_body(self) -> None:
        state = self.state
        shown = state.shown
        if shown is None:
            return
        if state.pair is None:
            self.body.value = render.body(shown)
        else:
            self.body.value = render.side_by_side(
                shown, state.partner, state.pair, (state.verdict, state.partner_verdict())
            )

    def _render_list(self) -> None:
        if not self.list_button.value:
            return
        listed = self.state.listing(self.list_search.value, self.list_sort.value)
        options = [
            (
                f"{r.case_id:<18} {r.variant:<10} r{r.repeat:<4} {r.status:<10} "
                f"checks {r.checks:<8} {r.verdict.replace('_', ' ') or '·'}",
                int(r.at),
            )
            for r in listed.itertuples()
        ]
        self._listing = True
        try:
            self.sample_list.options = options
            self.sample_list.value = (
                self.state.at if self.state.at in {at for _, at in options} else None
            )
        finally:
            self._listing = False
        more = self.state.count - len(options) if not self.list_search.value.strip() else 0
        self.list_note.value = (
            f"<span class='nb-quiet'>{len(options)} shown"
            + (f"; {more} more: search to narrow" if more > 0 else "")
            + "</span>"
        )

    def _render_unsaved(self) -> None:
        state = self.state
        if not state.unsaved:
            self.unsaved.value = ""
        elif state.verdict is None:
            self.unsaved.value = render.unsaved("draft kept; saved with your verdict")
        else:
            self.unsaved.value = render.unsaved(
                "edited; saved with your verdict when you give one or move on"
            )

    def _render_progress(self) -> None:
        state = self.state
        self.progress.max = max(state.count, 1)
        self.progress.value = state.reviewed
        self.progress_label.value = render.progress(
            state.reviewed, state.count, state.at, yours=bool(self.assignment)
        )

    def _render_live(self) -> None:
        """The live number, after each verdict saved or taken back."""
        self.live.value = render.live(self.state.live())

    def _render_verdict(self) -> None:
        state = self.state
        for verdict, button in self._verdict_buttons.items():
            label = _VERDICT_BUTTONS[verdict][0]
            button.description = f"{label} ✓" if state.verdict == verdict else label
        self.earlier.value = render.verdict(
            state.annotator, state.verdict, state.reason, state.saved_at
        )
        self.undo_button.disabled = not state.can_undo
        self._render_unsaved()
        if state.pair is not None:
            self._render_body()

    # -- widgets, built once --------------------------------------------------------------

    def _build(self) -> None:
        """Make every control once, wire it to its handler, and lay the panel out."""
        filters = self._build_filters()
        self._build_sample()
        self._build_buttons()
        self._build_list()
        self.key_capture = KeyCapture(self.press, _HINT, on_reason=self.sync_reason, local=_IN_PAGE)
        self.status = widgets.HTML().add_class("evalnb-status")
        super().__init__(
            self._layout(filters),
            layout=widgets.Layout(
                border="1px solid var(--jp-border-color1, #ccc)",
                padding="8px 12px",
                max_width="1000px",
            ),
        )
        self.add_class("evalnb-annotator")
        self.add_class("evalnb-review")

    def _build_filters(self) -> list[Any]:
        state = self.state
        self.variant_filter = _dropdown("variant", [("all variants", -1), *state.variants])
        self.case_filter = _dropdown("case", [("all cases", -1), *state.cases])
        self.failing_only = _checkbox("failing checks only")
        self.unreviewed_only = _checkbox("unreviewed only")
        self.disagreements_only = _checkbox("verdict ≠ checks")
        filters = [
            self.variant_filter,
            self.case_filter,
            self.failing_only,
            self.unreviewed_only,
            self.disagreements_only,
        ]
        for control in filters:
            control.observe(self._on_filter, names="value")
            control.add_class("evalnb-filter")
        self.variant_filter.style.description_width = "50px"
        self.case_filter.style.description_width = "40px"
        return filters

    def _build_sample(self) -> None:
        """What shows the sample: header, progress, body, earlier verdict, reason box."""
        self.header = widgets.HTML().add_class("evalnb-header")
        self.progress = widgets.IntProgress(
            min=0, max=1, layout=widgets.Layout(width="160px", height="14px")
        )
        self.progress_label = widgets.HTML().add_class("evalnb-progress")
        self.live = widgets.HTML().add_class("evalnb-live")
        # What scrolls is inside (render.CSS): the prompt and answer in a box of fixed
        # height, so the controls under it never move, and the checks beside it.
        self.body = widgets.HTML(layout=widgets.Layout(width="100%")).add_class("evalnb-body")
        self.earlier = widgets.HTML().add_class("evalnb-earlier")
        self.unsaved = widgets.HTML().add_class("evalnb-unsaved")
        self.reason = widgets.Textarea(
            placeholder="Reason (key e; Esc leaves): short, concrete, what is right or "
            "wrong against the review instruction",
            rows=2,
            layout=widgets.Layout(width="100%"),
        ).add_class("evalnb-reason")
        self.reason.observe(self._on_reason, names="value")

    def _build_buttons(self) -> None:
        """The verdicts, the moves, skip and undo, and the advance checkbox."""
        self.previous_button = _button("Previous", "previous", icon="arrow-left")
        self.next_button = _button("Next", "next", icon="arrow-right")
        self.next_unreviewed_button = _button("Next unreviewed", "next-unreviewed", icon="forward")
        self._verdict_buttons = {
            verdict: _button(
                label, verdict.replace("_", "-"), "130px", button_style=kind, icon=icon
            )
            for verdict, (label, kind, icon) in _VERDICT_BUTTONS.items()
        }
        self.pass_button, self.fail_button, self.needs_review_button = (
            self._verdict_buttons.values()
        )
        for verdict, button in self._verdict_buttons.items():
            button.on_click(lambda _, verdict=verdict: self.record(verdict))
        self.previous_button.on_click(lambda _: self.previous())
        self.next_button.on_click(lambda _: self.next())
        self.next_unreviewed_button.on_click(lambda _: self.next_unreviewed())
        self.skip_button = _button("Skip", "skip", icon="step-forward")
        self.undo_button = _button("Undo", "undo", icon="undo")
        self.skip_button.on_click(lambda _: self.skip())
        self.undo_button.on_click(lambda _: self.undo())
        self.advance_box = _checkbox("verdict → next")
        self.advance_box.value = self.state.advance
        self.advance_box.observe(self._on_advance, names="value")
        self.advance_box.add_class("evalnb-advance")

    def _build_list(self) -> None:
        """The sample list: its toggle, a search box, a sort, the list itself."""
        self.list_button = widgets.ToggleButton(
            description="Sample list (l)", icon="list", layout=widgets.Layout(width="auto")
        ).add_class("evalnb-list-button")
        self.list_search = widgets.Text(
            placeholder="search words: case, variant, r3, status, checks, verdict",
            continuous_update=True,
            layout=widgets.Layout(width="320px"),
        ).add_class("evalnb-list-search")
        self.list_sort = widgets.Dropdown(
            options=list(LIST_SORTS),
            value="order",
            description="sort by",
            layout=widgets.Layout(width="auto"),
        ).add_class("evalnb-list-sort")
        self.sample_list = widgets.Select(
            options=[], rows=8, layout=widgets.Layout(width="100%")
        ).add_class("evalnb-list-select")
        self.list_note = widgets.HTML()
        self.list_box = widgets.VBox(
            [
                _row(
                    [self.list_search, self.list_sort, self.list_note], **{"align_items": "center"}
                ),
                self.sample_list,
            ],
            layout=widgets.Layout(display="none", width="100%"),
        ).add_class("evalnb-list")
        self.list_button.observe(self._on_list, names="value")
        self.list_search.observe(lambda _: self._render_list(), names="value")
        self.list_sort.observe(lambda _: self._render_list(), names="value")
        self.sample_list.observe(self._on_jump, names="value")

    def _layout(self, filters: list[Any]) -> list[Any]:
        """The panel top to bottom: title, keys, filters, the sample, verdicts, moves, list."""
        wrapped = {"flex_flow": "row wrap", "align_items": "center"}
        moves = [
            self.previous_button,
            self.next_button,
            self.next_unreviewed_button,
            self.skip_button,
            self.undo_button,
            self.list_button,
        ]
        top = [self.header, _row([self.progress, self.progress_label]), self.live]
        title = widgets.HTML(render.title(self.run.run_ids, self.annotator))
        return [
            title.add_class("evalnb-title"),
            self.key_capture,
            _row(filters, **wrapped),
            _row(top, justify_content="space-between", **wrapped),
            self.body,
            self.earlier,
            self.reason,
            self.unsaved,
            _row([*self._verdict_buttons.values(), self.advance_box], **wrapped),
            _row(moves, **wrapped),
            self.list_box,
            self.status,
        ]


def _dropdown(description: str, options: list[tuple[str, int]]) -> Any:
    return widgets.Dropdown(
        options=options, value=-1, description=description, layout=widgets.Layout(width="auto")
    )


def _checkbox(description: str) -> Any:
    return widgets.Checkbox(
        description=description,
        indent=False,
        layout=widgets.Layout(width="auto", margin="0 12px 0 0"),
    )


def _button(description: str, name: str, width: str = "auto", **style: str) -> Any:
    return widgets.Button(
        description=description, layout=widgets.Layout(width=width), **style
    ).add_class(f"evalnb-{name}")


def _row(children: list[Any], **layout: str) -> Any:
    return widgets.HBox(children, layout=widgets.Layout(**layout))
