"""Cases x variants x repeats -> samples, with bounded concurrency, written as they finish.

A call of :func:`arun` is a :class:`_Session` taken through its phases, in order::

    prepare   check every argument, load and bind the cases and their checks, plan
    open      the run directory, its lock, manifest and cases; the target and the judge
    execute   the pending keys, ``concurrency`` at a time (or as shards on a cluster),
              each sample written as it finishes (:class:`_Execution`)
    finish    what is buffered, then the final status in the manifest; the result

:func:`run` is :func:`arun` made blocking (:func:`~evalnb.runner._blocking.blocking`). The
runner never imports the analysis. Its job ends when every planned sample is written:
whatever the model did, a finished run is a success.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from evalnb import store
from evalnb._evidence import canonical_answer, evidence_from
from evalnb._exceptions import ArgumentError, StoreError, TargetError
from evalnb._numbers import is_whole
from evalnb._prices import Prices
from evalnb._types import EVIDENCE_FIELDS, Case, Completion, Request, Sample, Variant
from evalnb.cases import file_sha256, load_cases
from evalnb.checks import Check, CheckSpec, arun_checks, build_checks, built_cases, checks_for
from evalnb.runner._blocking import blocking
from evalnb.runner._budget import Budget
from evalnb.runner._judging import embeddings_of, judging, require_judge
from evalnb.runner._manifest import check_resume, check_same_target, new_manifest, now
from evalnb.runner._result import RunResult, Tally
from evalnb.runner._until import (
    StoppingRule,
    Watch,
    case_major,
    check_rule,
    check_same_rule,
    drawn_order,
    start_record,
)
from evalnb.targets import CountingTarget, Target
from evalnb.targets._cache import ResponseCache

__all__ = ["arun", "plan", "run"]

ORDERS = ("alternate", "shuffle")

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
        timeout: float | None,
        flush_every: int,
        flush_seconds: float,
        canonical: Callable[[str, Case], str | None],
        budget: Budget | None = None,
        tally: Tally | None = None,
        watch: Watch | None = None,
    ) -> None:
        self.budget = budget
        self.watch = watch
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
        results = await arun_checks(self.checks[case.id], sample)
        self.results.extend([(sample, result) for result in results])
        self.samples.append(sample)
        if self.budget is not None:
            self.budget.add_sample(sample)
        if self.watch is not None:
            self.watch.add_sample(sample, results)
            self.watch.update()
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


class _Session:
    """One call of :func:`arun`: the state its phases share. Each phase fills in what the
    next one reads; tests may drive them one by one."""

    def __init__(
        self,
        target: Target,
        judge: Target | None,
        *,
        command: Sequence[str] | None,
        on_start: Callable[[Path], None] | None,
        until: StoppingRule | None = None,
    ) -> None:
        self.target = target
        self.until = until
        self.judge = judge
        self.command = command
        self.on_start = on_start
        self.counted_judge: CountingTarget | None = None
        self.sharded: Any = None
        self.execution: _Execution | None = None
        self.resumed = False
        self.done: set[tuple[str, str, int]] = set()
        self.status = "interrupted"  # until execute has run every key
        self.watch: Watch | None = None

    def prepare(
        self,
        cases: Sequence[Case] | str | os.PathLike[str],
        variants: Iterable[Variant | str] | None,
        repeats: int,
        *,
        order: str,
        seed: int,
        checks: Iterable[CheckSpec],
        defaults: Mapping[str, Any] | None,
        concurrency: int,
        cluster: Any,
        shard_size: int,
        max_cost: float | None,
        max_tokens: int | None,
        prices: Prices | str | os.PathLike[str] | None,
        cache: str | os.PathLike[str] | None,
    ) -> None:
        """Check every argument, load and bind the cases and their checks, and plan the
        keys: a mistake is said before anything is written."""
        self.cases, self.cases_file = _load_cases(cases, defaults)
        self.variants = _variants(variants)
        for name, value in (
            ("repeats", repeats),
            ("concurrency", concurrency),
            ("shard_size", shard_size),
        ):
            if not is_whole(value, 1):
                raise ArgumentError(f"{name!r} must be a whole number >= 1; got {value!r}")
        if not callable(getattr(self.target, "complete", None)):
            raise TypeError(
                f"'target' must have an async complete(request) method; got {self.target!r}"
            )
        self.extra_checks = build_checks(checks)
        self.by_case = {case.id: checks_for(case, self.extra_checks) for case in self.cases}
        _check_messages(self.cases, self.variants)
        require_judge(self.judge, self.by_case.values())
        if cluster is not None and (max_cost is not None or max_tokens is not None or cache):
            # Each shard runs apart: neither a budget nor a cache is shared across them yet.
            raise ArgumentError(
                "'max_cost', 'max_tokens' and 'cache' work on one machine; not with 'cluster'"
            )
        self.budget = Budget(max_cost, max_tokens, prices)
        self.cached = None if cache is None else ResponseCache(self.target, cache)
        if self.until is None:
            self.planned = plan(self.cases, self.variants, repeats, order, seed)
        else:
            check_rule(self.until, self.variants, order, cluster)
            drawn = drawn_order(self.cases, seed)
            self.planned = case_major(plan(drawn, self.variants, repeats, order, seed), drawn)
            self.watch = Watch(self.until, [c.id for c in drawn], len(self.variants) * repeats)
        self.repeats, self.order, self.seed = repeats, order, seed
        self.concurrency, self.cluster, self.shard_size = concurrency, cluster, shard_size
        self.tally = Tally((v.name for v in self.variants), self.budget.prices)
        self.started = now()

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """A run directory removed while the run writes it ends in one StoreError naming
        it, not in a traceback from deep inside the writer."""
        try:
            yield
        except FileNotFoundError as exc:
            path = getattr(self, "path", None)
            if path is None or path.is_dir():
                raise
            raise StoreError(
                f"{path}: the run directory was removed while the run was writing it; "
                "the samples not yet saved there are lost"
            ) from exc

    @contextlib.asynccontextmanager
    async def open(
        self, out: str | os.PathLike[str] | None, *, resume: bool, overwrite: bool
    ) -> AsyncIterator[None]:
        """Hold the run directory, new or resumed, with its lock, manifest and cases; open
        and describe the target and the judge; mark the run ``running``. Everything opened
        is closed on the way out, the lock last."""
        self.path = self._directory(out, resume, overwrite)
        # pyarrow imports pandas (~1 s) on its first conversion of Python values: paid
        # before the run exists, so that once its manifest is written its samples follow.
        store.cases_table(self.path.name, self.cases[:1])
        # One writer per run: held until the run ends (the kernel drops it if we die).
        lock = store.RunLock(self.path, "run")
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(lock.release)
            if resume:
                self._take_over(lock)
            else:
                self._create(lock)
            _start_budget(self.manifest, self.budget, self.path if resume else None)
            if self.on_start is not None:
                self.on_start(self.path)
            if isinstance(self.target, contextlib.AbstractAsyncContextManager):
                await stack.enter_async_context(self.target)
            self.counted_judge = await stack.enter_async_context(judging(self.judge))
            stack.enter_context(embeddings_of(self.target))
            await self._describe()
            if self.cluster is not None:
                from evalnb.runner._distributed import Sharded

                self.sharded = Sharded(self.cluster, self.shard_size, self.fence)
                stack.callback(self.sharded.close)
                self.manifest.setdefault("clusters", []).append(self.sharded.record())
            self.manifest["status"] = "running"
            store.write_json_atomic(self.path / "manifest.json", self.manifest)
            yield

    def _directory(self, out: str | os.PathLike[str] | None, resume: bool, overwrite: bool) -> Path:
        """The folder ``out`` names (default ``runs/run-<time>-<hex>``), free for a new run
        once an earlier one is moved aside (``overwrite``)."""
        if out is None:
            out = Path("runs") / f"run-{self.started:%Y%m%dT%H%M%SZ}-{os.urandom(2).hex()}"
        path = store.run_path(out)
        if overwrite and resume:
            raise ArgumentError("'overwrite' and 'resume' exclude each other; got both True")
        if not resume and (path.exists() or path.is_symlink()):
            if not (path / "manifest.json").is_file():
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

    def _take_over(self, lock: store.RunLock) -> None:
        """Resume the run in ``path``: the same plan, only the keys it lacks."""
        path = self.path
        store.read_manifest(path)  # not a run: say so before touching it
        lock.acquire()
        # Shards an earlier driver left running can commit no more.
        self.fence = store.fence_shards(path, create=self.cluster is not None)
        self.manifest = store.read_manifest(path)
        check_resume(
            self.manifest, path, self.cases, self.variants, self.repeats, self.order, self.seed
        )
        if not any((path / "cases").glob("part-*.parquet")):
            store.RunWriter(path).write_cases(self.cases)  # killed before it wrote them, or older
        store.remove_orphan_parts(path)
        check_same_rule(self.manifest.get("until"), self.until, path)
        self.done = store.sample_keys(path)
        if self.watch is not None:
            self.watch.replay(path, self.done)
        self.run_id = self.manifest["run_id"]
        self.resumed = True
        self.manifest.setdefault("resumes", []).append(
            {
                "started_at": self.started.isoformat(),
                "command": list(self.command) if self.command else None,
            }
        )

    def _create(self, lock: store.RunLock) -> None:
        """A new run directory with its manifest and cases."""
        path = self.path
        store.create_run_dir(path)
        lock.acquire()
        self.fence = store.fence_shards(path, create=self.cluster is not None)
        self.done = set()
        self.run_id = path.name
        self.manifest = new_manifest(
            self.run_id,
            self.started,
            cases=self.cases,
            cases_file=self.cases_file,
            extra_checks=self.extra_checks,
            variants=self.variants,
            repeats=self.repeats,
            concurrency=self.concurrency,
            order=self.order,
            seed=self.seed,
            planned=self.planned,
            command=self.command,
        )
        if self.watch is not None:
            self.manifest["until"] = start_record(self.watch.rule, self.watch.drawn)
        # Written before the target is probed (which may take its whole timeout), so a
        # kill at any moment leaves a run that --resume can finish.
        store.write_json_atomic(path / "manifest.json", self.manifest)
        store.RunWriter(path).write_cases(self.cases)
        _keep_import_record(self.cases_file, path)

    async def _describe(self) -> None:
        """The target (the resumed run's own, or refused) and the judge, in the manifest."""
        described = await _describe(self.target)
        if self.manifest.get("target") is None:
            self.manifest["target"] = described
        else:
            check_same_target(self.manifest["target"], described, self.path)
        if self.judge is not None and not (self.manifest.get("judge") or {}).get("target"):
            self.manifest["judge"] = {"target": await _describe(self.judge), "calls": 0}

    async def execute(
        self,
        timeout: float | None,
        canonical: Callable[[str, Case], str | None] | None,
        progress: bool,
        flush_every: int,
        flush_seconds: float,
    ) -> None:
        """Run every key not written yet, ``concurrency`` at a time (or as shards on the
        cluster), writing as samples finish; the run is ``complete`` once all are, unless
        its budget stopped it."""
        done = self.done
        pending = [
            (i, entry)
            for i, entry in enumerate(self.planned)
            if not done or (entry[0].id, entry[1].name, entry[2]) not in done
        ]
        # Samples written here are counted as written; a resumed or sharded run is read.
        local = not self.resumed and self.sharded is None
        self.execution = _Execution(
            self.cached or self.target,
            store.RunWriter(self.path),
            self.run_id,
            self.by_case,
            timeout,
            flush_every,
            flush_seconds,
            canonical or _default_canonical,
            self.budget,
            self.tally if local else None,
            self.watch,
        )
        with tqdm(
            total=len(self.planned),
            initial=len(self.planned) - len(pending),
            desc=self.run_id,
            unit="sample",
            disable=not progress,
            mininterval=0.2,
        ) as bar:
            if self.sharded is None:
                await self.execution.execute(pending, self.concurrency, bar)
            else:
                await self.sharded.execute(
                    self.execution,
                    pending,
                    self.concurrency,
                    str(self.path),
                    self.counted_judge,
                    bar,
                )
        decided = self.watch is not None and self.watch.decided
        self.status = "interrupted" if self.budget.reached and not decided else "complete"

    def finish(self) -> None:
        """Write what is buffered, then the run's status, judge calls, budget and cache into
        the manifest; runs however the execution ended."""
        if self.execution is not None:
            self.execution.flush()
        if self.counted_judge is not None:
            self.manifest.setdefault("judge", {"calls": 0})["calls"] += self.counted_judge.calls
        self.manifest.update(status=self.status, ended_at=now().isoformat())
        _end_budget(self.manifest, self.budget)
        if self.watch is not None:
            self.manifest["until"] = self.watch.record(self._stopped())
        _end_cache(self.manifest, self.cached)
        store.write_json_atomic(self.path / "manifest.json", self.manifest)

    def _stopped(self) -> str:
        """Why a run with a stopping rule ended: ``decided``, ``budget``, ``cases`` (every
        case ran undecided) or ``interrupted``."""
        if self.watch is not None and self.watch.decided:
            return "decided"
        if self.budget.reached:
            return "budget"
        return "cases" if self.status == "complete" else "interrupted"

    def result(self) -> RunResult:
        """The run's :class:`RunResult`, over every sample of the run (those of a resumed
        run's earlier sessions and of a cluster's shards are read from its tables)."""
        if self.resumed or self.sharded is not None:
            self.tally.read(self.path)
        return self.tally.result(self.path, self.run_id, self.status, self.budget)


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
    until: StoppingRule | None = None,
) -> RunResult:
    """Run every case for every variant ``repeats`` times against ``target``, write a run
    directory and return its :class:`RunResult`. ``run`` blocks (in a notebook too: the run
    gets its own event loop on a worker thread); ``arun`` is the same call, to await.

    Cases, variants and checks are all checked before anything runs. One sample's failure
    becomes an incomplete sample; Ctrl-C flushes what is done, marks the run ``interrupted``
    and raises :class:`RunInterrupted` (a ``KeyboardInterrupt`` saying how to resume).

    Parameters:
        cases: a cases file (``.jsonl``, ``.json``, ``.yaml``, ``.csv``) or :class:`Case` objects.
        target: a :class:`~evalnb.targets.Target` (``async complete(request)``).
        variants: :class:`Variant` objects or names; default one variant, ``baseline``.
        repeats: samples per case and variant.
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
        judge: the target that answers ``judge`` checks (required when a case has one).
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

    >>> result = run("data/cases/shop.jsonl", target, variants=["v1"], repeats=10)
    """
    session = _Session(target, judge, command=command, on_start=on_start, until=until)
    session.prepare(
        cases,
        variants,
        repeats,
        order=order,
        seed=seed,
        checks=checks,
        defaults=defaults,
        concurrency=concurrency,
        cluster=cluster,
        shard_size=shard_size,
        max_cost=max_cost,
        max_tokens=max_tokens,
        prices=prices,
        cache=cache,
    )
    with session.kept():
        async with session.open(out, resume=resume, overwrite=overwrite):
            try:
                await session.execute(timeout, canonical, progress, flush_every, flush_seconds)
            finally:
                session.finish()
    return session.result()


run = blocking(arun)


#: The record an import writes beside a suite; a run of that suite keeps a copy.
IMPORTED = store.IMPORTED


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
    store.write_json_atomic(path / IMPORTED, data)


def _load_cases(
    cases: Sequence[Case] | str | os.PathLike[str], defaults: Mapping[str, Any] | None
) -> tuple[list[Case], dict[str, Any] | None]:
    """The built cases, and the cases file's provenance when they come from one."""
    cases_file: dict[str, Any] | None = None
    if isinstance(cases, str | os.PathLike):
        # Read first: a missing or bad file is a located error, not a failed hash.
        loaded = load_cases(cases, defaults=defaults)
        cases_file = {"path": str(cases), "sha256": file_sha256(cases)}
        if defaults:
            cases_file["defaults"] = dict(defaults)
        imported = Path(cases).parent / IMPORTED
        if imported.is_file():  # an imported suite: what came in and what did not
            cases_file["imported"] = {"path": str(imported), "sha256": file_sha256(imported)}
        cases = loaded
    elif defaults:
        raise ArgumentError(
            "'defaults' apply to a cases file as it is read; with Case objects, put the "
            "checks and fields in the cases"
        )
    built = built_cases(cases)
    if not built:
        raise ArgumentError("'cases' must hold at least one case; got none")
    ids = [c.id for c in built]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise ArgumentError(f"'cases' must have unique ids; got {repeated!r} more than once")
    return built, cases_file


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


def _check_messages(cases: Sequence[Case], variants: Sequence[Variant]) -> None:
    """Refuse a variant that cannot apply to a case (an undefined template variable, a
    prefix with no user message) before anything runs."""
    for case in cases:
        for variant in variants:
            try:
                variant.messages_for(case)
            except ValueError as exc:
                raise ArgumentError(f"case {case.id!r}, variant {variant.name!r}: {exc}") from None


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
