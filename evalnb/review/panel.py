"""The review panel: one sample at a time, a verdict and a reason, saved at each click.

:func:`annotate` shows a sample as the reviewer needs it (case, variant, repeat; the
prompt as sent; the tool actions requested and executed; the answer; the case's review
instruction; the check outcomes; this reviewer's earlier verdict) with buttons for
``pass``, ``fail`` and ``needs_review``. The panel only draws a
:class:`~evalnb.review.state.ReviewState` and forwards each click to it; the state saves
every verdict before the panel moves on, and a new panel resumes at the first sample not
yet reviewed. The HTML, with every model-written string escaped, comes from
:mod:`evalnb.review.render`; dropdown labels are set as text by ipywidgets itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from evalnb.analysis.frames import Run
from evalnb.review import render
from evalnb.review.queue import SampleKey
from evalnb.review.state import Filters, ReviewState

__all__ = ["KEYS", "Annotator", "annotate"]

# verdict -> (label, button style, icon) of its button
_VERDICT_BUTTONS = {
    "pass": ("Pass", "success", "check"),
    "fail": ("Fail", "danger", "times"),
    "needs_review": ("Needs review", "warning", "question"),
}

# The one-letter keys of the shortcut box: key -> (what the help calls it, what it does).
_SHORTCUTS: dict[str, tuple[str, Callable[[Annotator], None]]] = {
    "p": ("pass", lambda panel: panel.record("pass")),
    "f": ("fail", lambda panel: panel.record("fail")),
    "r": ("needs review", lambda panel: panel.record("needs_review")),
    "j": ("next", lambda panel: panel.next()),
    "k": ("previous", lambda panel: panel.previous()),
    "u": ("unreviewed", lambda panel: panel.next_unreviewed()),
}

#: What each key of the shortcut box does.
KEYS = {key: label for key, (label, _) in _SHORTCUTS.items()}


def annotate(
    run: Run | str | os.PathLike[str],
    annotator: str,
    where: Any = None,
    *,
    check: str | None = None,
    advance: bool = False,
) -> Annotator:
    """A panel in which ``annotator`` gives verdicts on the samples of ``run``.

    ``run`` is a Run (from :func:`evalnb.load`) or a run directory. ``where`` narrows
    the samples once: a :meth:`pandas.DataFrame.query` string over the samples columns
    (``"status != 'completed'"``), a function of the samples frame returning a boolean
    mask, a boolean Series over ``run.samples``, or a frame of sample keys (such as
    ``calibrate(...).disagreements``). ``check`` is the check (name, type or ``"all"``,
    the default) that the "verdict ≠ check" filter compares verdicts with. With
    ``advance=True`` a verdict also moves to the next sample.

    >>> panel = evalnb.annotate(run, annotator="ana")                 # doctest: +SKIP
    >>> panel                                                          # doctest: +SKIP
    """
    return Annotator(run, annotator, where=where, check=check, advance=advance)


class Annotator(widgets.VBox):
    """The panel :func:`annotate` returns (an ipywidgets ``VBox``).

    Its controls are attributes, so a script or a test can drive it like a person:
    ``pass_button``, ``fail_button``, ``needs_review_button``, ``reason``,
    ``previous_button``, ``next_button``, ``next_unreviewed_button``, the filters
    ``variant_filter``, ``case_filter``, ``failing_only``, ``unreviewed_only``,
    ``disagreements_only``, and ``shortcuts`` (a box that takes one-letter keys).
    ``state`` is the :class:`~evalnb.review.state.ReviewState` it draws.
    """

    def __init__(
        self,
        run: Run | str | os.PathLike[str],
        annotator: str,
        *,
        where: Any = None,
        check: str | None = None,
        advance: bool = False,
    ):
        self.state = ReviewState(run, annotator, where=where, check=check, advance=advance)
        self.run = self.state.run
        self.annotator = self.state.annotator
        self._build()
        self._render()

    # -- what the state knows -------------------------------------------------------------

    @property
    def advance(self) -> bool:
        """Whether a verdict also moves to the next sample."""
        return self.state.advance

    @advance.setter
    def advance(self, value: bool) -> None:
        self.state.advance = value

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

    def next_unreviewed(self) -> None:
        """Show the next sample without a verdict, wrapping round to the start."""
        if self.state.next_unreviewed():
            self._render()
        else:
            self._say("Every sample in this selection has a verdict from you.")

    def record(self, verdict: str) -> None:
        """Save ``verdict`` (``pass``, ``fail`` or ``needs_review``) with the reason typed
        for the shown sample: one new verdicts part, written before anything else."""
        at = self.state.at
        try:
            key = self.state.record(verdict)
        except OSError as exc:
            self._say(f"NOT SAVED: {exc}", error=True)
            return
        if key is None:
            self._say("No sample is shown: change the filters.")
            return
        label = f"{key['case_id']} · {key['variant']} · repeat {key['repeat']}"
        self._say(f"Saved <b>{render.esc(verdict)}</b> for {render.esc(label)}.")
        if self.state.at != at:
            self._render()  # moved on (advance): a new sample clears the message
        else:
            self._render_verdict()
            self._render_progress()

    # -- events from the widgets ----------------------------------------------------------

    def _on_filter(self, _change: Any) -> None:
        self.state.select(
            Filters(
                variant=self.variant_filter.value,
                case=self.case_filter.value,
                failing=self.failing_only.value,
                unreviewed=self.unreviewed_only.value,
                disagreements=self.disagreements_only.value,
            )
        )
        self._render()

    def _on_key(self, change: Any) -> None:
        typed = change["new"]
        if not typed:
            return
        self.shortcuts.value = ""
        # Each keystroke arrives as its own update, so the last letter is the new key.
        key = typed[-1].lower()
        if key not in _SHORTCUTS:
            keys = ", ".join(f"{k} {label}" for k, label in KEYS.items())
            self._say(f"Key {render.esc(key)} does nothing here; keys: {render.esc(keys)}")
            return
        _SHORTCUTS[key][1](self)

    def _on_reason(self, change: Any) -> None:
        self.state.draft = change["new"]
        if self.state.draft_changed:
            self._say("The reason changed: click a verdict to save it.")

    # -- drawing the state ----------------------------------------------------------------

    def _say(self, message: str, *, error: bool = False) -> None:
        """Show ``message`` (HTML: callers escape what they put in it)."""
        self.status.value = render.message(message, error=error)

    def _render(self) -> None:
        state = self.state
        shown = state.shown
        disabled = shown is None
        for button in self._verdict_buttons.values():
            button.disabled = disabled
        self.previous_button.disabled = disabled or state.at == 0
        self.next_button.disabled = disabled or state.at + 1 >= state.count
        self._render_progress()
        if shown is None:
            self.header.value = render.NOTHING_SELECTED
            self.body.value = ""
            self.earlier.value = ""
            self.reason.value = ""
            return
        self.header.value = render.header(shown, several_runs=len(state.run.run_ids) > 1)
        self.body.value = render.body(shown)
        self._render_verdict()
        self.reason.value = state.draft
        self.status.value = ""

    def _render_progress(self) -> None:
        state = self.state
        self.progress.max = max(state.count, 1)
        self.progress.value = state.reviewed
        self.progress_label.value = render.progress(state.reviewed, state.count, state.at)

    def _render_verdict(self) -> None:
        state = self.state
        for verdict, button in self._verdict_buttons.items():
            label = _VERDICT_BUTTONS[verdict][0]
            button.description = f"{label} ✓" if state.verdict == verdict else label
        self.earlier.value = render.verdict(
            state.annotator, state.verdict, state.reason, state.saved_at
        )

    # -- widgets, built once --------------------------------------------------------------

    def _build(self) -> None:
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

        self.header = widgets.HTML().add_class("evalnb-header")
        self.progress = widgets.IntProgress(
            min=0, max=1, layout=widgets.Layout(width="160px", height="14px")
        )
        self.progress_label = widgets.HTML().add_class("evalnb-progress")
        self.body = widgets.HTML(layout=widgets.Layout(width="100%")).add_class("evalnb-body")
        self.earlier = widgets.HTML().add_class("evalnb-earlier")
        self.reason = widgets.Textarea(
            placeholder="Reason (short, concrete: what is right or wrong, against the "
            "review instruction)",
            rows=2,
            layout=widgets.Layout(width="100%"),
        ).add_class("evalnb-reason")
        self.reason.observe(self._on_reason, names="value")

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

        self.shortcuts = widgets.Text(
            placeholder="keys: " + " · ".join(f"{k} {label}" for k, label in KEYS.items()),
            continuous_update=True,
            layout=widgets.Layout(width="420px"),
        ).add_class("evalnb-keys")
        self.shortcuts.observe(self._on_key, names="value")
        self.status = widgets.HTML().add_class("evalnb-status")

        wrapped = {"flex_flow": "row wrap", "align_items": "center"}
        moves = [self.previous_button, self.next_button, self.next_unreviewed_button]
        top = [self.header, _row([self.progress, self.progress_label])]
        title = widgets.HTML(render.title(self.run.run_ids, self.annotator))
        super().__init__(
            [
                title.add_class("evalnb-title"),
                _row(filters, **wrapped),
                _row(top, justify_content="space-between", align_items="center"),
                self.body,
                self.earlier,
                self.reason,
                _row(list(self._verdict_buttons.values()), margin="4px 0"),
                _row([*moves, self.shortcuts], **wrapped),
                self.status,
            ],
            layout=widgets.Layout(
                border="1px solid var(--jp-border-color1, #ccc)",
                padding="8px 12px",
                max_width="1000px",
            ),
        )
        self.add_class("evalnb-annotator")


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
