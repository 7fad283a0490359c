"""One writer per run directory: an OS file lock held for a whole run, rescoring, compaction
or repair, so two processes never write the same run.

The lock is ``fcntl.flock`` on ``<run>/.lock``: the kernel drops it when its holder exits,
however it exits (kill -9 included), so a stale lock never blocks a resume. The file keeps
the holder's PID and what it is doing, for the error a second writer gets.

>>> with RunLock("runs/shop", "run"):                                  # doctest: +SKIP
...     ...  # write parts
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from pathlib import Path
from types import TracebackType
from typing import IO

from evalnb._exceptions import StoreError

__all__ = ["LOCK_FILE", "RunLock"]

LOCK_FILE = ".lock"


class RunLock:
    """An exclusive, non-blocking lock on ``run_dir``; ``what`` names the job holding it."""

    def __init__(self, run_dir: str | os.PathLike[str], what: str) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self.what = what
        self._handle: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def acquire(self) -> RunLock:
        """Take the lock, or raise :class:`StoreError` naming the process that holds it."""
        if self._handle is not None:
            return self
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot open the run's lock ({exc.strerror})") from None
        handle = os.fdopen(fd, "r+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(handle)
            handle.close()
            raise StoreError(
                f"{self.path.parent}: another evalnb process is writing this run ({holder}); "
                "wait for it to finish or stop it, then try again"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "what": self.what,
                    "since": dt.datetime.now(dt.UTC).isoformat(),
                }
            )
        )
        handle.flush()
        self._handle = handle
        return self

    def release(self) -> None:
        """Let the lock go (the file stays: removing it would race a process opening it)."""
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def _holder(handle: IO[str]) -> str:
    try:
        handle.seek(0)
        info = json.loads(handle.read() or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "PID unknown"
    return f"PID {info['pid']}, {info.get('what', 'writing')} since {info.get('since', '?')}"
