"""The judge of a run, a shard or a rescoring: required by ``judge`` checks, opened,
counted, and reached by the checks through :data:`~evalnb.checks._judge.JUDGE`.

The one set-up the session, :func:`~evalnb.runner.score` and each shard share.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb.checks import Check
from evalnb.checks._judge import JUDGE
from evalnb.targets import CountingTarget

__all__ = ["judging", "require_judge"]


def require_judge(judge: Any, checks: Iterable[Sequence[Check]]) -> None:
    """Refuse a missing judge when a case has a ``judge`` check, and a judge that is not a
    target; ``checks`` are the checks of each case."""
    if judge is None and any(c.type == "judge" for case in checks for c in case):
        raise ArgumentError("cases have 'judge' checks: pass judge=<target> (the judge model)")
    if judge is not None and not callable(getattr(judge, "complete", None)):
        raise TypeError(f"'judge' must have an async complete(request) method; got {judge!r}")


@contextlib.asynccontextmanager
async def judging(judge: Any) -> AsyncIterator[CountingTarget | None]:
    """``judge`` opened (when it is an async context manager) and counting its calls, the
    judge of the checks run inside the block; yields the counter (None without a judge).

    >>> async with judging(judge) as counted:  # doctest: +SKIP
    ...     await arun_checks(checks, sample)
    """
    counted = CountingTarget(judge) if judge is not None else None
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(judge, contextlib.AbstractAsyncContextManager):
            await stack.enter_async_context(judge)
        token = JUDGE.set(counted)
        try:
            yield counted
        finally:
            JUDGE.reset(token)
