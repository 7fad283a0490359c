"""The run report's sections (rates, suite rate, comparison and latency) and the three forms
they are written in: terminal text, HTML, or Markdown (a CI job's summary page, e.g.
``$GITHUB_STEP_SUMMARY``).

The report never shows raw answers, prompts or model output: only ids, names, counts
and statistics. Text and HTML are rendered from the same sections; the HTML page also
embeds the plots (PNG, base64), so it stays one self-contained file. A per-case figure
shows the ``FIGURE_CASES`` cases to look at first and the tables list up to ``MAX_CASES``:
matplotlib's time grows with every row drawn, and it is most of the page's time.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pandas as pd

from evalnb._prices import Prices
from evalnb.analysis import (
    Run,
    _args,
    agreement,
    compare,
    compare_cases,
    costs,
    latency,
    rates,
    suite_rate,
)
from evalnb.analysis import _display as display
from evalnb.analysis._flaky import case_verdicts
from evalnb.analysis._format import interval_text, number, share, signed, text_table
from evalnb.analysis._sequence import is_sequential
from evalnb.analysis._stopped import holds_stopped
from evalnb.analysis._story import story
from evalnb.analysis._tally import ALL
from evalnb.report._preference import preference_section

__all__ = ["Section", "markdown_table"]

#: Per-case rows shown before the rest is summarised.
MAX_CASES = 100
#: Cases listed under "cases that moved most".
MAX_MOVED = 10
#: Rows of a per-case figure: the lowest rates, the least agreement, the largest moves.
FIGURE_CASES = 20


@dataclass
class Plot:
    """A figure of the HTML report: ``draw()`` calls one of :mod:`evalnb.plots`."""

    alt: str
    draw: Callable[[], Any]


@dataclass
class Section:
    """One titled table of the report, already formatted as strings."""

    title: str
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    #: The section's conclusions in one sentence each: gathered at the top of the report.
    verdicts: list[str] = field(default_factory=list)
    #: Sentences shown before the table (the verdicts section has no table).
    lines: list[str] = field(default_factory=list)

    def says_nothing(self) -> bool:
        return self.table.empty and not self.lines


def _verdicts_section(sections: list[Section]) -> Section:
    """The conclusions first: every section's verdict sentences, before any table."""
    lines = [line for section in sections for line in section.verdicts]
    return Section("Verdicts", pd.DataFrame(), lines=lines)


def _rate_columns(frame: pd.DataFrame, level: float, n: str | None = "n") -> dict[str, Any]:
    """The columns every rate table shows: ``passed`` (``k`` of the ``n`` column; none
    when ``n`` is None), ``rate`` and its ``interval`` at ``level``."""
    columns: dict[str, Any] = {}
    if n is not None:
        columns["passed"] = [share(k, m) for k, m in zip(frame["k"], frame[n], strict=True)]
    columns["rate"] = frame["estimate"].map(number)
    columns["interval"] = [
        interval_text(lo, hi, level) for lo, hi in zip(frame["low"], frame["high"], strict=True)
    ]
    return columns


def _history_section(frame: pd.DataFrame, priced: bool) -> Section:
    level = float(frame["level"].iloc[0])
    shown = pd.DataFrame(
        {
            "run": frame["run_id"].astype(str),
            "started": frame["started_at"].map(lambda t: f"{t:%Y-%m-%d %H:%M}"),
            "status": frame["status"].astype(str),
            "variant": frame["variant"].astype(str),
            "model": frame["model"].astype(str),
            "cases": frame["cases"].map(lambda v: "" if pd.isna(v) else f"{v:g}"),
            "repeats": frame["repeats"].map(lambda v: "" if pd.isna(v) else f"{v:.3g}"),
            **_rate_columns(frame, level, n=None),
            "vs previous": [
                "" if pd.isna(d) else f"{signed(d)} ({interval_text(lo, hi, level)})"
                for d, lo, hi in zip(
                    frame["diff"], frame["diff_low"], frame["diff_high"], strict=True
                )
            ],
            "change": frame["change"].fillna("").astype(str),
        }
    )
    if priced:
        shown["cost $"] = frame["cost"].map(lambda v: "" if pd.isna(v) else f"{v:.6f}")
    notes = [
        "rate: suite rate of each run (mean of per-case rates, interval across cases); "
        "change: each run against the run before it, paired per case on the cases both "
        "ran (compare_runs); 'no change shown' is not proof of no change",
        f"server: {', '.join(sorted(set(frame['server'].astype(str))))}",
    ]
    notes += sorted({f"{r.run_id}, {r.variant}: {r.note}" for r in frame.itertuples() if r.note})
    draw = Plot(
        "Suite rate of each run per variant with its interval; rings mark the moves found",
        lambda: _plots().plot_history(frame),
    )
    return Section("History", shown, notes, [draw])


def _text(title: str, sections: list[Section]) -> str:
    lines = [title, "=" * len(title)]
    for section in sections:
        lines += ["", section.title, "-" * len(section.title), *section.lines]
        if section.says_nothing():
            lines.append("(nothing to show)")
        elif not section.table.empty:
            lines.append(text_table(section.table))
        lines += [f"note: {note}" for note in section.notes]
    return "\n".join(lines) + "\n"


def _markdown(title: str, sections: list[Section]) -> str:
    lines = [f"## {_markdown_text(title)}"]
    for section in sections:
        lines += ["", f"### {_markdown_text(section.title)}", ""]
        lines += [f"- {_markdown_text(line)}" for line in section.lines]
        if section.says_nothing():
            lines.append("(nothing to show)")
        elif not section.table.empty:
            lines.append(markdown_table(section.table))
        if section.notes:
            lines.append("")
            lines += [f"- {_markdown_text(note)}" for note in section.notes]
    return "\n".join(lines) + "\n"


def markdown_table(frame: pd.DataFrame) -> str:
    """A frame as a GitHub-flavoured Markdown table, every cell escaped."""
    header = [_markdown_cell(c) for c in frame.columns]
    rows = [[_markdown_cell(v) for v in row] for row in frame.itertuples(index=False)]
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def _markdown_cell(value: Any) -> str:
    text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
    return _markdown_text(text).replace("|", "\\|")


def _markdown_text(text: str) -> str:
    """One line of text shown as written: Markdown and HTML characters escaped."""
    flat = " ".join(str(text).split())
    flat = html.escape(flat, quote=False)
    return "".join("\\" + c if c in "\\`*_[]#" else c for c in flat)


def _html(title: str, sections: list[Section], processes: int = 1) -> str:
    images = iter(_images([p for s in sections for p in s.plots], processes))
    body = [f"<h1>{html.escape(title)}</h1>"]
    for section in sections:
        body.append(f"<h2>{html.escape(section.title)}</h2>")
        body += [f"<p class='verdict'>{html.escape(line)}</p>" for line in section.lines]
        if section.says_nothing():
            body.append("<p>(nothing to show)</p>")
        elif not section.table.empty:
            body.append(section.table.to_html(index=False, border=0, escape=True))
        body += [f"<p class='note'>{html.escape(note)}</p>" for note in section.notes]
        body += [next(images) for _ in section.plots]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:70rem}"
    "h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
    "th,td{padding:.25rem .7rem;border-bottom:1px solid #ddd;text-align:left}"
    "th{background:#f4f4f4}.note{color:#555;font-size:.9rem}.verdict{margin:.3rem 0}"
    "img.plot{display:block;max-width:100%;height:auto;margin:1rem 0}"
)


def _image(plot: Plot) -> str:
    """The plot as an inline PNG (drawn only here: the text report never pays for it)."""
    from evalnb.plots import render_png

    with warnings.catch_warnings():
        # The tables around each figure carry the warnings' content (few cases...).
        warnings.simplefilter("ignore", UserWarning)
        data = render_png(plot.draw)
    encoded = base64.b64encode(data).decode("ascii")
    return f"<img class='plot' alt='{html.escape(plot.alt)}' src='data:image/png;base64,{encoded}'>"


def _images(plots: list[Plot], processes: int) -> list[str]:
    """Each plot as an ``<img>``; with ``processes`` > 1, drawn by that many processes.

    matplotlib draws on one core, and the figures are most of the page's time. The forked
    children share the plots' data as it is; each process, this one too, takes the next
    figure not yet taken until none is left, so a large figure does not wait behind
    another. Only the drawn figures travel back; one a child did not send is drawn here.
    """
    processes = min(processes, len(plots))
    if processes < 2 or sys.platform != "linux" or len(plots) > 255:
        return [_image(plot) for plot in plots]
    # The figures to take, one byte each: a read of one byte from a pipe is one take.
    tasks, writing = os.pipe()
    os.write(writing, bytes(range(len(plots))))
    os.close(writing)
    children: list[tuple[int, int]] = []
    drawn: dict[str, str] = {}
    try:
        for _ in range(processes - 1):
            try:
                children.append(_fork_drawing(plots, tasks))
            except OSError:  # no process to be had (a limit, memory): fewer draw
                break
        drawn.update(_take(plots, tasks))
    finally:
        os.close(tasks)
        # Every child is waited for, also when drawing here failed: none is left behind.
        for pid, pipe in children:
            with os.fdopen(pipe, "rb") as reader:
                payload = reader.read()
            os.waitpid(pid, 0)
            drawn.update(json.loads(payload) if payload else [])
    return [drawn.get(str(i)) or _image(plot) for i, plot in enumerate(plots)]


def _take(plots: list[Plot], tasks: int) -> Iterator[tuple[str, str]]:
    """(index, ``<img>``) of each figure this process takes from ``tasks``."""
    while taken := os.read(tasks, 1):
        yield str(taken[0]), _image(plots[taken[0]])


def _fork_drawing(plots: list[Plot], tasks: int) -> tuple[int, int]:
    """Fork a child that draws the figures it takes from ``tasks`` and sends them back as
    JSON pairs; (its pid, the reading end of its pipe)."""
    reading, writing = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        raise
    if pid:
        os.close(writing)
        return pid, reading
    try:  # the child: never returns
        os.close(reading)
        drawn: list[tuple[str, str]] = []
        with contextlib.suppress(BaseException):  # what it did not draw, the parent draws
            drawn.extend(_take(plots, tasks))
        with os.fdopen(writing, "wb") as writer:
            writer.write(json.dumps(drawn).encode())
    finally:
        os._exit(0)


def _plots() -> Any:
    """:mod:`evalnb.plots`, imported when a figure is drawn (matplotlib is slow to import)."""
    from evalnb import plots

    return plots


def _sections(
    run: Run, *, baseline: str | None, check: str, level: float
) -> tuple[str, list[Section]]:
    if not isinstance(run, Run):
        raise TypeError(f"'run' must be a Run (from evalnb.load); got {type(run).__name__}")
    level = _args.level(level)
    variants = run.variants
    if baseline is not None:
        _args.choice("baseline", baseline, variants)
    sections = [_samples_section(run)]
    checks = run.table("checks", ["outcome"])["check"]
    if checks.empty:
        sections[0].notes.append("no check results: there are no rates to report")
    else:
        _args.choice("check", check, [ALL, *map(str, checks.cat.categories)])
        sections += [
            _suite_section(run, check, level),
            _checks_section(run, level),
            _cases_section(run, check, level),
        ]
        if len(variants) > 1:
            sections += _comparison_sections(run, baseline or variants[0], check, level)
    sections.append(_latency_section(run))
    preferred = preference_section(run, level)
    if preferred is not None:
        section = Section(preferred.title, preferred.table, preferred.notes)
        section.verdicts = preferred.verdicts
        sections.insert(len(sections) - 1, section)
    if any(section.verdicts for section in sections):
        sections.insert(0, _verdicts_section(sections))
    return _title(run, variants), sections


def _title(run: Run, variants: list[str]) -> str:
    runs = ", ".join(f"{run_id} ({m.get('status')})" for run_id, m in run.manifests.items())
    cases = run.cases
    splits = ", ".join(f"{k} {v}" for k, v in cases["split"].value_counts().items() if v)
    repeats = sorted({m.get("repeats") for m in run.manifests.values()}, key=str)
    return (
        f"evalnb report: {runs}; {cases['case_id'].nunique()} cases ({splits}); "
        f"variants {', '.join(variants)}; repeats {', '.join(map(str, repeats))}"
    )


def _samples_section(run: Run) -> Section:
    table = run.summary()
    if len(run.run_ids) == 1:
        table = table.drop(columns="run_id")
    return Section(
        "Samples",
        table.astype(str),
        ["incomplete samples (error, timeout, ...) stay in every denominator and fail"],
    )


def _suite_section(run: Run, check: str, level: float) -> Section:
    splits = run.cases["split"].astype(object).nunique()
    by = ["variant", "split"] if splits > 1 else ["variant"]
    with warnings.catch_warnings(record=True) as caught, display.cautions_as_warnings():
        warnings.simplefilter("always")
        suite = suite_rate(run, by, check=check, level=level)
    table = pd.DataFrame(
        {
            **{k: suite[k].astype(str) for k in by},
            "cases": suite["cases"].astype(str),
            "repeats": suite["repeats"].map(lambda v: f"{v:.3g}"),
            **_rate_columns(suite, level, n="samples"),
            "se": suite["se"].map(number),
            "design effect": suite["design_effect"].map(lambda v: number(v, 2)),
            "basis": suite["basis"],
        }
    )
    notes = [
        "mean of per-case pass rates; the interval is across cases (the case is the unit, "
        "repeats are draws inside it), clustered by case group"
    ]
    notes += [str(w.message).removeprefix("suite_rate: ") for w in _args.own_warnings(caught)]
    if holds_stopped(run):
        notes.append(
            "the run was stopped by its sequence (until=): these rates describe the cases it "
            "ran before it stopped, and their intervals are fixed-n ones; what the run decided "
            "is the comparison's anytime-valid sequence"
        )
    verdicts = [
        f"suite rate of {' · '.join(str(r[k]) for k in by)} on {check}: "
        f"{share(r['k'], r['samples'])} samples, {number(r['estimate'])} "
        f"({interval_text(r['low'], r['high'], level)}); {r['cases']} cases × "
        f"{r['repeats']:.3g} repeats ({r['basis']})"
        for r in suite.to_dict("records")
    ]
    return Section(f"Suite rate, check '{check}'", table, notes, verdicts=verdicts)


def _checks_section(run: Run, level: float) -> Section:
    table = rates(run, ["variant"], level=level)
    shown = pd.DataFrame(
        {
            "check": table["check"].astype(str),
            "variant": table["variant"].astype(str),
            **_rate_columns(table, level),
            "unscored": table["unscored"].astype(str),
            "incomplete": table["incomplete"].astype(str),
        }
    ).sort_values(["check", "variant"], key=_stable_order(table), kind="stable")
    return Section(
        "Checks by variant",
        shown,
        [
            "pooled over cases: these intervals treat samples as independent trials; "
            "unscored outcomes (check not applicable) are left out of the denominator"
        ],
    )


def _stable_order(table: pd.DataFrame) -> Any:
    order = {
        "check": {str(c): i for i, c in enumerate(table["check"].cat.categories)},
        "variant": {str(v): i for i, v in enumerate(table["variant"].cat.categories)},
    }
    return lambda column: column.map(order[column.name])


def _cases_section(run: Run, check: str, level: float) -> Section:
    table = rates(run, ["case_id", "variant"], check=check, level=level)
    verdicts = case_verdicts(table["k"], table["n"], table.get("incomplete", 0))
    table = table.assign(
        cell=[
            f"{share(k, n)} {number(e, 2)} ({number(lo, 2)} to {number(hi, 2)}) {verdict}"
            if n
            else "unscored"
            for k, n, e, lo, hi, verdict in zip(
                table["k"],
                table["n"],
                table["estimate"],
                table["low"],
                table["high"],
                verdicts,
                strict=True,
            )
        ]
    )
    wide = table.pivot(index="case_id", columns="variant", values="cell")
    wide = wide.reset_index().rename_axis(columns=None)
    wide.columns = [str(c) for c in wide.columns]
    wide = wide.astype(str).replace("nan", "")
    notes = [
        f"passed/scored, rate and {level * 100:g}% Wilson interval per case and variant, "
        "then the case's flakiness verdict over its repeats (stable-pass, flaky or "
        "stable-fail; see evalnb.flakiness)"
    ]
    if len(wide) > MAX_CASES:
        notes.append(f"{len(wide) - MAX_CASES} more cases not shown (see evalnb.rates)")
        wide = wide.head(MAX_CASES)
    shown = set(wide["case_id"])
    table = table[table["case_id"].astype(object).isin(shown)]
    if len(shown) > FIGURE_CASES:
        notes.append(
            f"the figures show the {FIGURE_CASES} cases with the lowest pass rates and the "
            f"{FIGURE_CASES} with the least agreement"
        )
    plots = [
        Plot(
            f"Pass rate per case and variant, check '{check}', with the suite rate on top",
            lambda: _plots().plot_intervals(
                _fewest(table, "estimate"),
                suite=suite_rate(run, "variant", check=check, level=level),
                check=check,
            ),
        ),
        Plot(
            "Agreement across draws per case and variant",
            lambda: _plots().plot_agreement(_agreement_of(run, check, shown)),
        ),
    ]
    return Section(f"Per case, check '{check}'", wide, notes, plots)


def _fewest(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """The rows of the ``FIGURE_CASES`` cases with the lowest mean ``column`` (NaN last)."""
    mean = frame.groupby(frame["case_id"].astype(object), sort=False)[column].mean()
    cases = mean.sort_values(kind="stable", na_position="last").index[:FIGURE_CASES]
    return frame[frame["case_id"].astype(object).isin(cases)]


def _agreement_of(run: Run, check: str, cases: set[str]) -> pd.DataFrame:
    frame = agreement(run, check=check)
    return _fewest(frame[frame["case_id"].astype(object).isin(cases)], "agreement")


def _comparison_sections(run: Run, baseline: str, check: str, level: float) -> list[Section]:
    rows, moved, plots, verdicts, notes = [], [], [], [], []
    for variant in run.variants:
        if variant == baseline:
            continue
        result = compare(run, a=baseline, b=variant, check=check, level=level)
        if result.empty:
            continue
        row = result.iloc[0]
        told = story(row)
        # compare's own words: the verdict's p (the exact test's where it decides), its note.
        verdicts.append(told.line(baseline, variant, check))
        if told.note:
            verdicts.append(f"note ({variant} vs {baseline}): {told.note}")
            notes.append(f"{variant} vs {baseline}: {told.note}")
        rows.append(
            {
                "A": baseline,
                "B": variant,
                "cases": str(row["cases"]),
                "repeats": f"{row['repeats_a']:.3g} / {row['repeats_b']:.3g}",
                "B - A": signed(row["diff"]),
                "interval and p": told.interval,
                "correlation": number(row["correlation"], 2),
                "verdict": row["verdict"],
                "on these cases only": told.fixed,
            }
        )
        every = compare_cases(run, a=baseline, b=variant, check=check)
        plots.append(
            Plot(
                f"Per-case differences {variant} - {baseline} under the mean difference and "
                "its interval",
                # compare_cases lists the largest moves first.
                partial(_compare_plot, result, every.head(FIGURE_CASES), run.variants),
            )
        )
        cases = every[every["paired"] & (every["diff"].abs() > 0)].head(MAX_MOVED)
        moved += [
            {
                "B": variant,
                "case": str(c.case_id),
                "A rate": f"{share(c.k_a, c.n_a)} {number(c.rate_a, 2)}",
                "B rate": f"{share(c.k_b, c.n_b)} {number(c.rate_b, 2)}",
                "B - A": signed(c.diff, 2),
            }
            for c in cases.itertuples(index=False)
        ]
    table = pd.DataFrame(rows)
    if "on these cases only" in table and not table["on these cases only"].any():
        table = table.drop(columns="on these cases only")
    comparison = Section(
        f"Comparison with {baseline}, check '{check}'",
        table,
        [
            *notes,
            (
                "the run was stopped by its sequence (until=Decided): the interval is its "
                "anytime-valid confidence sequence at the last look, never a fixed-n one"
                if is_sequential(run)
                else "paired per-case differences (B - A), the case the unit: it generalises "
                "to new cases like these; each interval is named by the test that made it (the "
                "paired t across cases, or with fewer than 10 cases the exact sign-flip test "
                "inverted, which must agree) and p is the verdict's; never decided from "
                "overlapping intervals"
            ),
            *(
                [f"the figures mark the {FIGURE_CASES} cases that moved most"]
                if len(run.cases) > FIGURE_CASES
                else []
            ),
        ],
        plots,
        verdicts,
    )
    return [comparison, Section("Cases that moved most", pd.DataFrame(moved))]


def _compare_plot(result: pd.DataFrame, cases: pd.DataFrame, variants: list[str]) -> Any:
    plots = _plots()
    return plots.plot_compare(result, cases, colors=plots.variant_colors(variants))


def _cost_section(run: Run, prices: Prices | str | os.PathLike[str]) -> Section:
    table = costs(run, prices=prices)
    total = costs(run, by=None, prices=prices).assign(variant="all")
    table = pd.concat([table, total], ignore_index=True)
    shown = pd.DataFrame(
        {
            "variant": table["variant"].astype(str),
            "samples": table["samples"].astype(str),
            "prompt tokens": table["prompt_tokens"].map(lambda v: f"{v:,}"),
            "completion tokens": table["completion_tokens"].map(lambda v: f"{v:,}"),
            "unpriced": table["unpriced"].astype(str),
            "cached": table["cached"].astype(str),
            "cost $": table["cost"].map(lambda v: f"{v:.6f}"),
        }
    )
    notes = [
        "dollars from the token counts stored per sample and the price table given; a "
        "sample served from the development cache cost nothing"
    ]
    notes += sorted({str(n) for n in table["note"] if n})
    return Section("Cost", shown, notes)


def _latency_section(run: Run) -> Section:
    table = latency(run, "variant")
    shown = pd.DataFrame(
        {
            "variant": table["variant"].astype(str),
            "n": table["n"].astype(str),
            "incomplete": table["incomplete"].astype(str),
            "median ms": table["median_ms"].map(lambda v: number(v, 0)),
            "p95 ms": table["p95_ms"].map(lambda v: number(v, 0)),
            "max ms": table["max_ms"].map(lambda v: number(v, 0)),
        }
    )
    draw = Plot(
        "Latency of every sample per variant, median and p95 marked",
        lambda: _plots().plot_latency(run, "variant"),
    )
    return Section(
        "Latency",
        shown,
        [
            "whole attempt, incomplete samples included; median is the lower middle "
            "observation, p95 the nearest rank"
        ],
        [draw],
    )
