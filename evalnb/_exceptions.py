"""The exceptions evalnb raises on purpose.

::

    EvalnbError                 anything evalnb refuses to do, with a one-line reason
     ├── CasesError             a cases, variants or experiment file is invalid
     ├── TargetError            a target could not produce a completion
     └── StoreError             a run directory cannot be written or read as asked

Bad arguments to a function raise the built-in ``ValueError`` or ``TypeError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalnb._types import Completion

__all__ = ["CasesError", "EvalnbError", "StoreError", "TargetError"]


class EvalnbError(Exception):
    """Base class of every error evalnb raises on purpose."""


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
