"""The runner's plan sharded over a Dask distributed cluster (the ``dask`` extra).

The driver (``evalnb.run(..., cluster=...)``) plans the keys, writes the manifest and
holds the run's lock as always; :class:`Sharded` then splits the pending keys into shards
of ``shard_size`` and submits one task per shard (:func:`evalnb.runner._shard.run_shard`). Each
worker writes its parts straight into the run directory, so every worker must see it at
the same path (a shared folder). Progress advances as shards commit.

>>> evalnb.run(cases, target, repeats=100, cluster="tcp://10.0.0.5:8786")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import copy
import sys
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from evalnb._exceptions import EvalnbError
from evalnb._types import Case, Variant
from evalnb.runner._shard import Shard, ShardJob, portable, run_shard

__all__ = ["Sharded", "public_address", "split"]

#: Seconds between two looks at the shards in flight.
POLL = 0.1


def public_address(address: str) -> str:
    """``address`` with any user name, password or query (tokens) removed."""
    parts = urllib.parse.urlsplit(address)
    if not parts.netloc:
        return address
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def split(
    pending: Sequence[tuple[int, tuple[Case, Variant, int]]], session: str, size: int
) -> list[Shard]:
    """The pending plan in shards of ``size`` entries, in planned order."""
    return [
        Shard(f"{session}-{n:06d}", tuple(pending[start : start + size]))
        for n, start in enumerate(range(0, len(pending), size))
    ]


def _the(value: Any) -> Any:
    return value


def _key(entry: tuple[Case, Variant, int]) -> tuple[str, str, int]:
    return entry[0].id, entry[1].name, entry[2]


class _Feed:
    """The pending plan handed out a shard at a time, in planned order (the shards of
    :func:`split` when no rule reads the run); keys of variants a race has dropped, and
    repeats of cases already settled, are skipped as each shard is made."""

    def __init__(
        self,
        pending: Sequence[tuple[int, tuple[Case, Variant, int]]],
        session: str,
        size: int,
        watch: Any,
        settling: Any,
        bar: tqdm[Any],
    ) -> None:
        self.entries = iter(pending)
        self.session, self.size, self.bar = session, size, bar
        self.watch, self.settling = watch, settling
        self.made = 0

    def next(self) -> Shard | None:
        taken: list[tuple[int, tuple[Case, Variant, int]]] = []
        for order, entry in self.entries:
            skip = self.watch is not None and not self.watch.wants(entry[1].name)
            if self.settling is not None and not skip:
                skip = not self.settling.wants(entry[0].id, entry[1].name, entry[2])
            if skip:
                self.bar.update(1)
                continue
            taken.append((order, entry))
            if len(taken) == self.size:
                break
        if not taken:
            return None
        shard = Shard(f"{self.session}-{self.made:06d}", tuple(taken))
        self.made += 1
        return shard


class Sharded:
    """A connection to a Dask cluster that runs a session's pending keys as shards.

    ``cluster`` is a ``distributed.Client`` (left open) or a scheduler address such as
    ``tcp://host:8786`` (connected here, closed by :meth:`close`).
    """

    def __init__(self, cluster: Any, shard_size: int, session: str, timeout: float = 30.0):
        try:
            from distributed import Client
        except ImportError:
            raise EvalnbError(
                "running on a cluster needs Dask distributed: pip install 'evalnb[dask]'"
            ) from None
        if isinstance(cluster, Client):
            self.client, self._owned = cluster, False
        elif isinstance(cluster, str):
            try:
                self.client = Client(cluster, timeout=timeout, set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise EvalnbError(
                    f"cannot reach the Dask scheduler at {public_address(cluster)!r} "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            self._owned = True
        else:
            raise TypeError(
                "'cluster' must be a distributed.Client or a scheduler address such as "
                f"'tcp://host:8786'; got {cluster!r}"
            )
        self.shard_size = shard_size
        self.session = session

    def record(self) -> dict[str, Any]:
        """What the manifest keeps of the cluster: no credentials, no secrets."""
        import dask
        import distributed

        info = self.client.scheduler_info()
        workers = info.get("workers", {})
        return {
            "engine": "dask",
            "session": self.session,
            "scheduler": public_address(str(info.get("address", ""))),
            "workers": len(workers),
            "threads": sum(w.get("nthreads", 0) for w in workers.values()),
            "shard_size": self.shard_size,
            "versions": {
                "dask": dask.__version__,
                "distributed": distributed.__version__,
                "python": sys.version.split()[0],
            },
        }

    def _threads(self) -> int:
        workers = self.client.scheduler_info().get("workers", {})
        return int(sum(w.get("nthreads", 0) for w in workers.values()))

    def close(self) -> None:
        if self._owned:
            self.client.close()

    def job(self, execution: Any, concurrency: int, run_dir: str, judge: Any) -> ShardJob:
        """The job every shard shares: the runner's execution, portable and writer-less."""
        clone = copy.copy(execution)
        clone.target = portable(execution.target)
        clone.writer = None
        clone.samples, clone.results = [], []
        # the driver's rules read the commits; a shard runs the keys it is given
        clone.watch = clone.settling = None
        return ShardJob(str(run_dir), self.session, clone, concurrency, portable(judge))

    async def execute(
        self,
        execution: Any,
        pending: Sequence[tuple[int, tuple[Case, Variant, int]]],
        concurrency: int,
        run_dir: str,
        judge: Any,
        bar: tqdm[Any],
    ) -> None:
        """Run ``pending`` as shards and wait for every one to commit.

        ``judge`` is the runner's counting judge (or ``None``): the judge calls the
        workers made are added to it. A shard that still fails after Dask's retries
        stops the run (what committed is kept; resume finishes it).
        """
        if not pending:
            return
        inner = getattr(judge, "target", judge)
        job = self.job(execution, concurrency, run_dir, inner)
        # A task, not scattered data: if the worker holding the job dies, the scheduler
        # computes it again from the task instead of cancelling every shard that needs it.
        shared = self.client.submit(_the, job, key=f"evalnb-job-{self.session}", pure=False)
        watch = getattr(execution, "watch", None)
        settling = getattr(execution, "settling", None)
        feed = _Feed(pending, self.session, self.shard_size, watch, settling, bar)
        # A rule reads commits in order: only a few shards ahead of what it has seen, and
        # never far past the oldest shard still running (one slow shard holds the rule's
        # looks back; the others must not run on past it with variants it would drop).
        ruled = watch is not None or settling is not None
        window = max(1, self._threads()) if ruled else len(pending)
        futures: dict[Any, Shard] = {}
        made: dict[Any, int] = {}

        def top_up() -> None:
            while len(futures) < window and not (watch is not None and watch.decided):
                if ruled and futures and feed.made - min(made.values()) >= 2 * window:
                    return
                shard = feed.next()
                if shard is None:
                    return
                future = self.client.submit(
                    run_shard, shared, shard, key=f"evalnb-shard-{shard.id}", pure=False, retries=2
                )
                futures[future] = shard
                made[future] = feed.made - 1

        top_up()
        incomplete = 0
        try:
            while futures:
                await asyncio.sleep(POLL)
                for future in [f for f in futures if f.done()]:
                    shard = futures.pop(future)
                    made.pop(future, None)
                    try:
                        report = future.result()
                    except EvalnbError:
                        raise
                    except Exception as exc:
                        raise EvalnbError(
                            f"shard {shard.id} failed on the cluster ({type(exc).__name__}: "
                            f"{exc}); what committed is kept: resume the run to finish it"
                        ) from exc
                    if judge is not None:
                        judge.calls += report.get("judge_calls", 0)
                    incomplete += report.get("incomplete", 0)
                    bar.update(len(shard.entries))
                    bar.set_postfix(incomplete=incomplete, shards_left=len(futures), refresh=False)
                    keys = {_key(entry) for _, entry in shard.entries}
                    if watch is not None:
                        watch.replay(Path(run_dir), keys)
                    if settling is not None:
                        settling.replay(Path(run_dir), keys)
                top_up()
        finally:
            if futures:
                self.client.cancel(list(futures))
