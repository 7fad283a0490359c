"""A Python callable as a target."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

from evalnb._exceptions import TargetError
from evalnb._types import Completion, Request

__all__ = ["Function"]


class Function:
    """Wrap ``fn(request)`` (sync or async) returning text or a :class:`Completion`.

    A sync callable runs in a worker thread so that it never blocks the other samples
    (as many at once as ``asyncio.to_thread`` would run); pass ``threaded=False`` for a
    function that returns at once.

    >>> target = Function(lambda request: request.prompt.upper())
    """

    def __init__(
        self, fn: Callable[[Request], Any], *, threaded: bool = True, name: str | None = None
    ):
        if not callable(fn):
            raise TypeError(f"'fn' must be callable; got {fn!r}")
        self.fn = fn
        self.threaded = threaded
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  (an async __call__ counts)
        )

    async def complete(self, request: Request) -> Completion:
        if self._is_async:
            result = await self.fn(request)
        elif self.threaded:
            result = await _in_thread(self.fn, request)
        else:
            result = self.fn(request)
        if isinstance(result, Completion):
            return result
        if isinstance(result, str):
            return Completion(text=result)
        raise TargetError(
            f"function target {self.name!r} must return str or Completion; "
            f"got {type(result).__name__}"
        )

    async def describe(self) -> dict[str, Any]:
        module = getattr(self.fn, "__module__", None)
        return {"type": "function", "function": f"{module}.{self.name}", "async": self._is_async}


async def _in_thread(fn: Callable[[Request], Any], request: Request) -> Any:
    """``fn(request)`` on one of the running loop's threads, in a copy of this context, as
    ``asyncio.to_thread`` runs it, at a third of its cost per call: no executor future is
    chained to the loop's, and the loop wakes once for all the calls that ended meanwhile.

    Cancelled before its thread picks it up, the call never runs; cancelled while it runs,
    it runs on and its result is dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    _threads(loop).submit(future, fn, request, contextvars.copy_context())
    return await future


class _Threads:
    """The threads one event loop runs sync functions on: started as calls need them, up to
    ``size``, and ended soon after the loop closes. Daemons, as the checks' threads are: a
    call abandoned by a timeout never holds the process open."""

    def __init__(self, loop: asyncio.AbstractEventLoop, size: int) -> None:
        self.loop = weakref.ref(loop)
        self.size = size
        self.jobs: queue.SimpleQueue[tuple[asyncio.Future[Any], Callable[[], Any]]]
        self.jobs = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.started = 0
        self.idle = 0
        self.ended: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        self.waking = False

    def submit(
        self,
        future: asyncio.Future[Any],
        fn: Callable[[Request], Any],
        request: Request,
        context: contextvars.Context,
    ) -> None:
        """Run ``fn(request)`` in ``context`` on a thread; its outcome settles ``future``."""
        self.jobs.put((future, functools.partial(context.run, fn, request)))
        with self.lock:
            if self.idle:
                self.idle -= 1  # a waiting thread takes it
                return
            if self.started >= self.size:
                return  # the first thread to finish takes it
            self.started += 1
        threading.Thread(target=self._work, name="evalnb-function", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                future, call = self.jobs.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                loop = self.loop()
                if loop is None or loop.is_closed():
                    return  # no call can come any more
                continue
            result, error = None, None
            if not future.cancelled():
                try:
                    result = call()
                except BaseException as exc:  # all of it reaches the caller, as from to_thread
                    error = exc
            # Free before the caller hears of it: its next call then finds this thread.
            with self.lock:
                self.idle += 1
                self.ended.append((future, result, error))
                wake, self.waking = not self.waking, True
            if wake:
                self._wake()
            # Nothing of the call kept while waiting: it holds the loop.
            del future, call, result, error

    def _wake(self) -> None:
        loop = self.loop()
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed just now
                loop.call_soon_threadsafe(self._settle)
                return
        with self.lock:  # the loop closed while the calls ran: no one is waiting for them
            self.ended.clear()

    def _settle(self) -> None:
        """On the loop: hand every call that ended to its caller."""
        with self.lock:
            ended, self.ended, self.waking = self.ended, [], False
        for future, result, error in ended:
            if future.done():  # cancelled meanwhile
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


#: asyncio's default executor's size: a blocking function runs as wide as it did on it.
_SIZE = min(32, (os.cpu_count() or 1) + 4)
#: How long an idle thread waits before it looks whether its loop has closed.
_IDLE_SECONDS = 1.0
#: The threads of each event loop that has called a sync function.
_LOOPS: weakref.WeakKeyDictionary[Any, _Threads] = weakref.WeakKeyDictionary()


def _threads(loop: asyncio.AbstractEventLoop) -> _Threads:
    threads = _LOOPS.get(loop)
    if threads is None:
        threads = _LOOPS[loop] = _Threads(loop, _SIZE)
    return threads


# A forked child has none of its parent's threads: it starts its own.
os.register_at_fork(after_in_child=_LOOPS.clear)
