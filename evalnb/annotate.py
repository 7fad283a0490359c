"""The review panel: one sample at a time, a verdict and a reason, saved at each click.

:func:`annotate` shows a sample as the reviewer needs it (case, variant, repeat; the
prompt as sent; the tool actions requested and executed; the answer; the case's review
instruction; the check outcomes; this reviewer's earlier verdict) with buttons for
``pass``, ``fail`` and ``needs_review``. Each click writes its own verdicts part
(:mod:`evalnb.verdicts`) before the panel moves on, so a kernel that dies loses
nothing clicked; a new panel resumes at the first sample not yet reviewed.

Every string that a model or a cases file wrote goes through :func:`html.escape` before
it reaches an ``HTML`` widget, whose front end sets ``innerHTML``: an answer holding
``<img src=x onerror=...>`` is shown as text and runs nothing. Dropdown labels are set
as text by ipywidgets itself.

Filters are applied once per change into an index of samples; moving between samples
only steps through that index, so a click costs the same on a run of 100,000 samples
as on a run of 100.
"""

from __future__ import annotations

import datetime as dt
import html
import os
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np
import pandas as pd

from evalnb.analysis._tally import sample_positions
from evalnb.analysis.calibrate import check_outcomes
from evalnb.analysis.frames import Run, load
from evalnb.store import SAMPLES_SCHEMA
from evalnb.verdicts import VERDICTS, VerdictStore, latest_verdicts, verdict_history

__all__ = ["Annotator", "annotate"]

_CODES = {verdict: code for code, verdict in enumerate(VERDICTS)}
_NONE = -1
_FAIL, _PASS = 0, 1
# Big text columns nobody filters on; `where=` strings see every other samples column.
_HEAVY = {"request", "response", "stdout", "stderr", "trace", "tool_calls"}
_SHOWN = ["status", "error", "prompt", "answer", "requested", "executed"]
_RESULT_CHARS = 600
_SCAN = 1024

KEYS = {
    "p": "pass",
    "f": "fail",
    "r": "needs review",
    "j": "next",
    "k": "previous",
    "u": "unreviewed",
}

# One style sheet, scoped to the panel, instead of inline styles on every update.
_CSS = """
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
.evalnb-annotator .nb-checks td {padding:1px 10px 1px 0; vertical-align:top}
.evalnb-annotator .nb-actions {width:100%; border-collapse:collapse}
.evalnb-annotator .nb-actions td, .evalnb-annotator .nb-actions th {vertical-align:top;
  text-align:left; padding:0 12px 0 0; width:50%}
.evalnb-annotator ol {margin:0; padding-left:1.6em}
</style>
"""


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


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


class Annotator(widgets.VBox):
    """The panel :func:`annotate` returns (an ipywidgets ``VBox``).

    Its controls are attributes, so a script or a test can drive it like a person:
    ``pass_button``, ``fail_button``, ``needs_review_button``, ``reason``,
    ``previous_button``, ``next_button``, ``next_unreviewed_button``, the filters
    ``variant_filter``, ``case_filter``, ``failing_only``, ``unreviewed_only``,
    ``disagreements_only``, and ``shortcuts`` (a box that takes one-letter keys).
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
        if not isinstance(annotator, str) or not annotator.strip():
            raise ValueError(
                f"'annotator' must be a non-empty string (the reviewer's name); got {annotator!r}"
            )
        if not isinstance(advance, bool):
            raise TypeError(f"'advance' must be True or False; got {advance!r}")
        self.run = run if isinstance(run, Run) else load(run)
        self.annotator = annotator.strip()
        self.advance = advance
        self._stores = {run_id: VerdictStore(path) for run_id, path in self.run.paths.items()}
        self._index = np.zeros(0, dtype=np.int64)
        self._at = 0
        self._prepare(where, check)
        self._build()
        self._refilter()

    # -- data, prepared once --------------------------------------------------------------

    def _prepare(self, where: Any, check: str | None) -> None:
        run = self.run
        wanted = list(_SHOWN)
        if isinstance(where, str) or callable(where):
            wanted += [c for c in _where_columns() if c not in wanted]
        # One read of every column used: all positions below refer to this snapshot.
        samples = run.table("samples", wanted)
        self._samples = samples
        universe = _select(samples, where)
        codes = [samples[c].cat.codes.to_numpy() for c in ("run_id", "case_id", "variant")]
        repeat = samples["repeat"].to_numpy()
        order = np.lexsort((repeat[universe], *(c[universe] for c in reversed(codes))))
        self._positions = universe[order]
        pos = self._positions
        self._case_codes = codes[1][pos]
        self._variant_codes = codes[2][pos]

        every, rows = check_outcomes(run, None)
        self._failing = every[pos] == _FAIL
        machine = every if check is None else check_outcomes(run, check)[0]
        self._machine = machine[pos]
        rows = rows.sort_values("position", kind="stable")
        self._check_at = rows["position"].to_numpy()
        self._check_name = rows["check"].astype(str).to_numpy(dtype=object)
        self._check_outcome = (
            rows["outcome"].astype("boolean").to_numpy(dtype=object, na_value=None)
        )
        self._check_detail = rows["detail"].to_numpy(dtype=object)

        cases = run.cases
        self._review = {
            (str(r), str(c)): v
            for r, c, v in zip(cases["run_id"], cases["case_id"], cases["review"], strict=True)
        }
        self._answer = samples["answer"].to_numpy(dtype=object)
        self._prompt = samples["prompt"].to_numpy(dtype=object)
        self._status = samples["status"].astype(str).to_numpy(dtype=object)
        self._error = samples["error"].to_numpy(dtype=object)
        self._requested = samples["requested"]
        self._executed = samples["executed"]
        self._load_verdicts()

    def _load_verdicts(self) -> None:
        """This annotator's latest verdicts, read fresh from disk (a panel resumes)."""
        n = len(self._samples)
        self._verdict = np.full(n, _NONE, dtype=np.int8)
        self._reason: dict[int, str] = {}
        self._saved_at: dict[int, dt.datetime] = {}
        history = verdict_history(list(self.run.paths.values()), annotator=self.annotator)
        latest = latest_verdicts(history)
        if latest.empty:
            return
        for column in ("run_id", "case_id", "variant"):
            latest[column] = latest[column].astype("category")
        where = sample_positions(self._samples, latest)
        found = where >= 0
        latest = latest[found]
        where = where[found]
        self._verdict[where] = latest["verdict"].map(_CODES).to_numpy(dtype=np.int8)
        self._reason.update(zip(where.tolist(), latest["reason"].fillna(""), strict=True))
        self._saved_at.update(zip(where.tolist(), latest["created_at"], strict=True))

    # -- widgets --------------------------------------------------------------------------

    def _build(self) -> None:
        run = self.run
        samples = self._samples
        variants = list(samples["variant"].cat.categories)
        case_ids = list(samples["case_id"].cat.categories)
        present_variants = set(self._variant_codes.tolist())
        present_cases = set(self._case_codes.tolist())
        self.variant_filter = widgets.Dropdown(
            options=[("all variants", -1)]
            + [(str(v), i) for i, v in enumerate(variants) if i in present_variants],
            value=-1,
            description="variant",
            layout=widgets.Layout(width="auto"),
        )
        self.case_filter = widgets.Dropdown(
            options=[("all cases", -1)]
            + [(str(c), i) for i, c in enumerate(case_ids) if i in present_cases],
            value=-1,
            description="case",
            layout=widgets.Layout(width="auto"),
        )
        checkbox = {"indent": False, "layout": widgets.Layout(width="auto", margin="0 12px 0 0")}
        self.failing_only = widgets.Checkbox(description="failing checks only", **checkbox)
        self.unreviewed_only = widgets.Checkbox(description="unreviewed only", **checkbox)
        self.disagreements_only = widgets.Checkbox(description="verdict ≠ checks", **checkbox)
        for control in (
            self.variant_filter,
            self.case_filter,
            self.failing_only,
            self.unreviewed_only,
            self.disagreements_only,
        ):
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
        button = {"layout": widgets.Layout(width="130px")}
        self.pass_button = widgets.Button(
            description="Pass", button_style="success", icon="check", **button
        ).add_class("evalnb-pass")
        self.fail_button = widgets.Button(
            description="Fail", button_style="danger", icon="times", **button
        ).add_class("evalnb-fail")
        self.needs_review_button = widgets.Button(
            description="Needs review", button_style="warning", icon="question", **button
        ).add_class("evalnb-needs-review")
        self.pass_button.on_click(lambda _: self.record("pass"))
        self.fail_button.on_click(lambda _: self.record("fail"))
        self.needs_review_button.on_click(lambda _: self.record("needs_review"))

        nav = {"layout": widgets.Layout(width="auto")}
        self.previous_button = widgets.Button(
            description="Previous", icon="arrow-left", **nav
        ).add_class("evalnb-previous")
        self.next_button = widgets.Button(description="Next", icon="arrow-right", **nav).add_class(
            "evalnb-next"
        )
        self.next_unreviewed_button = widgets.Button(
            description="Next unreviewed", icon="forward", **nav
        ).add_class("evalnb-next-unreviewed")
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

        who = _esc(self.annotator)
        runs = ", ".join(_esc(r) for r in run.run_ids)
        title = widgets.HTML(
            f"{_CSS}<b>evalnb review</b> · run {runs} · reviewer <b>{who}</b>"
        ).add_class("evalnb-title")
        filters = widgets.HBox(
            [
                self.variant_filter,
                self.case_filter,
                self.failing_only,
                self.unreviewed_only,
                self.disagreements_only,
            ],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        top = widgets.HBox(
            [self.header, widgets.HBox([self.progress, self.progress_label])],
            layout=widgets.Layout(justify_content="space-between", align_items="center"),
        )
        verdicts = widgets.HBox(
            [self.pass_button, self.fail_button, self.needs_review_button],
            layout=widgets.Layout(margin="4px 0"),
        )
        navigation = widgets.HBox(
            [self.previous_button, self.next_button, self.next_unreviewed_button, self.shortcuts],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        super().__init__(
            [
                title,
                filters,
                top,
                self.body,
                self.earlier,
                self.reason,
                verdicts,
                navigation,
                self.status,
            ],
            layout=widgets.Layout(
                border="1px solid var(--jp-border-color1, #ccc)",
                padding="8px 12px",
                max_width="1000px",
            ),
        )
        self.add_class("evalnb-annotator")

    # -- filtering: once per change ------------------------------------------------------

    def _on_filter(self, _change: Any) -> None:
        self._refilter()

    def _refilter(self) -> None:
        keep = np.ones(len(self._positions), dtype=bool)
        if self.variant_filter.value >= 0:
            keep &= self._variant_codes == self.variant_filter.value
        if self.case_filter.value >= 0:
            keep &= self._case_codes == self.case_filter.value
        verdict = self._verdict[self._positions]
        if self.failing_only.value:
            keep &= self._failing
        if self.unreviewed_only.value:
            keep &= verdict == _NONE
        if self.disagreements_only.value:
            human_pass = verdict == _CODES["pass"]
            human_fail = verdict == _CODES["fail"]
            keep &= (human_pass & (self._machine == _FAIL)) | (
                human_fail & (self._machine == _PASS)
            )
        current = self.current_position
        self._index = np.flatnonzero(keep)
        self._reviewed = int((verdict[self._index] != _NONE).sum())
        self.progress.max = max(len(self._index), 1)
        if current is not None:
            # Stay on the sample shown when it is still in the selection.
            at = int(np.searchsorted(self._index, current))
            if at < len(self._index) and self._index[at] == current:
                self._show(at)
                return
        first = self._find_unreviewed(0)
        self._show(0 if first is None else first)

    # -- moving: O(1) per click -----------------------------------------------------------

    @property
    def count(self) -> int:
        """Samples in the current selection."""
        return len(self._index)

    @property
    def reviewed(self) -> int:
        """Samples in the current selection this annotator has given a verdict."""
        return self._reviewed

    @property
    def current_position(self) -> int | None:
        """Position of the shown sample in the panel's sorted samples (None when none)."""
        if not len(self._index):
            return None
        return int(self._index[self._at])

    @property
    def current(self) -> dict[str, Any] | None:
        """The key of the shown sample (``run_id``, ``case_id``, ``variant``, ``repeat``)."""
        if not len(self._index):
            return None
        return self._key(int(self._positions[self._index[self._at]]))

    def _key(self, row: int) -> dict[str, Any]:
        samples = self._samples
        return {
            "run_id": str(samples["run_id"].iat[row]),
            "case_id": str(samples["case_id"].iat[row]),
            "variant": str(samples["variant"].iat[row]),
            "repeat": int(samples["repeat"].iat[row]),
        }

    def go(self, at: int) -> None:
        """Show the sample at place ``at`` (0-based) of the current selection."""
        if not isinstance(at, int | np.integer) or not 0 <= at < max(len(self._index), 1):
            raise ValueError(
                f"'at' must be between 0 and {max(len(self._index) - 1, 0)}; got {at!r}"
            )
        self._show(int(at))

    def next(self) -> None:
        """Show the next sample of the selection."""
        if self._at + 1 < len(self._index):
            self._show(self._at + 1)

    def previous(self) -> None:
        """Show the previous sample of the selection."""
        if self._at > 0:
            self._show(self._at - 1)

    def next_unreviewed(self) -> None:
        """Show the next sample without a verdict, wrapping round to the start."""
        found = self._find_unreviewed(self._at + 1)
        if found is None:
            found = self._find_unreviewed(0)
        if found is None:
            self._say("Every sample in this selection has a verdict from you.")
            return
        self._show(found)

    def _find_unreviewed(self, start: int) -> int | None:
        # Look ahead a block at a time: the next unreviewed sample is nearly always close.
        index, positions, verdict = self._index, self._positions, self._verdict
        while start < len(index):
            block = index[start : start + _SCAN]
            free = np.flatnonzero(verdict[positions[block]] == _NONE)
            if len(free):
                return start + int(free[0])
            start += _SCAN
        return None

    # -- saving ---------------------------------------------------------------------------

    def record(self, verdict: str) -> None:
        """Save ``verdict`` (``pass``, ``fail`` or ``needs_review``) with the reason typed
        for the shown sample: one new verdicts part, written before anything else."""
        if verdict not in _CODES:
            options = ", ".join(repr(v) for v in VERDICTS)
            raise ValueError(f"'verdict' must be one of {options}; got {verdict!r}")
        key = self.current
        if key is None:
            self._say("No sample is shown: change the filters.")
            return
        row = int(self._positions[self._index[self._at]])
        reason = self.reason.value.strip()
        try:
            saved = self._stores[key["run_id"]].save(
                key["case_id"],
                key["variant"],
                key["repeat"],
                annotator=self.annotator,
                verdict=verdict,
                reason=reason,
            )
        except OSError as exc:
            self._say(f"NOT SAVED: {exc}", error=True)
            return
        if self._verdict[row] == _NONE:
            self._reviewed += 1
        self._verdict[row] = _CODES[verdict]
        self._reason[row] = reason
        self._saved_at[row] = saved["created_at"]
        self._forget_cached_verdicts()
        label = f"{key['case_id']} · {key['variant']} · repeat {key['repeat']}"
        self._say(f"Saved <b>{_esc(verdict)}</b> for {_esc(label)}.")
        if self.advance and self._at + 1 < len(self._index):
            self._show(self._at + 1)
        else:
            self._show_verdict(row)
            self._show_progress()

    def _forget_cached_verdicts(self) -> None:
        # The Run read its verdicts table before this save; drop it so that
        # rates(run, source="verdicts") and calibrate(run) see the new verdict.
        self.run._tables.pop("verdicts", None)
        for key in [k for k in self.run._derived if isinstance(k, tuple) and "verdict" in k[0]]:
            del self.run._derived[key]

    # -- keys and reason ------------------------------------------------------------------

    def _on_key(self, change: Any) -> None:
        typed = change["new"]
        if not typed:
            return
        self.shortcuts.value = ""
        # Each keystroke arrives as its own update, so the last letter is the new key.
        key = typed[-1].lower()
        actions: dict[str, Callable[[], None]] = {
            "p": lambda: self.record("pass"),
            "f": lambda: self.record("fail"),
            "r": lambda: self.record("needs_review"),
            "j": self.next,
            "k": self.previous,
            "u": self.next_unreviewed,
        }
        action = actions.get(key)
        if action is None:
            self._say(f"Key {_esc(key)} does nothing here; keys: {_esc(_key_help())}")
            return
        action()

    def _on_reason(self, _change: Any) -> None:
        row = self._row()
        if row is None or self._verdict[row] == _NONE:
            return
        if self.reason.value.strip() != self._reason.get(row, ""):
            self._say("The reason changed: click a verdict to save it.")

    # -- display --------------------------------------------------------------------------

    def _row(self) -> int | None:
        if not len(self._index):
            return None
        return int(self._positions[self._index[self._at]])

    def _say(self, message: str, *, error: bool = False) -> None:
        """Show ``message`` (HTML: callers escape what they put in it)."""
        kind = "nb-fail" if error else "nb-quiet"
        self.status.value = f"<span class='{kind}'>{message}</span>"

    def _show(self, at: int) -> None:
        self._at = at
        row = self._row()
        disabled = row is None
        for control in (self.pass_button, self.fail_button, self.needs_review_button):
            control.disabled = disabled
        self.previous_button.disabled = disabled or at == 0
        self.next_button.disabled = disabled or at + 1 >= len(self._index)
        self._show_progress()
        if row is None:
            self.header.value = "<b>No samples match these filters.</b>"
            self.body.value = ""
            self.earlier.value = ""
            self.reason.value = ""
            return
        self.header.value = self._header_html(row)
        self.body.value = self._body_html(row)
        self._show_verdict(row)
        self.reason.value = self._reason.get(row, "")
        self.status.value = ""

    def _show_progress(self) -> None:
        total = len(self._index)
        self.progress.value = self._reviewed
        place = f" · sample {self._at + 1} of {total}" if total else ""
        self.progress_label.value = (
            f"&nbsp;<b>{self._reviewed}</b> of {total} reviewed"
            f"<span class='nb-quiet'>{place}</span>"
        )

    def _show_verdict(self, row: int) -> None:
        code = int(self._verdict[row])
        labels = {
            self.pass_button: ("Pass", "pass"),
            self.fail_button: ("Fail", "fail"),
            self.needs_review_button: ("Needs review", "needs_review"),
        }
        for button, (label, verdict) in labels.items():
            button.description = f"{label} ✓" if code == _CODES[verdict] else label
        if code == _NONE:
            self.earlier.value = (
                f"<div class='nb-quiet'>Not reviewed by {_esc(self.annotator)} yet.</div>"
            )
            return
        verdict = VERDICTS[code]
        when = self._saved_at.get(row)
        stamp = f" · saved {when:%Y-%m-%d %H:%M:%S} UTC" if when is not None else ""
        reason = self._reason.get(row, "")
        said = f" — “{_esc(reason)}”" if reason else " <span class='nb-quiet'>(no reason)</span>"
        kind = {"pass": "nb-pass", "fail": "nb-fail", "needs_review": "nb-review-verdict"}[verdict]
        self.earlier.value = (
            f"<div>Your verdict: <b class='{kind}'>{verdict.replace('_', ' ')}</b>{said}"
            f"<span class='nb-quiet'>{stamp}</span></div>"
        )

    def _header_html(self, row: int) -> str:
        key = self._key(row)
        status = self._status[row]
        badge = "#1a7f37" if status == "completed" else "#cf222e"
        run = f"run <b>{_esc(key['run_id'])}</b> · " if len(self.run.run_ids) > 1 else ""
        return (
            f"<div style='font-size:14px'>{run}case <b>{_esc(key['case_id'])}</b> · "
            f"variant <b>{_esc(key['variant'])}</b> · repeat <b>{int(key['repeat'])}</b> "
            f"<span class='nb-badge' style='background:{badge}'>{_esc(status)}</span></div>"
        )

    def _body_html(self, row: int) -> str:
        key = self._key(row)
        review = self._review.get((key["run_id"], key["case_id"]))
        parts = [
            _section(
                "Review instruction",
                "<div class='nb-box nb-review'>"
                + (_esc(review) if review else "<i>No review instruction for this case.</i>")
                + "</div>",
            ),
            _section("Prompt as sent", _pre(self._prompt[row])),
        ]
        answer = self._answer[row]
        if _missing(answer):
            error = self._error[row]
            text = f"No answer (status {_esc(self._status[row])})"
            if not _missing(error):
                text += f": {_esc(error)}"
            parts.append(_section("Answer", f"<div class='nb-box nb-fail'>{text}</div>"))
        else:
            parts.append(_section("Answer", _pre(answer)))
        parts.append(
            _section(
                "Tool actions",
                _actions_html(_listed(self._requested.iat[row]), _listed(self._executed.iat[row])),
            )
        )
        parts.append(_section("Checks", self._checks_html(row)))
        return "".join(parts)

    def _checks_html(self, row: int) -> str:
        start = int(np.searchsorted(self._check_at, row, side="left"))
        end = int(np.searchsorted(self._check_at, row, side="right"))
        if start == end:
            return "<div class='nb-box'><i>No check results for this sample.</i></div>"
        marks = {True: ("✓", "pass", "nb-pass"), False: ("✗", "fail", "nb-fail")}
        lines = []
        for i in range(start, end):
            outcome = self._check_outcome[i]
            mark, word, kind = marks.get(outcome, ("–", "unscored", "nb-quiet"))
            detail = self._check_detail[i]
            lines.append(
                f"<tr class='{kind}'><td><b>{mark}</b></td>"
                f"<td><code>{_esc(self._check_name[i])}</code></td><td>{word}</td>"
                f"<td>{'' if _missing(detail) else _esc(detail)}</td></tr>"
            )
        return f"<table class='nb-box nb-checks'>{''.join(lines)}</table>"


def _section(title: str, content: str) -> str:
    return f"<div class='nb-title'>{title}</div>{content}"


def _pre(text: Any) -> str:
    return f"<div class='nb-box'><pre class='nb-pre'>{_esc(text)}</pre></div>"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def _listed(value: Any) -> list[dict[str, Any]]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return list(value)


def _actions_html(requested: list[dict[str, Any]], executed: list[dict[str, Any]]) -> str:
    if not requested and not executed:
        return "<div class='nb-box'><i>No tool calls requested or executed.</i></div>"

    def listing(actions: list[dict[str, Any]], *, ran: bool) -> str:
        if not actions:
            return "<i>none</i>"
        items = []
        for action in actions:
            call = f"<code>{_esc(action.get('tool'))}({_esc(action.get('arguments'))})</code>"
            if ran:
                failed = action.get("error")
                outcome = (
                    "<span class='nb-fail'>error</span>"
                    if failed
                    else "<span class='nb-pass'>ok</span>"
                )
                result = action.get("result")
                shown = ""
                if not _missing(result) and result != "":
                    text = str(result)
                    more = len(text) - _RESULT_CHARS
                    clipped = text[:_RESULT_CHARS] + (
                        f" … ({more} more characters)" if more > 0 else ""
                    )
                    shown = f"<pre class='nb-pre nb-result'>{_esc(clipped)}</pre>"
                items.append(f"<li>{call} → {outcome}{shown}</li>")
            else:
                items.append(f"<li>{call}</li>")
        return f"<ol>{''.join(items)}</ol>"

    return (
        "<table class='nb-box nb-actions'><tr><th>requested by the model</th>"
        "<th>executed by the application</th></tr>"
        f"<tr><td>{listing(requested, ran=False)}</td>"
        f"<td>{listing(executed, ran=True)}</td></tr></table>"
    )


def _key_help() -> str:
    return ", ".join(f"{k} {label}" for k, label in KEYS.items())


def _where_columns() -> list[str]:
    return [c for c in SAMPLES_SCHEMA.names if c not in _HEAVY]


def _select(samples: pd.DataFrame, where: Any) -> np.ndarray:
    """Positions (in ``samples``) of the samples ``where`` keeps."""
    everyone = np.arange(len(samples))
    if where is None:
        return everyone
    if isinstance(where, str):
        try:
            kept = samples.query(where)
        except Exception as exc:
            raise ValueError(f"'where' query {where!r} failed on the samples frame: {exc}") from exc
        return samples.index.get_indexer(kept.index)
    if isinstance(where, pd.DataFrame):
        return _select_keys(samples, where)
    if callable(where):
        return _mask(where(samples), len(samples), "what the 'where' function returned")
    if isinstance(where, pd.Series | np.ndarray | list):
        return _mask(where, len(samples), "'where'")
    raise TypeError(
        "'where' must be None, a query string, a function of the samples frame, a boolean "
        f"mask over run.samples, or a frame of sample keys; got {type(where).__name__}"
    )


def _mask(mask: Any, n: int, what: str) -> np.ndarray:
    values = np.asarray(mask)
    if values.dtype != bool or values.shape != (n,):
        raise ValueError(
            f"{what} must be a boolean mask with one value per sample ({n}); "
            f"got dtype {values.dtype} and shape {values.shape}"
        )
    return np.flatnonzero(values)


def _select_keys(samples: pd.DataFrame, keys: pd.DataFrame) -> np.ndarray:
    needed = ["case_id", "variant", "repeat"]
    missing = [c for c in needed if c not in keys.columns]
    if missing:
        raise ValueError(
            f"a 'where' frame must hold sample keys (case_id, variant, repeat[, run_id]); "
            f"missing {missing!r}"
        )
    on = ["run_id", *needed] if "run_id" in keys.columns else needed
    left = samples[on].astype({c: object for c in on if c != "repeat"})
    right = keys[on].astype({c: object for c in on if c != "repeat"}).drop_duplicates()
    right = right.astype({"repeat": left["repeat"].dtype})
    matched = left.reset_index().merge(right, on=on, how="inner")["index"].to_numpy()
    return np.sort(matched)
