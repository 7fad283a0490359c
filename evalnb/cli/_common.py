"""What every command shares: the usage error and the one place errors become exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

from evalnb._exceptions import EvalnbError

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "UsageError", "guarded"]

#: The command did its job (for ``run``: the experiment ran and was written).
EXIT_OK = 0
#: A gate rule failed; nothing else uses this code.
EXIT_FAILED = 1
#: Bad input or usage: one line on stderr.
EXIT_USAGE = 2
#: Interrupted (Ctrl-C); what finished is saved.
EXIT_INTERRUPTED = 130


class UsageError(EvalnbError):
    """A command line that asks for something impossible."""


def guarded(name: str, command: Callable[[], int], stderr: TextIO | None = None) -> int:
    """Run ``command``; an ordinary mistake becomes one line on stderr and exit 2."""
    try:
        return command()
    except (EvalnbError, ValueError, TypeError) as exc:
        print(f"evalnb {name}: error: {exc}", file=stderr or sys.stderr)
        return EXIT_USAGE
