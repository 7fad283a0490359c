"""The judge of a run, a shard or a rescoring: required by ``judge`` checks, opened,
counted, and reached by the checks through :data:`~evalnb.checks._judge.JUDGE`.

The one set-up the session, :func:`~evalnb.runner.score` and each shard share.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb.cases import JudgeSpec
from evalnb.checks import EMBEDDINGS, EMBEDDINGS_URL_ENV, JUDGE, Check
from evalnb.targets import AzureOpenAIChat, CountingTarget, OpenAIChat, OpenAIEmbeddings

__all__ = ["embeddings_of", "judge_target", "judging", "require_judge"]


def require_judge(judge: Any, checks: Iterable[Sequence[Check]]) -> None:
    """Refuse a missing judge when a case has a ``judge`` check, and a judge that is not a
    target; ``checks`` are the checks of each case."""
    if judge is None and any(c.type == "judge" for case in checks for c in case):
        raise ArgumentError("cases have 'judge' checks: pass judge=<target> (the judge model)")
    if judge is not None and not callable(getattr(judge, "complete", None)):
        raise TypeError(f"'judge' must have an async complete(request) method; got {judge!r}")


def judge_target(spec: JudgeSpec, target: Any) -> OpenAIChat:
    """The judge a design names, reached over the OpenAI chat API: at its own URL with its
    own key variable (never the target's), or at the target's server with the target's key.
    """
    # Only a server that speaks the OpenAI chat API is shared with the judge.
    chat = isinstance(target, OpenAIChat) and not isinstance(target, AzureOpenAIChat)
    shared = getattr(target, "base_url", None) if chat else None
    base_url = spec.base_url or shared
    if not isinstance(base_url, str):
        raise ArgumentError(
            f"the judge {spec.model!r} needs its base_url (judge.base_url, --judge-base-url): "
            f"the target {type(target).__name__} has no OpenAI-compatible server to share"
        )
    api_key_env = spec.api_key_env
    if api_key_env is None and spec.base_url is None:
        api_key_env = getattr(target, "api_key_env", None)  # the same server, the same key
    return OpenAIChat(base_url, spec.model, api_key_env=api_key_env)


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


@contextlib.contextmanager
def embeddings_of(target: Any) -> Iterator[None]:
    """Inside the block, ``similar`` checks without a ``base_url`` of their own embed with the
    ``/v1/embeddings`` route of ``target``'s server (an ``OpenAIChat``: its base URL and key
    variable), unless ``EVALNB_EMBEDDINGS_URL`` names another server or one is already set."""
    base_url = getattr(target, "base_url", None)
    if (
        EMBEDDINGS.get() is not None
        or os.environ.get(EMBEDDINGS_URL_ENV)
        or not isinstance(base_url, str)
        or not base_url.startswith(("http://", "https://"))
    ):
        yield
        return
    api_key_env = getattr(target, "api_key_env", None)
    if api_key_env is not None and api_key_env not in os.environ:
        api_key_env = None  # the target itself says so when it is asked
    token = EMBEDDINGS.set(OpenAIEmbeddings(base_url, api_key_env=api_key_env))
    try:
        yield
    finally:
        EMBEDDINGS.reset(token)
