"""Cases x variants x repeats -> samples, with bounded concurrency, written as they finish.

A call of :func:`arun` is a :class:`_Session` taken through its phases, in order::

    prepare   check every argument, load and bind the cases and their checks, plan
    open      the run directory, its lock, manifest and cases; the target and the judge
    execute   the pending keys, ``concurrency`` at a time (or as shards on a cluster),
              each sample written as it finishes (:class:`_Execution`)
    compare   once every key is written, the checks that compare the variants' answers
              of a case and repeat (``select-best``), one pass over the groups
    finish    what is buffered, then the final status in the manifest; the result

:func:`run` is :func:`arun` made blocking (:func:`~evalnb.runner._blocking.blocking`). The
runner never imports the analysis. Its job ends when every planned sample is written:
whatever the model did, a finished run is a success.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from tqdm.auto import tqdm

from evalnb import store
from evalnb._evidence import canonical_answer, evidence_from
from evalnb._exceptions import ArgumentError, StoreError, TargetError
from evalnb._numbers import is_whole
from evalnb._prices import Prices
from evalnb._stopping import RepeatRule
from evalnb._types import EVIDENCE_FIELDS, Case, Completion, Request, Sample, Variant
from evalnb.cases import ORDERS, JudgeSpec, RunDesign
from evalnb.checks import (
    Check,
    CheckSpec,
    arun_checks,
    checks_for,
    comparing_checks,
    load_functions,
    require_trust,
)
from evalnb.runner._blocking import blocking
from evalnb.runner._budget import Budget
from evalnb.runner._compared import compared
from evalnb.runner._judging import embeddings_of, judge_target, judging, require_judge
from evalnb.runner._manifest import check_same_target, new_manifest
from evalnb.runner._result import RunResult, Tally
from evalnb.runner._settle import Settling
from evalnb.runner._until import (
    StoppingRule,
    Watch,
    case_major,
    check_rule,
    check_same_rule,
    drawn_order,
    start_record,
)
from evalnb.targets import CountingTarget, ResponseCache, Target

__all__ = ["arun", "plan", "run"]

# Built once: json.dumps builds an encoder on every call that passes options, and every
# sample encodes its request.
_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
_encode_sorted = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


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
        text = _encode_sorted([dict(m) for m in messages])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _default_canonical(answer: str, case: Case) -> str | None:
    return canonical_answer(answer, case.expect_keys)


def _json(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return _encode(value)


class _Execution:
    """One pass over the pending plan: workers, buffer, flushes and progress.

    A ``tally`` counts every batch as it is written (a run summed up without reading it
    back); a shard's execution has none.
    """

    def __init__(
        self,
        target: Target,
        writer: store.RunWriter,
        run_id: str,
        checks: dict[str, tuple[Check, ...]],
        *,
        timeout: float | None,
        flush_every: int,
        flush_seconds: float,
        canonical: Callable[[str, Case], str | None],
        budget: Budget | None = None,
        tally: Tally | None = None,
        watch: Watch | None = None,
        settling: Settling | None = None,
    ) -> None:
        self.budget = budget
        self.watch = watch
        self.settling = settling
        self.target = target
        self.canonical = canonical
        self.writer = writer
        self.run_id = run_id
        self.checks = checks
        self.timeout = timeout
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.tally = tally
        self.samples: list[Sample] = []
        self.results: list[tuple[Sample, Any]] = []
        self.last_flush = time.monotonic()
        self.incomplete = 0

    async def attempt(self, case: Case, variant: Variant, repeat: int, order: int) -> Sample:
        messages = variant.messages_for(case, repeat)
        request = Request(case, variant, repeat, messages, variant.params)
        started = store.now()
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
        results = await arun_checks(self.checks[case.id], sample)
        self.results.extend([(sample, result) for result in results])
        self.samples.append(sample)
        if self.budget is not None:
            self.budget.add_sample(sample)
        if self.watch is not None:
            self.watch.add_sample(sample, results)
            self.watch.update()
        if self.settling is not None:
            self.settling.add_sample(sample, results)
        if not sample.completed:
            self.incomplete += 1
        if (
            len(self.samples) >= self.flush_every
            or time.monotonic() - self.last_flush >= self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        # Tally what was stored: a sample the writer could not store as given is kept as
        # ``malformed``, and the summary counts it as such.
        samples, results = self.writer.write(self.samples, self.results)
        if self.tally is not None:
            self.tally.add(samples, results)
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
                if self.watch is not None and self.watch.decided:
                    return  # decided: the samples in flight finish and are kept
                if self.watch is not None and not self.watch.wants(variant.name):
                    bar.update(1)
                    continue  # eliminated from a race: no more samples of it
                if self.settling is not None and not self.settling.wants(
                    case.id, variant.name, repeat
                ):
                    bar.update(1)
                    continue  # the case's earlier repeats settled it
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


@dataclasses.dataclass
class _Opened:
    """The run directory as :meth:`_Session.open` holds it: what execute and finish read.
    ``manifest`` is the one dict written back to ``manifest.json`` as the run goes."""

    path: Path
    run_id: str
    manifest: dict[str, Any]
    done: set[tuple[str, str, int]]
    resumed: bool
    fence: Any
    sharded: Any = None
    counted_judge: CountingTarget | None = None


class _Session:
    """One run of a :class:`~evalnb.cases.RunDesign` against a target: what its phases
    share, all set here; each phase takes what it needs and returns what the next reads.

    ::

        session = _Session(design, target, judge, ...)   # bind checks, plan, budget
        path = session.directory(out, resume, overwrite)
        async with session.open(path, resume) as opened:  # lock, manifest, target, judge
            execution = session.execution(opened, ...)
            status = await session.execute(opened, execution, progress)
            session.finish(opened, execution, status)
        session.result(opened, status)
    """

    def __init__(
        self,
        design: RunDesign,
        target: Target,
        judge: Target | None,
        *,
        command: Sequence[str] | None,
        on_start: Callable[[Path], None] | None,
        cluster: Any = None,
        shard_size: int = 100,
    ) -> None:
        if not callable(getattr(target, "complete", None)):
            raise TypeError(f"'target' must have an async complete(request) method; got {target!r}")
        if not is_whole(shard_size, 1):
            raise ArgumentError(f"'shard_size' must be a whole number >= 1; got {shard_size!r}")
        if design.judge is not None:
            if judge is not None:
                raise ArgumentError(
                    f"the design names its judge ({design.judge.model!r}); pass no judge="
                )
            judge = judge_target(design.judge, target)
        self.design = design
        self.target = target
        self.judge = judge
        self.command = command
        self.on_start = on_start
        self.cluster = cluster
        self.shard_size = shard_size
        self.by_case = {case.id: checks_for(case, design.checks) for case in design.cases}
        require_judge(judge, self.by_case.values())
        if cluster is not None and (design.max_cost or design.max_tokens or design.cache):
            # Each shard runs apart: neither a budget nor a cache is shared across them yet.
            raise ArgumentError(
                "'max_cost', 'max_tokens' and 'cache' work on one machine; not with 'cluster'"
            )
        self.budget = Budget(design.max_cost, design.max_tokens, design.prices)
        self.cached = None if design.cache is None else ResponseCache(target, design.cache)
        self.planned, self.watch = _planned(design)
        rule = design.repeat_rule
        self.settling = None if rule is None else Settling(rule)
        self.tally = Tally((v.name for v in design.variants), self.budget.prices)
        self.started = store.now()

    @contextlib.contextmanager
    def kept(self, path: Path) -> Iterator[None]:
        """A run directory removed while the run writes it ends in one StoreError naming
        it, not in a traceback from deep inside the writer."""
        try:
            yield
        except FileNotFoundError as exc:
            if path.is_dir():
                raise
            raise StoreError(
                f"{path}: the run directory was removed while the run was writing it; "
                "the samples not yet saved there are lost"
            ) from exc

    @contextlib.asynccontextmanager
    async def open(self, path: Path, resume: bool) -> AsyncIterator[_Opened]:
        """Hold the run directory, new or resumed, with its lock, manifest and cases; open
        and describe the target and the judge; mark the run ``running``. Everything opened
        is closed on the way out, the lock last."""
        # pyarrow imports pandas (~1 s) on its first conversion of Python values: paid
        # before the run exists, so that once its manifest is written its samples follow.
        store.cases_table(path.name, self.design.cases[:1])
        # One writer per run: held until the run ends (the kernel drops it if we die).
        lock = store.RunLock(path, "run")
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(lock.release)
            opened = self._take_over(path, lock) if resume else self._create(path, lock)
            _start_budget(opened.manifest, self.budget, path if resume else None)
            if self.on_start is not None:
                self.on_start(path)
            if isinstance(self.target, contextlib.AbstractAsyncContextManager):
                await stack.enter_async_context(self.target)
            opened.counted_judge = await stack.enter_async_context(judging(self.judge))
            stack.enter_context(embeddings_of(self.target))
            await self._describe(opened)
            if self.cluster is not None:
                from evalnb.runner._distributed import Sharded

                opened.sharded = Sharded(self.cluster, self.shard_size, opened.fence)
                stack.callback(opened.sharded.close)
                opened.manifest.setdefault("clusters", []).append(opened.sharded.record())
            opened.manifest["status"] = "running"
            store.write_json_atomic(store.manifest_path(path), opened.manifest)
            yield opened

    def directory(self, out: str | os.PathLike[str] | None, resume: bool, overwrite: bool) -> Path:
        """The folder ``out`` names (default ``runs/run-<time>-<hex>``), free for a new run
        once an earlier one is moved aside (``overwrite``)."""
        if out is None:
            out = Path("runs") / f"run-{self.started:%Y%m%dT%H%M%SZ}-{os.urandom(2).hex()}"
        path = store.run_path(out)
        if overwrite and resume:
            raise ArgumentError("'overwrite' and 'resume' exclude each other; got both True")
        if not resume and (path.exists() or path.is_symlink()):
            if not store.is_run_dir(path):
                # Only a run is ever moved aside: any other folder is the user's.
                raise StoreError(
                    f"{path}: output directory already exists and is not a run; choose "
                    "another out= (or --out)"
                )
            if overwrite:
                _move_aside(path, self.started)
            elif self.command is None:
                raise StoreError(
                    f"{path} already holds a run. Re-running the cell? Pass resume=True to "
                    "finish that run, or overwrite=True to start afresh (the old run is moved "
                    f"to {path.name}.replaced-<time> beside it, not deleted), or choose "
                    "another out="
                )
        return path

    def _take_over(self, path: Path, lock: store.RunLock) -> _Opened:
        """Resume the run in ``path``: the same design, only the keys it lacks."""
        store.read_manifest(path)  # not a run: say so before touching it
        lock.acquire()
        # Shards an earlier driver left running can commit no more.
        fence = store.fence_shards(path, create=self.cluster is not None)
        manifest = store.read_manifest(path)
        self.design.same_run(manifest, str(store.manifest_path(path)))
        if not any((path / "cases").glob("part-*.parquet")):
            # Killed before it wrote them, or older.
            store.RunWriter(path).write_cases(self.design.cases)
        store.remove_orphan_parts(path)
        check_same_rule(manifest.get("until"), self.design.until, path)
        done = store.sample_keys(path)
        if self.watch is not None:
            self.watch.replay(path, done)
        if self.settling is not None:
            self.settling.replay(path, done)
        manifest.setdefault("resumes", []).append(
            {
                "started_at": self.started.isoformat(),
                "command": list(self.command) if self.command else None,
            }
        )
        return _Opened(path, manifest["run_id"], manifest, done, resumed=True, fence=fence)

    def _create(self, path: Path, lock: store.RunLock) -> _Opened:
        """A new run directory with its manifest and cases."""
        store.create_run_dir(path)
        lock.acquire()
        fence = store.fence_shards(path, create=self.cluster is not None)
        manifest = new_manifest(path.name, self.started, self.design, self.planned, self.command)
        if self.watch is not None:
            manifest["until"] = start_record(self.watch.rule, self.watch.drawn)
        # Written before the target is probed (which may take its whole timeout), so a
        # kill at any moment leaves a run that --resume can finish.
        store.write_json_atomic(store.manifest_path(path), manifest)
        store.RunWriter(path).write_cases(self.design.cases)
        _keep_import_record(self.design.cases_file, path)
        return _Opened(path, path.name, manifest, set(), resumed=False, fence=fence)

    async def _describe(self, opened: _Opened) -> None:
        """The target (the resumed run's own, or refused) and the judge, in the manifest."""
        manifest = opened.manifest
        described = await _describe(self.target)
        if manifest.get("target") is None:
            manifest["target"] = described
        else:
            check_same_target(manifest["target"], described, opened.path)
        judge = manifest.get("judge") or {}
        if self.judge is not None and not judge.get("target"):
            manifest["judge"] = {**judge, "target": await _describe(self.judge), "calls": 0}

    def execution(
        self,
        opened: _Opened,
        timeout: float | None,
        canonical: Callable[[str, Case], str | None] | None,
        flush_every: int,
        flush_seconds: float,
    ) -> _Execution:
        """The pass over the pending keys, writing into ``opened``."""
        # Samples written here are counted as written; a resumed or sharded run is read.
        local = not opened.resumed and opened.sharded is None
        return _Execution(
            self.cached or self.target,
            store.RunWriter(opened.path),
            opened.run_id,
            self.by_case,
            timeout=timeout,
            flush_every=flush_every,
            flush_seconds=flush_seconds,
            canonical=canonical or _default_canonical,
            budget=self.budget,
            tally=self.tally if local else None,
            watch=self.watch,
            settling=self.settling,
        )

    async def execute(self, opened: _Opened, execution: _Execution, progress: bool) -> str:
        """Run every key not written yet, ``concurrency`` at a time (or as shards on the
        cluster), writing as samples finish; returns the run's status: ``complete`` once
        all are, unless its budget stopped it."""
        done = opened.done
        pending = [
            (i, entry)
            for i, entry in enumerate(self.planned)
            if not done or (entry[0].id, entry[1].name, entry[2]) not in done
        ]
        concurrency = self.design.concurrency
        with tqdm(
            total=len(self.planned),
            initial=len(self.planned) - len(pending),
            desc=opened.run_id,
            unit="sample",
            disable=not progress,
            mininterval=0.2,
        ) as bar:
            if opened.sharded is None:
                await execution.execute(pending, concurrency, bar)
            else:
                await opened.sharded.execute(
                    execution, pending, concurrency, str(opened.path), opened.counted_judge, bar
                )
        decided = self.watch is not None and self.watch.decided
        return "interrupted" if self.budget.reached and not decided else "complete"

    async def compare(self, opened: _Opened, execution: _Execution) -> None:
        """Grade the checks that compare the variants' answers of each case and repeat
        (``select-best``), once every sample is written: over the stored samples, an
        earlier session's too; a group graded already is left alone."""
        if not comparing_checks(self.by_case.values()):
            return
        execution.flush()
        variants = [v.name for v in self.design.variants]
        results = await compared(opened.path, self.by_case, variants)
        execution.writer.write_group_checks(results)
        if execution.tally is not None:
            execution.tally.add([], results)

    def finish(self, opened: _Opened, execution: _Execution, status: str) -> None:
        """Write what is buffered, then the run's status, judge calls, budget and cache into
        the manifest; runs however the execution ended."""
        execution.flush()
        manifest = opened.manifest
        if opened.counted_judge is not None:
            manifest.setdefault("judge", {"calls": 0})["calls"] += opened.counted_judge.calls
        manifest.update(status=status, ended_at=store.now().isoformat())
        _end_budget(manifest, self.budget)
        if self.watch is not None:
            manifest["until"] = self.watch.record(self._stopped(status))
        _end_cache(manifest, self.cached)
        store.write_json_atomic(store.manifest_path(opened.path), manifest)

    def _stopped(self, status: str) -> str:
        """Why a run with a stopping rule ended: ``decided``, ``budget``, ``cases`` (every
        case ran undecided) or ``interrupted``."""
        if self.watch is not None and self.watch.decided:
            return "decided"
        if self.budget.reached:
            return "budget"
        return "cases" if status == "complete" else "interrupted"

    def result(self, opened: _Opened, status: str) -> RunResult:
        """The run's :class:`RunResult`, over every sample of the run (those of a resumed
        run's earlier sessions and of a cluster's shards are read from its tables)."""
        if opened.resumed or opened.sharded is not None:
            self.tally.read(opened.path)
        return self.tally.result(opened.path, opened.run_id, status, self.budget)


def _planned(design: RunDesign) -> tuple[list[tuple[Case, Variant, int]], Watch | None]:
    """The keys in the order they run, and the watch of the design's stopping rule."""
    cases, variants = list(design.cases), list(design.variants)
    if design.until is None:
        return plan(cases, variants, design.max_repeats, design.order, design.seed), None
    check_rule(design.until, variants, design.order)
    drawn = drawn_order(cases, design.seed)
    planned = plan(drawn, variants, design.max_repeats, design.order, design.seed)
    watch = Watch(
        design.until,
        drawn,
        len(variants) * design.max_repeats,
        [v.name for v in variants],
    )
    return case_major(planned, drawn), watch


#: The keywords of :func:`arun` that build its :class:`RunDesign`, with their defaults.
_DESIGN_DEFAULTS: dict[str, Any] = {
    "variants": None,
    "repeats": 1,
    "order": "alternate",
    "seed": 0,
    "checks": (),
    "defaults": None,
    "until": None,
    "max_cost": None,
    "max_tokens": None,
    "prices": None,
    "concurrency": 8,
    "timeout": None,
    "cache": None,
}


async def arun(
    cases: RunDesign | Sequence[Case] | str | os.PathLike[str],
    target: Target,
    *,
    variants: Iterable[Variant | str] | None = None,
    repeats: int | RepeatRule = 1,
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
    judge: Target | JudgeSpec | None = None,
    canonical: Callable[[str, Case], str | None] | None = None,
    defaults: Mapping[str, Any] | None = None,
    cluster: Any = None,
    shard_size: int = 100,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    prices: Prices | str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | None = None,
    until: StoppingRule | None = None,
    trust_code: bool = False,
) -> RunResult:
    """Run every case for every variant ``repeats`` times against ``target``, write a run
    directory and return its :class:`RunResult`. ``run`` blocks (in a notebook too: the run
    gets its own event loop on a worker thread); ``arun`` is the same call, to await.

    The keywords that say what the run does build a :class:`~evalnb.RunDesign`; pass one as
    ``cases`` instead (``run(design, target, out=...)``), built once from keywords, an
    experiment file or a manifest. Everything is checked before anything runs. One sample's
    failure becomes an incomplete sample; Ctrl-C flushes what is done, marks the run
    ``interrupted`` and raises :class:`RunInterrupted` (a ``KeyboardInterrupt`` saying how
    to resume).

    Parameters:
        cases: a cases file (``.jsonl``, ``.json``, ``.yaml``, ``.csv``), :class:`Case`
            objects, or a :class:`~evalnb.RunDesign` (then no other design keyword).
        target: a :class:`~evalnb.targets.Target` (``async complete(request)``).
        variants: :class:`Variant` objects or names; default one variant, ``baseline``.
        repeats: samples per case and variant, or a rule that draws them one at a time
            until the case is settled (``evalnb.UntilSettled(max=10)``).
        out: the run directory to create (default ``runs/run-<time>-<hex>``); one that
            exists is refused unless ``resume`` or ``overwrite``.
        concurrency: samples in flight at once.
        resume: finish the run in ``out``: only its missing keys run; the cases, variants,
            repeats and order must be the original run's.
        overwrite: start afresh in ``out``: a run there is renamed ``<out>.replaced-<UTC
            time>`` (never deleted; stderr says so), unless another process writes it.
        order: ``"alternate"`` (each case and repeat rotates the variant that goes first)
            or ``"shuffle"``, seeded by ``seed``; the manifest keeps the planned order.
        checks: checks for every case (specs, callables or check objects), named apart from its own.
        timeout: seconds one sample may take (``None``: the target's own limits).
        progress: show a tqdm progress bar.
        flush_every, flush_seconds: write a part after this many samples or seconds.
        command: the command line the manifest records (the CLI passes its own).
        on_start: called with the run directory once it exists, before the first sample.
        judge: the target that answers ``judge`` checks (required when a case has one), or
            a :class:`~evalnb.cases.JudgeSpec` (a model at the target's server or its own).
        canonical: ``fn(answer, case)``, the form two agreeing answers share; default: the
            ``expect_keys`` as JSON, else the answer with white space collapsed, case folded.
        defaults: checks and fields for every case, as a cases file's own ``defaults``.
        cluster: a ``distributed.Client`` or a Dask scheduler address (``tcp://host:8786``):
            the pending keys run there in shards of ``shard_size`` samples, each committed
            atomically; every worker must see ``out`` at the same path.
        max_cost, max_tokens: stop once the finished samples cost this many dollars (with
            ``prices``) or tokens (prompt + completion): the run ends ``interrupted``, with
            ``stopped`` in its manifest, and ``resume`` finishes it (what was spent counts).
        prices: a price table (TOML file, or model -> (input, output) dollars per million
            tokens); the summary then shows what the run cost.
        cache: a development cache folder (``OpenAIChat`` only), keyed by case, variant,
            repeat and request body (``cached`` column); a damaged entry is asked again.
        until: a stopping rule (``evalnb.Decided``): cases in a seeded order until it decides.
        trust_code: run the code the suite carries (Python graders, promptfoo's JavaScript).

    >>> result = run("data/cases/shop.jsonl", target, variants=["v1"], repeats=10)
    """
    # The keywords that build the design, as given (read before any local is set).
    given = {key: value for key, value in locals().items() if key in _DESIGN_DEFAULTS}
    design, runtime_judge = _design_of(cases, judge, given)
    session = _Session(
        design,
        target,
        runtime_judge,
        command=command,
        on_start=on_start,
        cluster=cluster,
        shard_size=shard_size,
    )
    require_trust(session.by_case.values(), trust_code, "run")  # before anything is written
    load_functions(session.by_case)
    path = session.directory(out, resume, overwrite)
    return await _drive(session, path, resume, progress, canonical, flush_every, flush_seconds)


def _design_of(
    cases: RunDesign | Sequence[Case] | str | os.PathLike[str],
    judge: Target | JudgeSpec | None,
    given: dict[str, Any],
) -> tuple[RunDesign, Target | None]:
    """The design :func:`arun` runs (the one given, or built from its keywords), and the
    judge target given beside it."""
    spec = judge if isinstance(judge, JudgeSpec) else None
    if not isinstance(cases, RunDesign):
        return RunDesign.build(cases, judge=spec, **given), None if spec else cast(
            "Target | None", judge
        )
    changed = sorted(k for k, v in given.items() if v is not _DESIGN_DEFAULTS[k])
    if changed or spec is not None:
        raise ArgumentError(
            "pass a RunDesign or the keywords that build one, not both; got the design "
            f"and {[*changed, *(['judge'] if spec else [])]!r}"
        )
    return cases, cast("Target | None", judge)


async def _drive(
    session: _Session,
    path: Path,
    resume: bool,
    progress: bool,
    canonical: Callable[[str, Case], str | None] | None,
    flush_every: int,
    flush_seconds: float,
) -> RunResult:
    """The session through its phases: open, execute, finish (however execute ended)."""
    with session.kept(path):
        async with session.open(path, resume) as opened:
            execution = session.execution(
                opened, session.design.timeout, canonical, flush_every, flush_seconds
            )
            status = "interrupted"  # until execute has run every key
            try:
                done = await session.execute(opened, execution, progress)
                if done == "complete":
                    await session.compare(opened, execution)
                status = done
            finally:
                session.finish(opened, execution, status)
    return session.result(opened, status)


run = blocking(arun)


def _keep_import_record(cases_file: Mapping[str, Any] | None, path: Path) -> None:
    """Copy an imported suite's ``imported.json`` into the run (its SHA-256 is in the
    manifest's ``cases_file``), so what the import mapped, approximated and refused travels
    with the samples it shaped."""
    record = (cases_file or {}).get("imported")
    if record is None:
        return
    try:
        data = json.loads(Path(record["path"]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, or not JSON
        print(f"evalnb: {record['path']}: not kept in the run ({exc})", file=sys.stderr)
        return
    store.write_import_record(path, data)


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
    for count in ("hits", "misses", "rejected"):
        total = record.get(count, 0) + earlier.get(count, 0)
        if total or count != "rejected":  # "rejected" only when an entry was
            record[count] = total
    manifest["cache"] = record


def _move_aside(path: Path, started: Any) -> Path:
    """Rename the run in ``path`` to ``<path>.replaced-<time>`` (never deleted: nothing is
    lost by a re-run cell), unless a process is writing it."""
    lock = None
    if store.is_run_dir(path):
        lock = store.RunLock(path, "run").acquire()
    aside = path.with_name(f"{path.name}.replaced-{started:%Y%m%dT%H%M%S%fZ}")
    try:
        path.rename(aside)
    finally:
        if lock is not None:
            lock.release()
    print(f"evalnb: moved the earlier run in {path} to {aside}", file=sys.stderr)
    return aside
