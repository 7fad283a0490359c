"""Run a coroutine from synchronous code, also where an event loop already runs (Jupyter)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

from evalnb._templates import interrupt_renders

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on a private loop in a worker thread, from any synchronous code (a
    running loop here, as in Jupyter, is left untouched).

    Ctrl-C (a kernel interrupt) cancels the coroutine and waits for it to clean up; further
    Ctrl-Cs while it cleans up are ignored, so what finished is always saved.
    """
    return cast(T, _in_thread(coroutine))


def _in_thread(coroutine: Any) -> Any:
    """Run on a private loop in a thread, so a caller's running loop (Jupyter) is untouched."""
    box: dict[str, Any] = {}
    ready, finished = threading.Event(), threading.Event()

    def main() -> None:
        loop = asyncio.new_event_loop()
        box["loop"] = loop
        box["task"] = loop.create_task(coroutine)
        ready.set()
        try:
            box["result"] = loop.run_until_complete(box["task"])
        except BaseException as exc:
            box["error"] = exc
        finally:
            try:
                _finish(loop)
            finally:
                loop.close()
                finished.set()

    thread = threading.Thread(target=main, name="evalnb-run", daemon=True)
    thread.start()
    ready.wait()
    # An Event, not Thread.join: a Ctrl-C that interrupts join() can leave the thread
    # looking finished while it still runs (CPython's join is not safe to interrupt).
    try:
        while not finished.wait(0.1):
            pass
    except KeyboardInterrupt:
        box["loop"].call_soon_threadsafe(box["task"].cancel)
        interrupt_renders()  # a template rendering on the run's thread, not at an await
        while not finished.is_set():
            # A second Ctrl-C (or SIGTERM) must not cut the flush short.
            with contextlib.suppress(KeyboardInterrupt):
                finished.wait()
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    """What ``asyncio.run`` does on the way out: cancel what still runs (a KeyboardInterrupt
    raised inside a task leaves the run's task pending) and let its ``finally`` blocks run,
    so the run saves what finished and marks itself interrupted."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
