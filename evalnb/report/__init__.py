"""The run report: conclusions first, as terminal text, Markdown, HTML or JUnit."""

from evalnb.report._render import (
    markdown_table,
    render_history,
    render_report,
    report_html,
    report_markdown,
    report_text,
)

__all__ = [
    "markdown_table",
    "render_history",
    "render_report",
    "report_html",
    "report_markdown",
    "report_text",
]
