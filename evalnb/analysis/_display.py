"""How a result shows itself in a notebook: the verdict and the key numbers first.

:func:`compare` and :func:`gate` return a :class:`Result`: a ``pandas.DataFrame`` with
the documented columns, unchanged for code, whose notebook display (``_repr_html_``)
starts with a sentence per row (the verdict, the difference in percentage points with
its interval, the p-value, the cases behind it, the method) and a visible note for each
caution, and keeps the whole frame, formatted, one click away. Every text cell is
escaped and marked so that Jupyter's MathJax never typesets model text holding ``$``.
A frame derived from a result (``result[...]``, ``result.query(...)``) is a plain
DataFrame.

Expected cautions (:func:`caution`, such as "fewer than 10 cases") are warnings in a
script; in a notebook kernel they are left to the result's display, which shows them as
a short note, instead of a red warning box naming a temporary file.
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import math
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, cast

import pandas as pd

from evalnb.analysis._story import story

__all__ = [
    "Result",
    "caution",
    "cautions_as_warnings",
    "frame_html",
    "register_formatter",
    "result",
    "shown",
]

_NOTES_IN_KERNEL = contextvars.ContextVar("evalnb_notes_in_kernel", default=True)


def _in_kernel() -> bool:
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return getattr(shell, "kernel", None) is not None


def caution(message: str, *, stacklevel: int = 2) -> None:
    """Warn ``message`` (a UserWarning), except in a notebook kernel, where the result's
    display shows it as a note (its summary must say it)."""
    if _in_kernel() and _NOTES_IN_KERNEL.get():
        return
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


@contextlib.contextmanager
def cautions_as_warnings() -> Iterator[None]:
    """Within: :func:`caution` always warns (for callers that record the warnings)."""
    token = _NOTES_IN_KERNEL.set(False)
    try:
        yield
    finally:
        _NOTES_IN_KERNEL.reset(token)


# Jupyter's MathJax skips elements of these classes (MathJax 2 and 3 names).
NO_MATH = "tex2jax_ignore mathjax_ignore"


class Result(pd.DataFrame):
    """A result frame that reads itself in a notebook (see the module docstring)."""

    _metadata = ["_evalnb_summary"]

    @property
    def _constructor(self) -> Callable[..., pd.DataFrame]:
        return cast(Callable[..., pd.DataFrame], pd.DataFrame)

    def _repr_html_(self) -> str:
        summary = getattr(self, "_evalnb_summary", None)
        table = frame_html(pd.DataFrame(self))
        if summary is None:
            return table
        return (
            f"<div class='{NO_MATH} evalnb-result'>{summary(pd.DataFrame(self))}"
            f"<details><summary>the frame ({len(self)} rows × {len(self.columns)} "
            f"columns)</summary>{table}</details></div>"
        )


def shown(frame: pd.DataFrame) -> Result:
    """``frame`` as a :class:`Result` with no summary: its display is the frame, its text
    escaped and kept from MathJax (model text with two ``$`` is not typeset)."""
    return Result(frame)


def result(frame: pd.DataFrame, summary: Callable[[pd.DataFrame], str]) -> Result:
    """``frame`` as a :class:`Result` whose display starts with ``summary(frame)`` (HTML)."""
    out = Result(frame)
    out._evalnb_summary = summary
    return out


#: A frame longer than this shows its first :data:`FIRST_ROWS` rows and says how many it holds.
LONG = 12
FIRST_ROWS = 8


def frame_html(frame: pd.DataFrame) -> str:
    """``frame`` as an HTML table with its text escaped and kept from MathJax; a long frame
    shows its first rows and its size (the frame itself keeps every row for code)."""
    if len(frame) <= LONG:
        return f"<div class='{NO_MATH}'>{frame.to_html(escape=True, na_rep='')}</div>"
    table = frame.head(FIRST_ROWS).to_html(escape=True, na_rep="")
    more = (
        f"<div style='opacity:.7'>the first {FIRST_ROWS} of {len(frame)} rows "
        f"({len(frame.columns)} columns); the frame holds them all</div>"
    )
    return f"<div class='{NO_MATH}'>{table}{more}</div>"


#: Columns that carry model or case text: a frame holding one is kept from MathJax when shown.
TEXT_COLUMNS = frozenset(
    ("case_id", "variant", "answer", "prompt", "detail", "canonical", "check", "reason")
)


def _frame_without_maths(frame: pd.DataFrame) -> str | None:
    """IPython's HTML for any DataFrame: pandas' own table, marked so MathJax leaves it alone
    when it holds evalnb's text columns (a slice of an evalnb frame included)."""
    table: str | None = frame._repr_html_()
    if table is None or not TEXT_COLUMNS & {str(c) for c in frame.columns}:
        return table
    return f"<div class='{NO_MATH}'>{table}</div>"


def register_formatter() -> None:
    """In IPython, show every frame holding evalnb's text columns without typesetting ``$``
    (``run.samples[["case_id", "answer"]]`` as much as evalnb's own results). Nothing else
    about a frame's display changes; outside IPython this does nothing."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", {})
    if "text/html" in formatters:
        formatters["text/html"].for_type(pd.DataFrame, _frame_without_maths)


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def points(value: Any) -> str:
    """A difference of rates in percentage points (``+12.5 pp``)."""
    return "n/a" if _missing(value) else f"{float(value) * 100:+.1f} pp"


def percent(value: Any) -> str:
    return "n/a" if _missing(value) else f"{float(value) * 100:.1f}%"


def p_value(value: Any) -> str:
    """``p = 0.031``, ``p < 0.001``."""
    if _missing(value):
        return "p n/a"
    return "p < 0.001" if float(value) < 0.001 else f"p = {float(value):.3f}"


def compare_summary(frame: pd.DataFrame) -> str:
    """One sentence per comparison, its verdict first (the words of :func:`_story.story`,
    which the reports and ``plot_compare`` use too)."""
    lines = []
    for row in frame.to_dict("records"):
        told = story(row)
        colour = "#1a7f37" if str(row["verdict"]).endswith("better") else "#9a6700"
        fixed = f" · {esc(told.fixed)}" if told.fixed else ""
        lines.append(
            f"<div><b style='color:{colour}'>{esc(told.verdict)}</b> · {esc(row['b'])} vs "
            f"{esc(row['a'])} on <code>{esc(row['check'])}</code>: "
            f"<b>{esc(told.difference)}</b>, {esc(told.interval)}; {esc(told.rates)}; "
            f"{esc(told.cases)}<span style='opacity:.7'>{fixed}</span></div>"
        )
        if told.note:
            lines.append(note_html(told.note))
    return "".join(lines)


def suite_summary(frame: pd.DataFrame, few: int = 10) -> str:
    """One line per suite rate (estimate, interval, cases and repeats, method), then a
    note for the cautions: few cases, cases that other groups have."""
    lines = []
    keys = [c for c in frame.columns[: list(frame.columns).index("check")]]
    for row in frame.to_dict("records"):
        where = " ".join(f"{row[k]}" for k in keys)
        level = f"{float(row['level']) * 100:g}%"
        lines.append(
            f"<div>{esc(where)} <code>{esc(row['check'])}</code>: "
            f"<b>{percent(row['estimate'])}</b> ({level} CI {percent(row['low'])} to "
            f"{percent(row['high'])}), {int(row['cases'])} cases × {float(row['repeats']):.3g} "
            f"repeats <span style='opacity:.7'>· {esc(row['method'])}</span></div>"
        )
    if len(frame) and (frame["cases"] < few).any():
        lines.append(
            note_html(
                f"fewer than {few} cases: an interval across so few cases is necessarily wide"
            )
        )
    if "cases_missing" in frame and (frame["cases_missing"] > 0).any():
        lines.append(
            note_html(
                "some groups lack cases that others have: their rates are over "
                "different cases (evalnb.compare pairs cases)"
            )
        )
    return "".join(lines)


def gate_summary(frame: pd.DataFrame) -> str:
    """The overall PASS or FAIL line, then one line per rule that failed."""
    passed = bool(frame["passed"].all()) and len(frame) > 0
    failed = frame[~frame["passed"].astype(bool)]
    head = (
        f"<div style='font-size:1.2em'><b style='color:#1a7f37'>PASS</b>: all {len(frame)} "
        "rules hold</div>"
        if passed
        else f"<div style='font-size:1.2em'><b style='color:#cf222e'>FAIL</b>: "
        f"{len(failed)} of {len(frame)} rules failed</div>"
    )
    lines = [
        f"<div>✗ <code>{esc(r['rule'])}</code> {esc(r['variant'])} {esc(r['check'])}: "
        f"{esc(r['detail'])}</div>"
        for r in failed.to_dict("records")
    ]
    return head + "".join(lines)


def note_html(text: str) -> str:
    """A visible note under a result's sentence."""
    return (
        "<div style='border-left:3px solid #9a6700;padding:2px 8px;margin:2px 0 6px 0'>"
        f"note: {esc(text)}</div>"
    )
