"""``run`` is ``arun`` made blocking, ``score`` ``ascore``: its own event loop on a worker
thread, so it also runs where a loop already does (Jupyter), and Ctrl-C said in Python terms.

>>> run = blocking(arun)  # the same parameters, annotations and docstring as arun
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from evalnb import store
from evalnb._sync import run_sync

__all__ = ["RunInterrupted", "blocking"]

P = ParamSpec("P")
T = TypeVar("T")


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


def blocking(afunction: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """``afunction`` as a blocking function with its signature and docstring, named without
    its leading ``a`` (``arun`` becomes ``run``, ``ascore`` ``score``).

    For a function that reports its run directory (an ``on_start`` parameter, as ``arun``
    has), a Ctrl-C once that directory exists becomes :class:`RunInterrupted`, which says
    where to resume, unless the call came from the command line (``command=``), which says
    it in its own terms.
    """
    reports = "on_start" in inspect.signature(afunction).parameters

    @functools.wraps(afunction, assigned=("__module__", "__doc__"))
    def blocked(*args: P.args, **kwargs: P.kwargs) -> T:
        if not reports:
            return run_sync(afunction(*args, **kwargs))
        started: list[Path] = []
        on_start = cast("Callable[[Path], None] | None", kwargs.get("on_start"))

        def starting(path: Path) -> None:
            started.append(path)
            if on_start is not None:
                on_start(path)

        kwargs["on_start"] = starting
        try:
            return run_sync(afunction(*args, **kwargs))
        except KeyboardInterrupt as exc:
            if kwargs.get("command") is not None or not started or isinstance(exc, RunInterrupted):
                raise
            raise RunInterrupted(started[0]) from None

    # A module-level name, as the module binds it: reprs say ``run`` and the function pickles.
    blocked.__name__ = blocked.__qualname__ = afunction.__name__.removeprefix("a")
    return blocked
