"""The exceptions evalnb raises on purpose.

::

    EvalnbError                 anything evalnb refuses to do, with a one-line reason
     ├── ArgumentError          a function was called with an argument it cannot take
     │                          (also a ``ValueError``)
     ├── CasesError             a cases, variants or experiment file is invalid
     ├── TargetError            a target could not produce a completion
     └── StoreError             a run directory cannot be written or read as asked

A wrong argument is an ``ArgumentError`` naming the parameter, what it takes and what it
got; the command line shows every ``EvalnbError`` as one line and anything else as the bug
it is.

In IPython (Jupyter) an ``EvalnbError`` shows as its one line, not as a traceback through
threads and asyncio: the message says what to do. :func:`full_traceback` prints the
whole chain of the last error; ``EvalnbError.short_traceback = False`` shows every
traceback in full.
"""

from __future__ import annotations

import sys
import traceback
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from evalnb._types import Completion

__all__ = [
    "ArgumentError",
    "CasesError",
    "EvalnbError",
    "StoreError",
    "TargetError",
    "full_traceback",
]


class EvalnbError(Exception):
    """Base class of every error evalnb raises on purpose."""

    #: Whether IPython shows the error as its one line (False: the full traceback).
    short_traceback: ClassVar[bool] = True

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing the traceback; raising falls back to it.
        if not EvalnbError.short_traceback:
            raise NotImplementedError("full traceback asked for")
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


def full_traceback() -> None:
    """Print the full traceback, with its chain, of the last error shown in IPython."""
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if error is None:
        print("No error has been shown yet.")
        return
    print("".join(traceback.format_exception(error)), end="")


class ArgumentError(EvalnbError, ValueError):
    """A function was called with an argument it cannot take.

    The message names the parameter, the values it takes and the value given (``!r``).
    """


class CasesError(EvalnbError):
    """A cases, variants or experiment file is invalid.

    The message names the file, the line (JSONL) or index (JSON) and the field.
    """


class TargetError(EvalnbError):
    """A target could not produce a usable completion.

    ``status`` is the sample status to record (``error``, ``timeout``, ``budget``...);
    ``partial`` carries whatever was learned before the failure (request sent,
    retries, exit code, captured output) so the sample keeps its evidence.
    """

    def __init__(self, message: str, *, status: str = "error", partial: Completion | None = None):
        super().__init__(message)
        self.status = status
        self.partial = partial


class StoreError(EvalnbError):
    """A run directory cannot be written or read as asked."""
