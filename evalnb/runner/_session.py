"""Cases x variants x repeats -> samples, with bounded concurrency, written as it goes.

The runner never imports the analysis. Its job ends when every planned sample is
written: whatever the model did, a finished run is a success.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tqdm.auto import tqdm

from evalnb import store
from evalnb._evidence import canonical_answer, evidence_from
from evalnb._exceptions import ArgumentError, StoreError, TargetError
from evalnb._numbers import is_whole
from evalnb._sync import run_sync
from evalnb._types import EVIDENCE_FIELDS, Case, Completion, Request, Sample, Variant
from evalnb.cases._files import file_sha256, load_cases
from evalnb.checks import Check, CheckSpec, arun_checks, build_checks, built_cases, checks_for
from evalnb.checks._judge import JUDGE
from evalnb.runner._budget import Budget
from evalnb.runner._manifest import check_resume, check_same_target, new_manifest, now
from evalnb.runner._prices import Prices, sample_cost
from evalnb.targets import CountingTarget, Target
from evalnb.targets._cache import ResponseCache

__all__ = ["RunInterrupted", "RunResult", "arun", "plan", "run"]

ORDERS = ("alternate", "shuffle")


def plan(
    cases: Sequence[Case],
    variants: Sequence[Variant],
    repeats: int,
    order: str = "alternate",
    seed: int = 0,
) -> list[tuple[Case, Variant, int]]:
    """The execution order: for each (case, repeat) every variant runs.

    ``alternate`` rotates which variant goes first with the case and repeat index;
    ``shuffle`` shuffles the (case, repeat) blocks and the variants inside each block
    with ``random.Random(seed)``.
    """
    if order not in ORDERS:
        raise ArgumentError(f"'order' must be one of {ORDERS}; got {order!r}")
    blocks = [(i, r) for r in range(repeats) for i in range(len(cases))]
    rng = random.Random(seed)
    if order == "shuffle":
        rng.shuffle(blocks)
    planned: list[tuple[Case, Variant, int]] = []
    for i, r in blocks:
        if order == "alternate":
            shift = (i + r) % len(variants)
            block = [*variants[shift:], *variants[:shift]]
        else:
            block = rng.sample(list(variants), len(variants))
        planned.extend((cases[i], v, r) for v in block)
    return planned


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
        import html

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


def _variants(variants: Iterable[Variant | str] | None) -> list[Variant]:
    if variants is None:
        return [Variant("baseline")]
    out = [Variant(v) if isinstance(v, str) else v for v in variants]
    if not out:
        raise ArgumentError("'variants' must name at least one variant; got an empty list")
    names = [v.name for v in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ArgumentError(f"'variants' must have unique names; got {duplicates!r} more than once")
    for v in out:
        if not isinstance(v, Variant):
            raise TypeError(f"'variants' must hold Variant objects or names; got {v!r}")
    return out


def fingerprint(messages: Sequence[Any]) -> str:
    """First 12 hex of SHA-256 of the prompt as sent (of all messages' JSON when several).

    ``messages`` are the rendered messages every target receives (``request.messages``):
    the body an ``OpenAIChat`` posts, the list a ``Function`` gets and the ``messages`` a
    ``Command`` reads from ``request.json``; two templates that send different text never
    share a fingerprint.
    """
    if len(messages) == 1 and isinstance(messages[0].get("content"), str):
        text = messages[0]["content"]
    else:
        text = json.dumps([dict(m) for m in messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _default_canonical(answer: str, case: Case) -> str | None:
    return canonical_answer(answer, case.expect_keys)


def _json(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class _Execution:
    """One pass over the pending plan: workers, buffer, flushes and progress."""

    def __init__(
        self,
        target: Target,
        writer: store.RunWriter,
        run_id: str,
        checks: dict[str, tuple[Check, ...]],
        timeout: float | None,
        flush_every: int,
        flush_seconds: float,
        canonical: Callable[[str, Case], str | None],
        budget: Budget | None = None,
    ) -> None:
        self.budget = budget
        self.target = target
        self.canonical = canonical
        self.writer = writer
        self.run_id = run_id
        self.checks = checks
        self.timeout = timeout
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.samples: list[Sample] = []
        self.results: list[tuple[Sample, Any]] = []
        self.last_flush = time.monotonic()
        self.incomplete = 0

    async def attempt(self, case: Case, variant: Variant, repeat: int, order: int) -> Sample:
        messages = variant.messages_for(case, repeat)
        request = Request(case, variant, repeat, messages, variant.params)
        started = now()
        clock = time.perf_counter()
        completion: Completion | None = None
        error: str | None = None
        try:
            if self.timeout is None:
                completion = await self.target.complete(request)
            else:
                async with asyncio.timeout(self.timeout):
                    completion = await self.target.complete(request)
        except TargetError as exc:
            status, error, completion = exc.status, str(exc), exc.partial
        except TimeoutError:
            status, error = "timeout", f"no completion within {self.timeout:g} s"
        except Exception as exc:  # one sample's failure never stops the run
            status, error = "error", f"{type(exc).__name__}: {exc}"
        else:
            if completion.text.strip() or completion.tool_calls:
                status = "completed"
            elif completion.finish_reason == "length":
                status, error = "budget", "no answer before the token limit (finish_reason=length)"
            else:
                status, error = "empty", "the target returned an empty answer"
        latency = (time.perf_counter() - clock) * 1000
        c = completion or Completion(text="")
        evidence = evidence_from(c.trace, c.trace_truncated, c.tool_calls)
        canonical = self.canonical(c.text, case) if status == "completed" else None
        sent = (
            c.request
            if c.request is not None
            else {"messages": messages, "params": dict(variant.params)}
        )
        return Sample(
            run_id=self.run_id,
            case_id=case.id,
            variant=variant.name,
            repeat=repeat,
            order=order,
            started_at=started,
            latency_ms=latency,
            status=status,
            error=error,
            answer=c.text
            if (completion is not None and (c.text or status == "completed"))
            else None,
            prompt=request.prompt,
            request=_json(sent),
            response=_json(c.response),
            **{name: getattr(c, name) for name in EVIDENCE_FIELDS},
            fingerprint=fingerprint(messages),
            canonical=canonical,
            requested=evidence.requested,
            executed=evidence.executed,
            evidence_problem=evidence.problem,
            facts=_json(c.facts),
            choice_order=variant.choice_order(case, repeat),
        )

    async def record(self, case: Case, sample: Sample) -> None:
        for result in await arun_checks(self.checks[case.id], sample):
            self.results.append((sample, result))
        self.samples.append(sample)
        if self.budget is not None:
            self.budget.add_sample(sample)
        if not sample.completed:
            self.incomplete += 1
        if (
            len(self.samples) >= self.flush_every
            or time.monotonic() - self.last_flush >= self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        self.writer.write(self.samples, self.results)
        self.samples, self.results = [], []
        self.last_flush = time.monotonic()

    async def execute(
        self,
        pending: Sequence[tuple[int, tuple[Case, Variant, int]]],
        concurrency: int,
        bar: tqdm[Any],
    ) -> None:
        queue = iter(pending)

        async def worker() -> None:
            shown = 0
            for order, (case, variant, repeat) in queue:
                if self.budget is not None and self.budget.reached:
                    return  # no new sample; the ones in flight finish and are recorded
                sample = await self.attempt(case, variant, repeat, order)
                await self.record(case, sample)
                bar.update(1)
                if self.incomplete != shown:
                    shown = self.incomplete
                    bar.set_postfix(incomplete=shown, refresh=False)

        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


async def arun(
    cases: Sequence[Case] | str | os.PathLike[str],
    target: Target,
    *,
    variants: Iterable[Variant | str] | None = None,
    repeats: int = 1,
    out: str | os.PathLike[str] | None = None,
    concurrency: int = 8,
    resume: bool = False,
    overwrite: bool = False,
    order: str = "alternate",
    seed: int = 0,
    checks: Iterable[CheckSpec] = (),
    timeout: float | None = None,
    progress: bool = True,
    flush_every: int = 5000,
    flush_seconds: float = 5.0,
    command: Sequence[str] | None = None,
    on_start: Callable[[Path], None] | None = None,
    judge: Target | None = None,
    canonical: Callable[[str, Case], str | None] | None = None,
    defaults: Mapping[str, Any] | None = None,
    cluster: Any = None,
    shard_size: int = 100,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    prices: Prices | str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Async form of :func:`run`, with the same parameters; await it in a running loop."""
    cases_file: dict[str, Any] | None = None
    if isinstance(cases, str | os.PathLike):
        # Read first: a missing or bad file is a located error, not a failed hash.
        loaded = load_cases(cases, defaults=defaults)
        cases_file = {"path": str(cases), "sha256": file_sha256(cases)}
        if defaults:
            cases_file["defaults"] = dict(defaults)
        cases = loaded
    elif defaults:
        raise ArgumentError(
            "'defaults' apply to a cases file as it is read; with Case objects, put the "
            "checks and fields in the cases"
        )
    cases = built_cases(cases)
    if not cases:
        raise ArgumentError("'cases' must hold at least one case; got none")
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise ArgumentError(f"'cases' must have unique ids; got {repeated!r} more than once")
    variants = _variants(variants)
    if not is_whole(repeats, 1):
        raise ArgumentError(f"'repeats' must be a whole number >= 1; got {repeats!r}")
    if not is_whole(concurrency, 1):
        raise ArgumentError(f"'concurrency' must be a whole number >= 1; got {concurrency!r}")
    if not is_whole(shard_size, 1):
        raise ArgumentError(f"'shard_size' must be a whole number >= 1; got {shard_size!r}")
    if not callable(getattr(target, "complete", None)):
        raise TypeError(f"'target' must have an async complete(request) method; got {target!r}")
    extra_checks = build_checks(checks)
    by_case = {case.id: checks_for(case, extra_checks) for case in cases}
    for case in cases:
        for variant in variants:
            try:
                variant.messages_for(case)
            except ValueError as exc:
                raise ArgumentError(f"case {case.id!r}, variant {variant.name!r}: {exc}") from None
    if judge is None and any(c.type == "judge" for checks in by_case.values() for c in checks):
        raise ArgumentError("cases have 'judge' checks: pass judge=<target> (the judge model)")
    if judge is not None and not callable(getattr(judge, "complete", None)):
        raise TypeError(f"'judge' must have an async complete(request) method; got {judge!r}")
    if cluster is not None and (max_cost is not None or max_tokens is not None or cache):
        # Each shard runs apart: neither a budget nor a cache is shared across them yet.
        raise ArgumentError(
            "'max_cost', 'max_tokens' and 'cache' work on one machine; not with 'cluster'"
        )
    budget = Budget(max_cost, max_tokens, prices)
    cached = None if cache is None else ResponseCache(target, cache)
    planned = plan(cases, variants, repeats, order, seed)
    started = now()

    if out is None:
        out = Path("runs") / f"run-{started:%Y%m%dT%H%M%SZ}-{os.urandom(2).hex()}"
    path = store.run_path(out)
    if overwrite and resume:
        raise ArgumentError("'overwrite' and 'resume' exclude each other; got both True")
    if not resume and (path.exists() or path.is_symlink()):
        if not (path / "manifest.json").is_file():
            # Only a run is ever moved aside: any other folder is the user's.
            raise StoreError(
                f"{path}: output directory already exists and is not a run; choose another "
                "out= (or --out)"
            )
        if overwrite:
            _move_aside(path, started)
        elif command is None:
            raise StoreError(
                f"{path} already holds a run. Re-running the cell? Pass resume=True to finish "
                f"that run, or overwrite=True to start afresh (the old run is moved to "
                f"{path.name}.replaced-<time> beside it, not deleted), or choose another out="
            )
    # One writer per run: held until the run ends (the kernel drops it if we die).
    lock = store.RunLock(path, "run")
    if resume:
        store.read_manifest(path)  # not a run: say so before touching it
        lock.acquire()
        # Shards an earlier driver left running can commit no more.
        session = store.fence_shards(path, create=cluster is not None)
        manifest = store.read_manifest(path)
        check_resume(manifest, path, cases, variants, repeats, order, seed)
        if not any((path / "cases").glob("part-*.parquet")):
            store.RunWriter(path).write_cases(cases)  # killed before it wrote them, or older
        store.remove_orphan_parts(path)
        done = store.sample_keys(path)
        run_id = manifest["run_id"]
        manifest.setdefault("resumes", []).append(
            {"started_at": started.isoformat(), "command": list(command) if command else None}
        )
    else:
        store.create_run_dir(path)
        lock.acquire()
        session = store.fence_shards(path, create=cluster is not None)
        done = set()
        run_id = path.name
        manifest = new_manifest(
            run_id,
            started,
            cases=cases,
            cases_file=cases_file,
            extra_checks=extra_checks,
            variants=variants,
            repeats=repeats,
            concurrency=concurrency,
            order=order,
            seed=seed,
            planned=planned,
            command=command,
        )
        # Written before the target is probed (which may take its whole timeout), so a
        # kill at any moment leaves a run that --resume can finish.
        store.write_json_atomic(path / "manifest.json", manifest)
        store.RunWriter(path).write_cases(cases)
    _start_budget(manifest, budget, path if resume else None)
    if on_start is not None:
        on_start(path)

    counted_judge = CountingTarget(judge) if judge is not None else None
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(lock.release)
        for resource in (target, judge):
            if isinstance(resource, contextlib.AbstractAsyncContextManager):
                await stack.enter_async_context(resource)
        described = await _describe(target)
        if manifest.get("target") is None:
            manifest["target"] = described
        else:
            check_same_target(manifest["target"], described, path)
        if judge is not None and not (manifest.get("judge") or {}).get("target"):
            manifest["judge"] = {"target": await _describe(judge), "calls": 0}
        sharded = None
        if cluster is not None:
            from evalnb.runner._distributed import Sharded

            sharded = Sharded(cluster, shard_size, session)
            stack.callback(sharded.close)
            manifest.setdefault("clusters", []).append(sharded.record())
        manifest["status"] = "running"
        store.write_json_atomic(path / "manifest.json", manifest)

        pending = (
            [
                (i, entry)
                for i, entry in enumerate(planned)
                if (entry[0].id, entry[1].name, entry[2]) not in done
            ]
            if done
            else list(enumerate(planned))
        )
        execution = _Execution(
            cached or target,
            store.RunWriter(path),
            run_id,
            by_case,
            timeout,
            flush_every,
            flush_seconds,
            canonical or _default_canonical,
            budget,
        )
        token = JUDGE.set(counted_judge)
        bar = tqdm(
            total=len(planned),
            initial=len(planned) - len(pending),
            desc=run_id,
            unit="sample",
            disable=not progress,
            mininterval=0.2,
        )
        status = "interrupted"
        try:
            if sharded is None:
                await execution.execute(pending, concurrency, bar)
            else:
                await sharded.execute(
                    execution, pending, concurrency, str(path), counted_judge, bar
                )
            status = "interrupted" if budget.reached else "complete"
        finally:
            JUDGE.reset(token)
            bar.close()
            execution.flush()
            if counted_judge is not None:
                manifest.setdefault("judge", {"calls": 0})["calls"] += counted_judge.calls
            manifest.update(status=status, ended_at=now().isoformat())
            _end_budget(manifest, budget)
            _end_cache(manifest, cached)
            store.write_json_atomic(path / "manifest.json", manifest)
    return _result(path, run_id, variants, status, budget)


async def _describe(target: Any) -> dict[str, Any]:
    describe = getattr(target, "describe", None)
    return await describe() if describe else {"type": type(target).__name__}


def _start_budget(manifest: dict[str, Any], budget: Budget, resumed: Path | None) -> None:
    """Record this session's limits; on a resume, count what the run has spent already and
    keep the earlier session's stop with that resume."""
    if resumed is not None:
        stopped = manifest.pop("stopped", None)
        if stopped is not None:
            manifest["resumes"][-1]["after_stop"] = stopped
        if budget.active:
            columns = ["status", "model", "prompt_tokens", "completion_tokens", "total_tokens"]
            spent = store.read_table(resumed, "samples", [*columns, "cached"])
            for row in spent.to_pylist():
                budget.add(row)
    if budget.active or budget.prices:
        manifest["budget"] = budget.limits()
    else:
        manifest.pop("budget", None)


def _end_budget(manifest: dict[str, Any], budget: Budget) -> None:
    stopped = budget.record()
    if stopped is not None:
        manifest["stopped"] = stopped


def _end_cache(manifest: dict[str, Any], cached: ResponseCache | None) -> None:
    """Record that a cache served this run, with its hits and misses over every session."""
    if cached is None:
        return
    earlier = manifest.get("cache") or {}
    record = cached.record()
    for count in ("hits", "misses"):
        record[count] += earlier.get(count, 0)
    manifest["cache"] = record


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


def _costs(path: Path, variants: Sequence[Variant], prices: Prices) -> dict[str, tuple[float, int]]:
    """Dollars and unpriced samples per variant; a sample served from a cache cost nothing."""
    columns = ["variant", "model", "prompt_tokens", "completion_tokens", "cached"]
    dollars = {v.name: 0.0 for v in variants}
    unpriced = {v.name: 0 for v in variants}
    for row in store.read_table(path, "samples", columns).to_pylist():
        if row["cached"]:
            continue
        cost = sample_cost(prices, row["model"], row["prompt_tokens"], row["completion_tokens"])
        if cost is None:
            unpriced[row["variant"]] += 1
        else:
            dollars[row["variant"]] += cost
    return {v: (dollars[v], unpriced[v]) for v in dollars}


def _result(
    path: Path, run_id: str, variants: Sequence[Variant], run_status: str, budget: Budget
) -> RunResult:
    """Counts over every sample of the run, earlier sessions of a resumed run included."""
    written = store.read_table(path, "samples", ["variant", "status", "latency_ms", "error"])
    counts: dict[str, Counter[str]] = {v.name: Counter() for v in variants}
    latencies: dict[str, list[float]] = {v.name: [] for v in variants}
    errors: Counter[str] = Counter()
    columns = (written.column(c).to_pylist() for c in written.column_names)
    for variant, status, latency, error in zip(*columns, strict=True):
        counts[variant][status] += 1
        latencies[variant].append(latency)
        if status != "completed":
            errors[(error or status)[:300]] += 1
    checks: dict[str, dict[str, list[int]]] = {v.name: {} for v in variants}
    scored: dict[str, dict[str, list[float]]] = {v.name: {} for v in variants}
    outcomes = store.read_table(
        path, "checks", ["variant", "check", "outcome", "score"], scoring="run"
    )
    columns = (outcomes.column(c).to_pylist() for c in outcomes.column_names)
    for variant, check, outcome, score in zip(*columns, strict=True):
        tally = checks[variant].setdefault(check, [0, 0])
        if outcome is not None:
            tally[0] += outcome
            tally[1] += 1
        if score is not None:
            scored[variant].setdefault(check, []).append(score)
    tallies = {v: {c: (k, n) for c, (k, n) in t.items()} for v, t in checks.items()}
    means = {v: {c: statistics.fmean(s) for c, s in t.items()} for v, t in scored.items()}
    costs = _costs(path, variants, budget.prices) if budget.prices else {}
    return RunResult(
        path,
        run_id,
        run_status,
        counts,
        latencies,
        tallies,
        means,
        costs=costs,
        stopped=budget.record(),
        errors=errors,
    )


def run(
    cases: Sequence[Case] | str | os.PathLike[str],
    target: Target,
    *,
    variants: Iterable[Variant | str] | None = None,
    repeats: int = 1,
    out: str | os.PathLike[str] | None = None,
    concurrency: int = 8,
    resume: bool = False,
    overwrite: bool = False,
    order: str = "alternate",
    seed: int = 0,
    checks: Iterable[CheckSpec] = (),
    timeout: float | None = None,
    progress: bool = True,
    flush_every: int = 5000,
    flush_seconds: float = 5.0,
    command: Sequence[str] | None = None,
    on_start: Callable[[Path], None] | None = None,
    judge: Target | None = None,
    canonical: Callable[[str, Case], str | None] | None = None,
    defaults: Mapping[str, Any] | None = None,
    cluster: Any = None,
    shard_size: int = 100,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    prices: Prices | str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Run every case for every variant ``repeats`` times against ``target``.

    Writes a run directory and returns a :class:`RunResult`. One sample's failure becomes an
    incomplete sample; Ctrl-C flushes what is done, marks the manifest ``interrupted`` and
    raises ``KeyboardInterrupt`` (:class:`RunInterrupted`, which says how many samples are
    saved and the call that resumes them). Works in a notebook too (the run gets its own
    event loop on a worker thread).

    Every case is checked against every variant before anything runs (an undefined
    template variable, a prefix with no user message), as are the checks.

    Parameters:
        cases: a cases file (``.jsonl``, ``.json``, ``.yaml``, ``.csv``) or :class:`Case`
            objects.
        target: a :class:`~evalnb.targets.Target` (``async complete(request)``).
        variants: :class:`Variant` objects or names (a name alone changes nothing);
            default one variant, ``baseline``.
        repeats: samples per case and variant.
        out: the run directory to create; default ``runs/run-<time>-<hex>``. An existing
            directory is refused unless ``resume``.
        concurrency: samples in flight at once.
        resume: finish the run in ``out``: only the missing keys run; the cases, variants,
            repeats and order must be the original run's.
        overwrite: start afresh in ``out`` even if a run is there: the old one is renamed
            ``<out>.replaced-<UTC time>`` beside it (a line on stderr says where), never
            deleted; refused while another process writes it.
        order: ``"alternate"`` (each case and repeat rotates which variant goes first) or
            ``"shuffle"`` (seeded); the planned order is kept in the manifest.
        seed: the seed of ``"shuffle"``.
        checks: checks added to every case (specs, callables or check objects); a name a
            case's own check has already is an error.
        timeout: seconds one sample may take in all (``None``: the target's own limits).
        progress: show a tqdm progress bar (also in a notebook).
        flush_every: write a part after this many samples...
        flush_seconds: ...or after this many seconds, whichever comes first.
        command: the command line recorded in the manifest (the CLI passes its own).
        on_start: called with the run directory once it exists, before the first sample.
        judge: the target that answers ``judge`` checks (required when a case has one).
        canonical: ``fn(answer, case)`` giving the form two answers must share to agree;
            default: the expected keys as JSON for cases with ``expect_keys``, else the
            answer with white space collapsed and case folded.
        defaults: checks and fields applied to every case of a cases file, under the file's
            own ``defaults`` (an experiment file's ``[defaults]``).
        cluster: a ``distributed.Client`` or a Dask scheduler address (``tcp://host:8786``):
            the pending keys run there as shards (``evalnb.runner._distributed``); every worker
            must see ``out`` at the same path. Default: run here.
        shard_size: samples per shard on a cluster; each shard commits atomically.
        max_cost: stop the run once the finished samples cost this many dollars (needs
            ``prices``): no new sample starts, the ones in flight finish, the run is marked
            ``interrupted`` with ``stopped`` in its manifest, and ``resume`` finishes it (a
            resume may raise the limit; what the run spent before counts).
        max_tokens: the same for prompt + completion tokens.
        prices: a price table (TOML file, or model -> (input, output) dollars per million
            tokens): needed by ``max_cost``; with it the summary shows what the run cost.
        cache: a development cache directory (off by default; an ``OpenAIChat`` target
            only): completions are stored keyed by the exact request body and the repeat
            index, and served from there next time (the sample's ``cached`` column says so;
            the manifest's ``cache`` counts hits and misses). Never the API key or headers.

    >>> result = run("data/cases/shop.jsonl", target, variants=["v1"], repeats=10)
    """
    started: list[Path] = []

    def starting(path: Path) -> None:
        started.append(path)
        if on_start is not None:
            on_start(path)

    try:
        return cast(
            RunResult,
            run_sync(
                arun(
                    cases,
                    target,
                    variants=variants,
                    repeats=repeats,
                    out=out,
                    concurrency=concurrency,
                    resume=resume,
                    overwrite=overwrite,
                    order=order,
                    seed=seed,
                    checks=checks,
                    timeout=timeout,
                    progress=progress,
                    flush_every=flush_every,
                    flush_seconds=flush_seconds,
                    command=command,
                    on_start=starting,
                    judge=judge,
                    canonical=canonical,
                    defaults=defaults,
                    cluster=cluster,
                    shard_size=shard_size,
                    max_cost=max_cost,
                    max_tokens=max_tokens,
                    prices=prices,
                    cache=cache,
                )
            ),
        )
    except KeyboardInterrupt as exc:
        if command is not None or not started or isinstance(exc, RunInterrupted):
            raise  # the command line says it in its own terms
        raise RunInterrupted(started[0]) from None


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C or a kernel interrupt, after saving what finished: says how
    many samples are saved and the call that resumes them. One line in IPython."""

    def __init__(self, path: Path) -> None:
        try:
            saved = len(store.sample_keys(path))
            planned = len((store.read_manifest(path).get("order") or {}).get("planned") or [])
        except Exception:  # a run stopped before its manifest: say what is known
            saved, planned = 0, 0
        of = f" of {planned}" if planned else ""
        super().__init__(
            f"interrupted: {saved}{of} samples saved in {path}. To finish the run, call "
            f"evalnb.run again with the same arguments and out={str(path)!r}, resume=True"
        )
        self.path, self.saved = path, saved

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31mRunInterrupted\x1b[0m: {self}"]


def _move_aside(path: Path, started: Any) -> Path:
    """Rename the run in ``path`` to ``<path>.replaced-<time>`` (never deleted: nothing is
    lost by a re-run cell), unless a process is writing it."""
    lock = None
    if (path / "manifest.json").exists():
        lock = store.RunLock(path, "run").acquire()
    aside = path.with_name(f"{path.name}.replaced-{started:%Y%m%dT%H%M%S%fZ}")
    try:
        path.rename(aside)
    finally:
        if lock is not None:
            lock.release()
    print(f"evalnb: moved the earlier run in {path} to {aside}", file=sys.stderr)
    return aside
