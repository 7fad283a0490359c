"""Run a coroutine from synchronous code, also where an event loop already runs (Jupyter)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

__all__ = ["run_sync"]


def run_sync(coroutine: Any) -> Any:
    """``asyncio.run`` when no loop runs here; otherwise a private loop on a thread.

    Ctrl-C (a kernel interrupt) cancels the coroutine and waits for it to clean up.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    return _in_thread(coroutine)


def _in_thread(coroutine: Any) -> Any:
    """Run on a private loop in a thread, so a caller's running loop (Jupyter) is untouched."""
    box: dict[str, Any] = {}
    ready = threading.Event()

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
            loop.close()

    thread = threading.Thread(target=main, name="evalnb-run", daemon=True)
    thread.start()
    ready.wait()
    try:
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        box["loop"].call_soon_threadsafe(box["task"].cancel)
        thread.join()
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]
