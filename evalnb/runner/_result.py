"""What a run says when it ends: :class:`RunResult`, counted by one :class:`Tally`.

The tally is fed the samples and check results a session writes, as it writes them, so a
fresh run is summed up without reading its tables back (nor importing what reading needs);
a resumed or sharded run, part of which was written elsewhere, is read from its tables.
Both feed the same counting.
"""

from __future__ import annotations

import html
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._prices import Prices, sample_cost
from evalnb._secrets import redact
from evalnb._types import CheckResult, Sample
from evalnb.runner._budget import Budget

__all__ = ["RunResult", "Tally"]


def _p95(values: Sequence[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass(repr=False)
class RunResult:
    """Where a run was written and how its samples ended, per variant.

    ``counts`` are sample statuses; ``checks`` maps each check to ``(passed, scored)``
    (unscored outcomes are left out, incomplete samples stay in and fail); ``scores`` maps
    each graded check to its mean score over the samples it scored; ``errors`` counts the
    error texts of the incomplete samples. A run where no sample, or at most half of them,
    completed says so first in its summary and its notebook display (:meth:`alarm`).
    """

    path: Path
    run_id: str
    status: str
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    checks: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    costs: dict[str, tuple[float, int]] = field(default_factory=dict)
    stopped: dict[str, Any] | None = None
    errors: Counter[str] = field(default_factory=Counter)

    def alarm(self) -> str | None:
        """The sentence a run that mostly failed leads with: ``"0 of 40 samples completed;
        most common error (40): ..."``; None when more than half completed."""
        total = sum(sum(c.values()) for c in self.counts.values())
        completed = sum(c["completed"] for c in self.counts.values())
        if total == 0 or completed * 2 > total:
            return None
        line = f"{completed} of {total} samples completed"
        if self.errors:
            error, n = self.errors.most_common(1)[0]
            line += f"; most common error ({n} of {total - completed}): {error}"
        return line

    def rows(self) -> list[dict[str, Any]]:
        """One dict per variant: completed, total, latency (lower median, nearest-rank p95),
        ``checks`` (passed, scored) and ``scores`` (mean score of each graded check)."""
        rows = []
        for variant, counts in self.counts.items():
            latency = self.latencies.get(variant) or [0.0]
            rows.append(
                {
                    "variant": variant,
                    "completed": counts["completed"],
                    "total": sum(counts.values()),
                    "incomplete": {s: n for s, n in sorted(counts.items()) if s != "completed"},
                    "median_ms": statistics.median_low(latency),
                    "p95_ms": _p95(latency),
                    "checks": self.checks.get(variant, {}),
                    "scores": self.scores.get(variant, {}),
                }
            )
        return rows

    def __repr__(self) -> str:
        return f"<RunResult {self.run_id!r} {self.status} at {str(self.path)!r}>"

    def summary(self) -> str:
        """A one-screen text summary; never shows answers."""
        lines = [f"run {self.run_id} ({self.status}): {self.path}"]
        if self.stopped is not None:
            lines.append(f"  stopped: {_stop_text(self.stopped)}")
        alarm = self.alarm()
        if alarm is not None:
            lines.insert(0, f"WARNING: {alarm}")
        width = max((len(v) for v in self.counts), default=7)
        for row in self.rows():
            incomplete = ", ".join(f"{s} {n}" for s, n in row["incomplete"].items())
            lines.append(
                f"  {row['variant']:<{width}}  completed {row['completed']}/{row['total']}"
                f"  median latency {row['median_ms']:,.0f} ms  p95 {row['p95_ms']:,.0f} ms"
                + (f"  incomplete: {incomplete}" if incomplete else "")
            )
            tallies = [
                f"{name} {k}/{n}"
                + (f" (mean score {row['scores'][name]:.2f})" if name in row["scores"] else "")
                for name, (k, n) in row["checks"].items()
            ]
            for start in range(0, len(tallies), 5):
                lines.append(f"  {'':<{width}}  " + "  ".join(tallies[start : start + 5]))
        lines += _cost_lines(self.costs, width)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td>{html.escape(r['variant'])}</td><td>{r['completed']}/{r['total']}</td>"
            f"<td>{r['median_ms']:,.0f} ms</td><td>{r['p95_ms']:,.0f} ms</td><td>"
            + html.escape(", ".join(f"{c} {k}/{n}" for c, (k, n) in r["checks"].items()))
            + "</td></tr>"
            for r in self.rows()
        )
        alarm = self.alarm()
        loud = (
            ""
            if alarm is None
            else "<div style='border:2px solid #cf222e;color:#cf222e;padding:4px 8px;"
            f"font-weight:bold'>{html.escape(alarm)}</div>"
        )
        return (
            f"<div class='tex2jax_ignore mathjax_ignore'>{loud}"
            f"<p>run <code>{html.escape(self.run_id)}</code> ({html.escape(self.status)}) at "
            f"<code>{html.escape(str(self.path))}</code></p><table><tr><th>variant</th>"
            "<th>completed</th><th>median latency</th><th>p95 latency</th><th>checks</th></tr>"
            f"{body}</table></div>"
        )


def _stop_text(stopped: Mapping[str, Any]) -> str:
    reason = stopped.get("reason")
    if reason == "max_cost":
        return f"max_cost reached: ${stopped['spent']:.6g} spent of ${stopped['limit']:.6g}"
    if reason == "max_tokens":
        return f"max_tokens reached: {stopped['spent']:,} tokens of {stopped['limit']:,}"
    return f"{reason}: {stopped.get('detail', '')}"


def _cost_lines(costs: Mapping[str, tuple[float, int]], width: int) -> list[str]:
    if not costs:
        return []
    lines = []
    for variant, (dollars, unpriced) in costs.items():
        note = f" ({unpriced} unpriced samples: a lower bound)" if unpriced else ""
        lines.append(f"  {variant:<{width}}  cost ${dollars:.6g}{note}")
    total = sum(d for d, _ in costs.values())
    unpriced = sum(u for _, u in costs.values())
    note = " (a lower bound)" if unpriced else ""
    lines.append(f"  {'run':<{width}}  cost ${total:.6g}{note}")
    return lines


_SAMPLE_COLUMNS = ["variant", "status", "latency_ms", "error"]
_COST_COLUMNS = ["variant", "model", "prompt_tokens", "completion_tokens", "cached"]
_CHECK_COLUMNS = ["variant", "check", "outcome", "score"]


class Tally:
    """The counts a :class:`RunResult` shows, per variant, over the samples fed to it.

    ``add`` takes a batch as the runner writes it; ``read`` takes every sample and check
    result a run directory holds (the run's own scoring). Both count the same columns the
    same way, so a result never depends on which fed it.
    """

    def __init__(self, variants: Iterable[str], prices: Prices | None = None) -> None:
        names = list(variants)
        self.prices = prices
        self.counts: dict[str, Counter[str]] = {v: Counter() for v in names}
        self.latencies: dict[str, list[float]] = {v: [] for v in names}
        self.errors: Counter[str] = Counter()
        self.checks: dict[str, dict[str, list[int]]] = {v: {} for v in names}
        self.scored: dict[str, dict[str, list[float]]] = {v: {} for v in names}
        self.dollars = {v: 0.0 for v in names}
        self.unpriced = {v: 0 for v in names}

    def add(self, samples: Sequence[Sample], results: Sequence[tuple[Sample, CheckResult]]) -> None:
        """Count a batch of samples and their check results, as they are written."""
        # The stored error is redacted as it is written: count the text a reader finds.
        self._samples(
            (s.variant, s.status, s.latency_ms, s.error and redact(s.error)) for s in samples
        )
        if self.prices:
            self._costs(
                self.prices,
                (
                    (s.variant, s.model, s.prompt_tokens, s.completion_tokens, s.cached)
                    for s in samples
                ),
            )
        self._checks((s.variant, r.check, r.outcome, r.score) for s, r in results)

    def read(self, path: Path) -> None:
        """Count every sample and check result of the run in ``path``."""
        self._samples(_rows(store.read_table(path, "samples", _SAMPLE_COLUMNS)))
        if self.prices:
            self._costs(self.prices, _rows(store.read_table(path, "samples", _COST_COLUMNS)))
        self._checks(_rows(store.read_table(path, "checks", _CHECK_COLUMNS, scoring="run")))

    def _samples(self, rows: Iterable[tuple[str, str, float, str | None]]) -> None:
        for variant, status, latency, error in rows:
            self.counts[variant][status] += 1
            self.latencies[variant].append(latency)
            if status != "completed":
                self.errors[(error or status)[:300]] += 1

    def _costs(self, prices: Prices, rows: Iterable[tuple[Any, ...]]) -> None:
        """Dollars and unpriced samples; a sample served from a cache cost nothing."""
        for variant, model, prompt_tokens, completion_tokens, cached in rows:
            if cached:
                continue
            cost = sample_cost(prices, model, prompt_tokens, completion_tokens)
            if cost is None:
                self.unpriced[variant] += 1
            else:
                self.dollars[variant] += cost

    def _checks(self, rows: Iterable[tuple[str, str, bool | None, float | None]]) -> None:
        for variant, check, outcome, score in rows:
            tally = self.checks[variant].setdefault(check, [0, 0])
            if outcome is not None:
                tally[0] += outcome
                tally[1] += 1
            if score is not None:
                self.scored[variant].setdefault(check, []).append(score)

    def result(self, path: Path, run_id: str, status: str, budget: Budget) -> RunResult:
        """The :class:`RunResult` of what was counted."""
        costs = (
            {v: (self.dollars[v], self.unpriced[v]) for v in self.dollars} if self.prices else {}
        )
        return RunResult(
            path,
            run_id,
            status,
            self.counts,
            self.latencies,
            {v: {c: (k, n) for c, (k, n) in t.items()} for v, t in self.checks.items()},
            {v: {c: statistics.fmean(s) for c, s in t.items()} for v, t in self.scored.items()},
            costs=costs,
            stopped=budget.record(),
            errors=self.errors,
        )


def _rows(table: Any) -> Iterable[tuple[Any, ...]]:
    return zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True)
