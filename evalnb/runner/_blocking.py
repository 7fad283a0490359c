"""``run`` is ``arun`` made blocking: its own event loop on a worker thread, so it also runs
where a loop already does (Jupyter), and Ctrl-C said in Python terms.

>>> run = blocking(arun)  # the same parameters, annotations and docstring as arun
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, cast

from evalnb import store
from evalnb._sync import run_sync
from evalnb.runner._result import RunResult

__all__ = ["RunInterrupted", "blocking"]

P = ParamSpec("P")


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C or a kernel interrupt, after saving what finished: says how
    many samples are saved and the call that resumes them. One line in IPython."""

    def __init__(self, path: Path) -> None:
        try:
            saved = len(store.sample_keys(path))
            planned = len((store.read_manifest(path).get("order") or {}).get("planned") or [])
        except Exception:  # a run stopped before its manifest: say what is known
            saved, planned = 0, 0
        of = f" of {planned}" if planned else ""
        super().__init__(
            f"interrupted: {saved}{of} samples saved in {path}. To finish the run, call "
            f"evalnb.run again with the same arguments and out={str(path)!r}, resume=True"
        )
        self.path, self.saved = path, saved

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31mRunInterrupted\x1b[0m: {self}"]


def blocking(arun: Callable[P, Coroutine[Any, Any, RunResult]]) -> Callable[P, RunResult]:
    """``arun`` as a blocking function with its signature and docstring.

    A Ctrl-C once the run directory exists becomes :class:`RunInterrupted`, which says
    where to resume, unless the call came from the command line (``command=``), which
    says it in its own terms.
    """

    @functools.wraps(arun, assigned=("__module__", "__doc__"))
    def run(*args: P.args, **kwargs: P.kwargs) -> RunResult:
        started: list[Path] = []
        on_start = cast("Callable[[Path], None] | None", kwargs.get("on_start"))

        def starting(path: Path) -> None:
            started.append(path)
            if on_start is not None:
                on_start(path)

        kwargs["on_start"] = starting
        try:
            result: RunResult = run_sync(arun(*args, **kwargs))
        except KeyboardInterrupt as exc:
            if kwargs.get("command") is not None or not started or isinstance(exc, RunInterrupted):
                raise
            raise RunInterrupted(started[0]) from None
        return result

    # A module-level name, as before: reprs say ``run`` and the function pickles.
    run.__qualname__ = "run"
    return run
