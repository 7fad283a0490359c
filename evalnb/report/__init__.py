"""The run report: conclusions first, one :class:`Report` shown as terminal text, Markdown
or HTML (JUnit: ``evalnb ci``)."""

from evalnb.report._render import markdown_table
from evalnb.report._report import (
    Report,
    render_history,
    render_report,
    report_html,
    report_markdown,
    report_text,
)

__all__ = [
    "Report",
    "markdown_table",
    "render_history",
    "render_report",
    "report_html",
    "report_markdown",
    "report_text",
]
