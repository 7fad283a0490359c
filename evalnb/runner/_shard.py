"""One shard of a run's plan, run wherever it lands: the unit a distributed engine maps.

:func:`run_shard` is engine-neutral: a plain function of two picklable values that any
engine (Dask here, Ray or a batch script elsewhere) can call in another process. It runs
the shard's samples with the runner's own execution (targets, concurrency, checks,
flushes), writes the parts as one attempt of the shard and commits them atomically
(``evalnb.store._shards``): a retried or duplicated shard never stores a key twice, a
killed one leaves parts no reader counts.

Secrets never travel with a shard: an :class:`~evalnb.targets.OpenAIChat` carries the
*name* of its key's environment variable, and each worker reads the key from its own
environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from evalnb import store
from evalnb._exceptions import ArgumentError, EvalnbError, StoreError
from evalnb._types import Case, Variant
from evalnb.runner._judging import judging
from evalnb.targets import OpenAIChat

__all__ = ["Shard", "ShardJob", "portable", "run_shard"]


@dataclass(frozen=True)
class ShardJob:
    """What every shard of one driver session shares.

    ``execution`` is the driver's runner execution with its target made portable and no
    writer: each attempt copies it, so a shard runs exactly the runner's code and settings.
    """

    run_dir: str
    session: str
    execution: Any
    concurrency: int
    judge: Any = None


@dataclass(frozen=True)
class Shard:
    """A slice of the plan: ``(order, (case, variant, repeat))`` entries, as the runner's."""

    id: str
    entries: tuple[tuple[int, tuple[Case, Variant, int]], ...]


def portable(target: Any) -> Any:
    """A copy of ``target`` that can be pickled to a worker: an :class:`OpenAIChat` without
    its open HTTP client (the worker opens its own). Other targets travel as they are."""
    if not isinstance(target, OpenAIChat):
        return target
    if not target._owns_client:
        raise ArgumentError(
            "'target' was given its own httpx client, which cannot be sent to cluster "
            "workers; build the OpenAIChat without 'client=' to run it on a cluster"
        )
    clone = copy.copy(target)
    clone._client = None
    clone._direct = None
    clone._aiohttp = None
    clone._gate = None
    return clone


def _needs_key(target: Any, where: str) -> None:
    name = getattr(target, "api_key_env", None)
    if name and name not in os.environ:
        raise EvalnbError(
            f"{where}: the environment variable {name!r} (the API key) is not set on worker "
            f"{socket.gethostname()}; set it in the workers' environment"
        )


def _own_parts(run_dir: Path, token: str) -> list[str]:
    return [p.name for p in store.part_paths(run_dir, "samples", token)]


def _discard(run_dir: Path, token: str) -> None:
    for table in ("checks", "samples"):
        for path in store.part_paths(run_dir, table, token):
            path.unlink(missing_ok=True)


async def _execute(job: ShardJob, shard: Shard, token: str) -> tuple[int, int]:
    execution = copy.copy(job.execution)
    # Shards running at once on one worker share the job: each opens its own clients.
    execution.target = portable(execution.target)
    execution.writer = store.RunWriter(job.run_dir, token=token)
    execution.samples, execution.results = [], []
    execution.incomplete = 0
    execution.last_flush = time.monotonic()
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(execution.target, contextlib.AbstractAsyncContextManager):
            await stack.enter_async_context(execution.target)
        judge = await stack.enter_async_context(judging(portable(job.judge)))
        with tqdm(disable=True) as bar:
            await execution.execute(list(shard.entries), job.concurrency, bar)
        execution.flush()
    return execution.incomplete, judge.calls if judge is not None else 0


def run_shard(job: ShardJob, shard: Shard) -> dict[str, Any]:
    """Run ``shard`` and commit it as one attempt; return what it did.

    A shard committed already (a retry after its result was lost) returns the committed
    attempt's report without running anything. The report: ``shard``, ``attempt``,
    ``samples``, ``incomplete``, ``judge_calls``, ``seconds``, ``host``, ``pid``.
    """
    run_dir = Path(job.run_dir)
    done = store.committed_shard(run_dir, shard.id)
    if done is not None:
        return {**done, "judge_calls": 0}
    _needs_key(job.execution.target, f"shard {shard.id}")
    if job.judge is not None:
        _needs_key(job.judge, f"shard {shard.id} (judge)")
    attempt = os.urandom(4).hex()
    token = store.shard_token(shard.id, attempt)
    clock = time.perf_counter()
    try:
        incomplete, judge_calls = asyncio.run(_execute(job, shard, token))
    except BaseException:
        _discard(run_dir, token)
        raise
    marker = {
        "shard": shard.id,
        "attempt": attempt,
        "session": job.session,
        "parts": _own_parts(run_dir, token),
        "samples": len(shard.entries),
        "incomplete": incomplete,
        "seconds": time.perf_counter() - clock,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
    try:
        winner = store.commit_shard(run_dir, shard.id, marker)
    except PermissionError as exc:
        _discard(run_dir, token)
        raise StoreError(str(exc)) from None
    if winner is not None:
        _discard(run_dir, token)
        return {**winner, "judge_calls": judge_calls}
    return {**marker, "judge_calls": judge_calls}
