"""One report value, shown in three forms: a run's (or a history's) sections, computed once.

>>> report = Report.of(evalnb.load("runs/shop"), baseline="v1")
>>> print(report.text())                       # a terminal
>>> summary = report.markdown()                # a CI job's summary page
>>> Path("report.html").write_text(report.html())  # one self-contained page, figures in it

``report_text``, ``report_markdown``, ``report_html``, ``render_report`` and
``render_history`` are each a line over it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evalnb._prices import Prices
from evalnb.analysis import Run, history
from evalnb.analysis._tally import ALL
from evalnb.report._render import (
    Section,
    _cost_section,
    _history_section,
    _html,
    _markdown,
    _sections,
    _text,
)

__all__ = [
    "Report",
    "render_history",
    "render_report",
    "report_html",
    "report_markdown",
    "report_text",
]


@dataclass(frozen=True)
class Report:
    """A report: its title and sections (conclusions first), each form rendered from them."""

    title: str
    sections: tuple[Section, ...]

    @classmethod
    def of(
        cls,
        run: Run,
        *,
        baseline: str | None = None,
        check: str = ALL,
        level: float = 0.95,
        prices: Prices | str | os.PathLike[str] | None = None,
    ) -> Report:
        """The report of ``run``: ``baseline`` is the variant the others are compared with
        (default: the first); ``check`` the check the suite rate, per-case table and
        comparison use; with ``prices`` (a price table file or mapping), a section on what
        the run cost."""
        title, sections = _sections(run, baseline=baseline, check=check, level=level)
        if prices is not None:
            sections.append(_cost_section(run, prices))
        return cls(title, tuple(sections))

    @classmethod
    def history(
        cls,
        runs: Any,
        *,
        check: str = ALL,
        level: float = 0.95,
        prices: Prices | str | os.PathLike[str] | None = None,
    ) -> Report:
        """The history of ``runs`` (a folder of runs, or run directories; see
        :func:`evalnb.history`); its page has :func:`evalnb.plot_history`'s figure."""
        frame = history(runs, check=check, level=level, prices=prices)
        title = (
            f"evalnb history: {frame['path'].nunique()} runs, "
            f"{frame['started_at'].min():%Y-%m-%d} to {frame['started_at'].max():%Y-%m-%d}; "
            f"check '{check}'"
        )
        return cls(title, (_history_section(frame, prices is not None),))

    def text(self) -> str:
        """Plain text for a terminal."""
        return _text(self.title, list(self.sections))

    def markdown(self) -> str:
        """GitHub-flavoured Markdown, a heading and a table per section: fit for
        ``$GITHUB_STEP_SUMMARY``."""
        return _markdown(self.title, list(self.sections))

    def html(self, *, processes: int = 1) -> str:
        """One self-contained HTML page (no scripts, no external files), the figures
        embedded. With ``processes`` > 1 (on Linux) the figures are drawn in that many
        forked processes at once: what ``evalnb report`` does, in a process of its own.
        Never from a process with threads of its own (a notebook kernel): a forked copy of
        it may deadlock."""
        return _html(self.title, list(self.sections), processes)


def report_text(
    run: Run, *, baseline: str | None = None, check: str = ALL, level: float = 0.95
) -> str:
    """The report as plain text for a terminal: ``Report.of(run, ...).text()``."""
    return Report.of(run, baseline=baseline, check=check, level=level).text()


def report_markdown(
    run: Run, *, baseline: str | None = None, check: str = ALL, level: float = 0.95
) -> str:
    """The report as GitHub-flavoured Markdown: ``Report.of(run, ...).markdown()``."""
    return Report.of(run, baseline=baseline, check=check, level=level).markdown()


def report_html(
    run: Run, *, baseline: str | None = None, check: str = ALL, level: float = 0.95
) -> str:
    """The report as one self-contained HTML page: ``Report.of(run, ...).html()``."""
    return Report.of(run, baseline=baseline, check=check, level=level).html()


def _forms(report: Report, html: bool, markdown: bool, processes: int) -> tuple[str, str | None]:
    text = report.markdown() if markdown else report.text()
    return text, (report.html(processes=processes) if html else None)


def render_report(
    run: Run,
    *,
    baseline: str | None = None,
    check: str = ALL,
    level: float = 0.95,
    html: bool = False,
    markdown: bool = False,
    prices: Prices | str | os.PathLike[str] | None = None,
    processes: int = 1,
) -> tuple[str, str | None]:
    """The text report (Markdown with ``markdown=True``) and, with ``html=True``, the HTML
    page, from one :class:`Report` of ``run`` (see :meth:`Report.of`, :meth:`Report.html`)."""
    report = Report.of(run, baseline=baseline, check=check, level=level, prices=prices)
    return _forms(report, html, markdown, processes)


def render_history(
    runs: Any,
    *,
    check: str = ALL,
    level: float = 0.95,
    prices: Prices | str | os.PathLike[str] | None = None,
    html: bool = False,
    markdown: bool = False,
) -> tuple[str, str | None]:
    """The history of ``runs`` as text (Markdown with ``markdown=True``) and, with
    ``html=True``, an HTML page: one :meth:`Report.history`."""
    report = Report.history(runs, check=check, level=level, prices=prices)
    return _forms(report, html, markdown, 1)
