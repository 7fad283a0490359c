"""The review panel's HTML: every piece the panel shows, as a string.

Every string that a model or a cases file wrote goes through :func:`esc` before it is
put in the markup, because the ``HTML`` widget's front end sets ``innerHTML``: an answer
holding ``<img src=x onerror=...>`` is shown as text and runs nothing. Only the markup
written here is left as markup.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from evalnb.review._live import LiveNumber
from evalnb.review._queue import SampleView

_RESULT_CHARS = 600
_VERDICT_CLASS = {"pass": "nb-pass", "fail": "nb-fail", "needs_review": "nb-review-verdict"}

# One style sheet, scoped to the panel, instead of inline styles on every update.
CSS = """
<style>
.evalnb-annotator .nb-title {font-size:11px; text-transform:uppercase; letter-spacing:.05em;
  color:var(--jp-ui-font-color2,#666); margin-top:6px}
.evalnb-annotator .nb-box {border:1px solid var(--jp-border-color2,#ddd); border-radius:4px;
  padding:6px 10px; margin:4px 0 10px 0}
.evalnb-annotator .nb-review {border-left:4px solid var(--jp-brand-color1,#1976d2);
  background:var(--jp-layout-color2,#f3f6fa)}
.evalnb-annotator .nb-pre {white-space:pre-wrap; word-break:break-word; margin:0;
  max-height:22em; overflow:auto; font-family:var(--jp-code-font-family,monospace);
  font-size:var(--jp-code-font-size,13px); line-height:1.4}
.evalnb-annotator .nb-result {max-height:8em; opacity:.85}
.evalnb-annotator .nb-pass {color:#1a7f37}
.evalnb-annotator .nb-fail {color:#cf222e}
.evalnb-annotator .nb-review-verdict {color:#9a6700}
.evalnb-annotator .nb-quiet {color:var(--jp-ui-font-color2,#666)}
.evalnb-annotator .nb-badge {color:white; border-radius:3px; padding:0 6px; font-size:12px}
.evalnb-annotator .nb-checks {list-style:none; padding-left:10px}
.evalnb-annotator .nb-checks li {margin:2px 0}
.evalnb-annotator .nb-checks .nb-detail {margin:0 0 4px 1.4em; white-space:pre-wrap;
  color:var(--jp-content-font-color1,#222)}
.evalnb-annotator .nb-actions {width:100%; border-collapse:collapse}
.evalnb-annotator .nb-actions td, .evalnb-annotator .nb-actions th {vertical-align:top;
  text-align:left; padding:0 12px 0 0; width:50%}
.evalnb-annotator ol {margin:0; padding-left:1.6em}
.evalnb-annotator .nb-sample {display:flex; flex-wrap:wrap; align-items:flex-start; gap:0 12px}
.evalnb-annotator .nb-read {flex:3 1 380px; min-width:0; height:24em; overflow:auto;
  border:1px solid var(--jp-border-color3,#eee); padding:0 6px}
.evalnb-annotator .nb-read .nb-answer .nb-pre {max-height:none}
.evalnb-annotator .nb-read .nb-prompt .nb-pre {max-height:8em}
.evalnb-annotator .nb-judge {flex:2 1 260px; min-width:0}
.evalnb-annotator .evalnb-earlier {white-space:nowrap; overflow:hidden; text-overflow:ellipsis}
.evalnb-annotator .nb-unsaved {color:#9a6700; font-size:12px}
.evalnb-annotator .nb-pair {width:100%; table-layout:fixed; border-collapse:separate;
  border-spacing:6px 0}
.evalnb-annotator .nb-side {vertical-align:top; padding:4px 6px;
  border:1px solid var(--jp-border-color2,#ddd); border-radius:4px}
.evalnb-annotator .nb-current {border:2px solid var(--jp-brand-color1,#1976d2)}
.evalnb-annotator .nb-side .nb-pre {max-height:12em}
.evalnb-annotator .nb-side .nb-prompt .nb-pre {max-height:5em}
.evalnb-annotator .evalnb-list select {font-family:var(--jp-code-font-family,monospace);
  font-size:12px}
.evalnb-keys-hint {font-size:12px; color:var(--jp-ui-font-color2,#666)}
.evalnb-stale {margin:4px 0; padding:6px 10px; border-radius:4px; background:#ffebe9;
  color:#cf222e; border:1px solid #cf222e; font-weight:bold}
.evalnb-dead > :not(.evalnb-keys) {opacity:.45; pointer-events:none}
</style>
"""

NOTHING_SELECTED = "<b>No samples match these filters.</b>"


def esc(value: Any) -> str:
    """``value`` as text that HTML shows literally (None as nothing)."""
    return html.escape("" if value is None else str(value))


def title(run_ids: Sequence[str], annotator: str) -> str:
    """The panel's first line, carrying the style sheet."""
    runs = ", ".join(esc(r) for r in run_ids)
    return f"{CSS}<b>evalnb review</b> · run {runs} · reviewer <b>{esc(annotator)}</b>"


def message(text: str, *, error: bool = False) -> str:
    """A status line; ``text`` is HTML, so callers escape what they put in it."""
    kind = "nb-fail" if error else "nb-quiet"
    return f"<span class='{kind}'>{text}</span>"


def unsaved(text: str) -> str:
    """The note under the reason box when what it holds is not saved."""
    return f"<span class='nb-unsaved'>● reason not saved: {esc(text)}</span>"


def progress(reviewed: int, total: int, at: int, *, yours: bool = False) -> str:
    """``reviewed`` of ``total`` reviewed, and the place ``at`` (0-based) when any;
    ``yours``: the samples are the reviewer's own share (``of your samples``)."""
    place = f" · sample {at + 1} of {total}" if total else ""
    whose = " of your samples" if yours else ""
    return (
        f"&nbsp;<b>{reviewed}</b> of {total}{whose} reviewed<span class='nb-quiet'>{place}</span>"
    )


def live(number: LiveNumber) -> str:
    """The human pass rate so far per variant, with its interval, and the labels to go."""
    if number.rates.empty:
        return (
            "<span class='nb-quiet'>Human pass rate: no verdict yet; each one you give "
            "updates it here.</span>"
        )
    parts = []
    for row in number.rates.itertuples():
        interval = (
            f" [{row.low:.2f}, {row.high:.2f}]"
            if np.isfinite(row.low) and np.isfinite(row.high)
            else ""
        )
        # a corrected rate may step outside [0, 1] with few labels; its interval is cut too
        rate = min(max(float(row.estimate), 0.0), 1.0)
        parts.append(f"{esc(row.variant)} <b>{rate:.2f}</b>{interval}")
    how = "judge corrected by your verdicts (PPI)" if number.method == "PPI" else "your verdicts"
    text = f"Human pass rate ({how}, {number.labels} labels): " + " · ".join(parts)
    if number.scope != "population":
        return f"<span class='evalnb-live-rate'>{text}</span> <i>{esc(number.note)}</i>"
    if np.isfinite(number.more):
        plan = f"about {int(number.more)} more labels for ±{100 * number.target:g} pp"
    elif np.isfinite(number.target):
        plan = (
            f"no number of labels reaches ±{100 * number.target:g} pp: the cases' own "
            "spread is wider"
        )
    else:
        plan = "label samples of two cases or more for an interval"
    shown = f"<span class='evalnb-live-rate'>{text}</span>"
    return f"{shown} — <span class='evalnb-live-plan'>{plan}</span>"


def verdict(annotator: str, given: str | None, reason: str, saved_at: dt.datetime | None) -> str:
    """This annotator's verdict on the shown sample, or that there is none yet."""
    if given is None:
        return f"<div class='nb-quiet'>Not reviewed by {esc(annotator)} yet.</div>"
    stamp = f" · saved {saved_at:%Y-%m-%d %H:%M:%S} UTC" if saved_at is not None else ""
    said = f" — “{esc(reason)}”" if reason else " <span class='nb-quiet'>(no reason)</span>"
    return (
        f"<div>Your verdict: <b class='{_VERDICT_CLASS[given]}'>{given.replace('_', ' ')}</b>"
        f"{said}<span class='nb-quiet'>{stamp}</span></div>"
    )


def header(sample: SampleView, *, several_runs: bool) -> str:
    """The sample's key and status badge; the run is named when there are several."""
    key = sample.key
    badge = "#1a7f37" if sample.status == "completed" else "#cf222e"
    run = f"run <b>{esc(key['run_id'])}</b> · " if several_runs else ""
    return (
        f"<div style='font-size:14px'>{run}case <b>{esc(key['case_id'])}</b> · "
        f"variant <b>{esc(key['variant'])}</b> · repeat <b>{int(key['repeat'])}</b> "
        f"<span class='nb-badge' style='background:{badge}'>{esc(sample.status)}</span></div>"
    )


def body(sample: SampleView) -> str:
    """The prompt, answer and tool actions in a box that scrolls, and beside it (below
    it when the panel is narrow) the review instruction and the check outcomes, which
    stay in view however long the answer is."""
    review = sample.review
    if _missing(sample.answer):
        text = f"No answer (status {esc(sample.status)})"
        if not _missing(sample.error):
            text += f": {esc(sample.error)}"
        answer = f"<div class='nb-box nb-fail'>{text}</div>"
    else:
        answer = _pre(sample.answer)
    read = (
        _section("Prompt as sent", _pre(sample.prompt), "nb-prompt")
        + _section("Answer", answer, "nb-answer")
        + _section("Tool actions", _actions(sample.requested, sample.executed))
    )
    instruction = (
        esc(review)
        if not _missing(review) and review != ""
        else "<em>No review instruction for this case.</em>"
    )
    judge = _section(
        "Review instruction", f"<div class='nb-box nb-review'>{instruction}</div>"
    ) + _section("Checks", _checks(sample.checks), "nb-check-results")
    return (
        f"<div class='nb-sample'><div class='nb-read'>{read}</div>"
        f"<div class='nb-judge'>{judge}</div></div>"
    )


def side_by_side(
    shown: SampleView,
    other: SampleView | None,
    pair: tuple[str, str],
    verdicts: tuple[str | None, str | None],
) -> str:
    """The shown sample and its partner (same case and repeat, the other variant of
    ``pair``) in two columns, ``pair[0]`` on the left; the shown one is outlined.
    ``verdicts`` are this reviewer's verdicts on (shown, other)."""
    review = shown.review
    instruction = (
        esc(review) if not _missing(review) and review != "" else "<em>No review instruction.</em>"
    )
    columns = [(shown, verdicts[0], True), (other, verdicts[1], False)]
    if shown.key["variant"] != pair[0]:
        columns.reverse()
    cells = []
    for side, (sample, given, current) in zip(pair, columns, strict=True):
        if sample is None:
            cells.append(
                f"<td class='nb-side'><div class='nb-title'>{esc(side)}</div>"
                "<div class='nb-box'><i>No sample of this variant for this case and "
                "repeat.</i></div></td>"
            )
            continue
        mark = "nb-side nb-current" if current else "nb-side"
        state = (
            "<span class='nb-quiet'>not reviewed</span>"
            if given is None
            else f"<b class='{_VERDICT_CLASS[given]}'>{given.replace('_', ' ')}</b>"
        )
        badge = "#1a7f37" if sample.status == "completed" else "#cf222e"
        if _missing(sample.answer):
            error = "" if _missing(sample.error) else f": {esc(sample.error)}"
            answer = f"<div class='nb-box nb-fail'>No answer ({esc(sample.status)}){error}</div>"
        else:
            answer = _pre(sample.answer)
        # The checks first: the answer under them scrolls, they do not.
        cells.append(
            f"<td class='{mark}'><div class='nb-side-head'>variant <b>{esc(side)}</b> "
            f"<span class='nb-badge' style='background:{badge}'>{esc(sample.status)}</span> "
            f"· {state}{' · <b>shown</b>' if current else ''}</div>"
            f"{_section('Checks', _checks(sample.checks), 'nb-check-results')}"
            f"{_section('Answer', answer, 'nb-answer')}"
            f"{_section('Prompt as sent', _pre(sample.prompt), 'nb-prompt')}</td>"
        )
    return (
        _section("Review instruction", f"<div class='nb-box nb-review'>{instruction}</div>")
        + f"<table class='nb-pair'><tr>{''.join(cells)}</tr></table>"
    )


def _checks(checks: Sequence[tuple[Any, Any, Any]]) -> str:
    if not checks:
        return "<div class='nb-box'><i>No check results for this sample.</i></div>"
    marks = {True: ("✓", "pass", "nb-pass"), False: ("✗", "fail", "nb-fail")}
    lines = []
    for name, outcome, detail in checks:
        mark, word, kind = marks.get(outcome, ("–", "unscored", "nb-quiet"))
        # The detail (a judge's explanation) on its own line: it fits a narrow column.
        said = "" if _missing(detail) or detail == "" else esc(detail)
        lines.append(
            f"<li class='{kind}'><b>{mark}</b> <code>{esc(name)}</code> {word}"
            + (f"<div class='nb-detail'>{said}</div>" if said else "")
            + "</li>"
        )
    return f"<ul class='nb-box nb-checks'>{''.join(lines)}</ul>"


def _actions(requested: list[dict[str, Any]], executed: list[dict[str, Any]]) -> str:
    if not requested and not executed:
        return "<div class='nb-box'><i>No tool calls requested or executed.</i></div>"
    return (
        "<table class='nb-box nb-actions'><tr><th>requested by the model</th>"
        "<th>executed by the application</th></tr>"
        f"<tr><td>{_listing(requested, ran=False)}</td>"
        f"<td>{_listing(executed, ran=True)}</td></tr></table>"
    )


def _listing(actions: list[dict[str, Any]], *, ran: bool) -> str:
    if not actions:
        return "<i>none</i>"
    items = []
    for action in actions:
        call = f"<code>{esc(action.get('tool'))}({esc(action.get('arguments'))})</code>"
        if not ran:
            items.append(f"<li>{call}</li>")
            continue
        outcome = (
            "<span class='nb-fail'>error</span>"
            if action.get("error")
            else "<span class='nb-pass'>ok</span>"
        )
        result = action.get("result")
        shown = ""
        if not _missing(result) and result != "":
            text = str(result)
            more = len(text) - _RESULT_CHARS
            clipped = text[:_RESULT_CHARS] + (f" … ({more} more characters)" if more > 0 else "")
            shown = f"<pre class='nb-pre nb-result'>{esc(clipped)}</pre>"
        items.append(f"<li>{call} → {outcome}{shown}</li>")
    return f"<ol>{''.join(items)}</ol>"


def _section(name: str, content: str, kind: str = "") -> str:
    """A titled part; ``kind`` is its class (tests and the style sheet find it by it)."""
    return f"<div class='nb-part {kind}'><div class='nb-title'>{name}</div>{content}</div>"


def _pre(text: Any) -> str:
    return f"<div class='nb-box'><pre class='nb-pre'>{esc(text)}</pre></div>"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
