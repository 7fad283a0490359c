"""The pairwise review panel: two answers to one case and repeat side by side, and a key for
which is better.

The answers are shown as "Answer 1" (left) and "Answer 2" (right), with the prompt and the
case's review instruction above them; the variant names and the checks are hidden, so the
choice is the reviewer's own, blind to which variant wrote which answer (the sides are
drawn per pair, see :mod:`evalnb.review._prefer`). :func:`evalnb.preferences` tells the
variants apart afterwards. Keys (:data:`PREFERENCE_KEYS`) come through the panel's
:class:`~evalnb.review._keys.KeyCapture`; none of them is a key of the verdict panel
that means something else there (``z``, ``j``, ``k``, ``u``, ``e`` do the same).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from evalnb.analysis._frames import Run
from evalnb.review import _render as render
from evalnb.review._keys import KeyCapture
from evalnb.review._prefer import Pair, PreferenceState
from evalnb.review._queue import SampleView

__all__ = ["PREFERENCE_KEYS", "PreferencePanel"]

# choice -> (button label, button style, icon)
_CHOICE_BUTTONS = {
    "left": ("1 is better", "info", "arrow-left"),
    "right": ("2 is better", "info", "arrow-right"),
    "tie": ("Tie", "", "equals"),
    "both_bad": ("Both bad", "danger", "times"),
}
_SAID = {
    "left": "answer 1 better",
    "right": "answer 2 better",
    "tie": "tie",
    "both_bad": "both bad",
}

_SHORTCUTS: dict[str, tuple[str, Callable[[PreferencePanel], None]]] = {
    "1": ("answer 1 better", lambda panel: panel.record("left")),
    "2": ("answer 2 better", lambda panel: panel.record("right")),
    "t": ("tie", lambda panel: panel.record("tie")),
    "x": ("both bad", lambda panel: panel.record("both_bad")),
    "z": ("undo", lambda panel: panel.undo()),
    "j": ("next", lambda panel: panel.next()),
    "k": ("previous", lambda panel: panel.previous()),
    "u": ("undecided", lambda panel: panel.next_undecided()),
    "e": ("reason box", lambda panel: panel.focus_reason()),
}
_SAME = {"ArrowRight": "j", "ArrowLeft": "k"}
_QUIET = {"Escape", "Enter", " "}

#: What each key of the pairwise panel does.
PREFERENCE_KEYS = {key: label for key, (label, _) in _SHORTCUTS.items()}
_HINT = "keys: " + " · ".join(f"{k} {label}" for k, label in PREFERENCE_KEYS.items())
_HINT += " · Esc leaves a box"


class PreferencePanel(widgets.VBox):
    """The panel :func:`~evalnb.review.annotate` returns with ``compare=(a, b)``.

    Its controls are attributes a script or a test can drive: ``left_button``,
    ``right_button``, ``tie_button``, ``both_bad_button``, ``previous_button``,
    ``next_button``, ``next_undecided_button``, ``undo_button``, ``reason``, and
    ``key_capture`` (:meth:`press` does what a key does). ``state`` is the
    :class:`~evalnb.review._prefer.PreferenceState` it draws.
    """

    def __init__(self, run: Run | str | os.PathLike[str], annotator: str, **options: Any):
        self.state = PreferenceState(run, annotator, **options)
        self.run = self.state.run
        self.annotator = self.state.annotator
        self._build()
        self._render()

    # -- actions --------------------------------------------------------------------------

    def press(self, key: str) -> None:
        """Do what ``key`` does in the panel (see :data:`PREFERENCE_KEYS`)."""
        key = _SAME.get(key, key)
        if key in _QUIET:
            return
        action = _SHORTCUTS.get(key.lower())
        if action is None:
            keys = ", ".join(f"{k} {label}" for k, label in PREFERENCE_KEYS.items())
            self._say(f"Key {render.esc(key)} does nothing here; keys: {render.esc(keys)}")
            return
        action[1](self)

    def record(self, choice: str) -> None:
        """Save ``choice`` (``left``, ``right``, ``tie``, ``both_bad``) on the shown pair with
        the reason typed; one new part, written before anything else."""
        pair = self.state.current
        try:
            row = self.state.record(choice, self.reason.value)
        except OSError as exc:
            self._say(f"NOT SAVED: {exc}", error=True)
            return
        if row is None or pair is None:
            self._say("The two variants share no case and repeat: nothing to compare.")
            return
        self._render(f"Saved <b>{render.esc(_SAID[choice])}</b> for {_label(pair)}.")

    def undo(self) -> None:
        """Take back the last choice made in this panel and show its pair again."""
        try:
            pair = self.state.undo()
        except OSError as exc:
            self._say(f"NOT SAVED: {exc}", error=True)
            return
        if pair is None:
            self._say("Nothing to undo in this panel.")
            return
        self._render(f"Undone: {_label(pair)} is back to what it was before.")

    def next(self) -> None:
        """Show the next pair."""
        if self.state.next():
            self._render()

    def previous(self) -> None:
        """Show the previous pair."""
        if self.state.previous():
            self._render()

    def next_undecided(self) -> None:
        """Show the next pair without a choice, wrapping round."""
        if self.state.next_undecided():
            self._render()
        else:
            self._say("Every pair has a choice from you.")

    def focus_reason(self) -> None:
        """Put the keyboard focus in the reason box."""
        self.reason.focus()

    def sync_reason(self, text: str) -> None:
        """Take ``text`` as the reason box's content (sent with each key, ahead of the box's
        own update)."""
        if text != self.reason.value:
            self.reason.value = text

    # -- drawing --------------------------------------------------------------------------

    def _say(self, message: str, *, error: bool = False) -> None:
        self.status.value = render.message(message, error=error)

    def _render(self, said: str = "") -> None:
        state = self.state
        shown = state.shown
        pair = state.current
        for button in self._choice_buttons.values():
            button.disabled = shown is None
        self.previous_button.disabled = shown is None or state.at == 0
        self.next_button.disabled = shown is None or state.at + 1 >= state.count
        self.undo_button.disabled = not state.can_undo
        self.progress.max = max(state.count, 1)
        self.progress.value = state.reviewed
        self.progress_label.value = (
            f"&nbsp;<b>{state.reviewed}</b> of {state.count} pairs chosen"
            f"<span class='nb-quiet'> · pair {state.at + 1} of {state.count}</span>"
            if state.count
            else ""
        )
        self.status.value = render.message(said) if said else ""
        if shown is None or pair is None:
            self.body.value = ""
            self.earlier.value = ""
            self.reason.value = ""
            self.header.value = (
                f"<b>Variants {render.esc(state.a)} and {render.esc(state.b)} share no case and "
                "repeat: nothing to compare.</b>"
            )
            return
        for choice, button in self._choice_buttons.items():
            label = _CHOICE_BUTTONS[choice][0]
            button.description = f"{label} ✓" if state.choice == choice else label
        self.body.value = _body(*shown)
        self.earlier.value = _earlier(state.annotator, state.choice, state.reason)
        self.reason.value = state.reason
        self.key_capture.shown = str(state.at)
        self.header.value = (
            f"<div style='font-size:14px'>case <b>{render.esc(pair.case_id)}</b> · repeat "
            f"<b>{pair.repeat}</b> <span class='nb-quiet'>· which answer is better? "
            "(variants hidden; their sides drawn at random)</span></div>"
        )

    # -- widgets, built once --------------------------------------------------------------

    def _build(self) -> None:
        state = self.state
        self.header = widgets.HTML().add_class("evalnb-header")
        self.progress = widgets.IntProgress(
            min=0, max=1, layout=widgets.Layout(width="160px", height="14px")
        )
        self.progress_label = widgets.HTML().add_class("evalnb-progress")
        self.body = widgets.HTML(layout=widgets.Layout(width="100%")).add_class("evalnb-body")
        self.earlier = widgets.HTML().add_class("evalnb-earlier")
        self.reason = widgets.Textarea(
            placeholder="Reason (key e; Esc leaves): what makes one answer better",
            rows=2,
            layout=widgets.Layout(width="100%"),
        ).add_class("evalnb-reason")
        self._choice_buttons = {
            choice: _button(label, f"prefer-{choice.replace('_', '-')}", style, icon)
            for choice, (label, style, icon) in _CHOICE_BUTTONS.items()
        }
        self.left_button, self.right_button, self.tie_button, self.both_bad_button = (
            self._choice_buttons.values()
        )
        for choice, button in self._choice_buttons.items():
            button.on_click(lambda _, choice=choice: self.record(choice))
        self.previous_button = _button("Previous", "previous", "", "arrow-left")
        self.next_button = _button("Next", "next", "", "arrow-right")
        self.next_undecided_button = _button("Next undecided", "next-undecided", "", "forward")
        self.undo_button = _button("Undo", "undo", "", "undo")
        self.previous_button.on_click(lambda _: self.previous())
        self.next_button.on_click(lambda _: self.next())
        self.next_undecided_button.on_click(lambda _: self.next_undecided())
        self.undo_button.on_click(lambda _: self.undo())
        self.key_capture = KeyCapture(
            self.press, _HINT, on_reason=self.sync_reason, local={"e": "reason"}
        )
        self.status = widgets.HTML().add_class("evalnb-status")
        runs = ", ".join(render.esc(r) for r in self.run.run_ids)
        title = widgets.HTML(
            f"{render.CSS}<b>evalnb preference review</b> · run {runs} · "
            f"{render.esc(state.a)} vs {render.esc(state.b)} · reviewer "
            f"<b>{render.esc(self.annotator)}</b>"
        ).add_class("evalnb-title")
        wrapped = {"flex_flow": "row wrap", "align_items": "center"}
        top = [self.header, _row([self.progress, self.progress_label])]
        moves = [
            self.previous_button,
            self.next_button,
            self.next_undecided_button,
            self.undo_button,
        ]
        super().__init__(
            [
                title,
                self.key_capture,
                _row(top, justify_content="space-between", **wrapped),
                self.body,
                self.earlier,
                self.reason,
                _row(list(self._choice_buttons.values()), **wrapped),
                _row(moves, **wrapped),
                self.status,
            ],
            layout=widgets.Layout(
                border="1px solid var(--jp-border-color1, #ccc)",
                padding="8px 12px",
                max_width="1000px",
            ),
        )
        # evalnb-annotator: the review style sheet; evalnb-review: where the keys listen.
        self.add_class("evalnb-annotator")
        self.add_class("evalnb-review")
        self.add_class("evalnb-prefer")


def _label(pair: Pair) -> str:
    return render.esc(f"{pair.case_id} · repeat {pair.repeat}")


def _body(left: SampleView, right: SampleView) -> str:
    """The prompt and review instruction once, then the two answers in two columns."""
    review = left.review
    instruction = (
        render.esc(review)
        if not render._missing(review) and review != ""
        else "<em>No review instruction for this case.</em>"
    )
    cells = []
    for number, sample in ((1, left), (2, right)):
        if render._missing(sample.answer):
            error = "" if render._missing(sample.error) else f": {render.esc(sample.error)}"
            answer = (
                f"<div class='nb-box nb-fail'>No answer ({render.esc(sample.status)}){error}</div>"
            )
        else:
            answer = render._pre(sample.answer)
        cells.append(
            f"<td class='nb-side nb-answer-{number}'><div class='nb-side-head'>"
            f"<b>Answer {number}</b> <span class='nb-quiet'>({'left' if number == 1 else 'right'}"
            f", key {number})</span></div>{answer}</td>"
        )
    return (
        render._section("Review instruction", f"<div class='nb-box nb-review'>{instruction}</div>")
        + render._section("Prompt as sent", render._pre(left.prompt), "nb-prompt")
        + f"<table class='nb-pair'><tr>{''.join(cells)}</tr></table>"
    )


def _earlier(annotator: str, choice: str | None, reason: str) -> str:
    if choice is None:
        return f"<div class='nb-quiet'>No choice by {render.esc(annotator)} yet.</div>"
    said = f" — “{render.esc(reason)}”" if reason else ""
    return f"<div>Your choice: <b>{render.esc(_SAID[choice])}</b>{said}</div>"


def _button(description: str, name: str, style: str, icon: str) -> Any:
    return widgets.Button(
        description=description,
        button_style=style,
        icon=icon,
        layout=widgets.Layout(width="auto"),
    ).add_class(f"evalnb-{name}")


def _row(children: list[Any], **layout: str) -> Any:
    return widgets.HBox(children, layout=widgets.Layout(**layout))
