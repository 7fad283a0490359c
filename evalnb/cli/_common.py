"""What every command shares: the usage error and the one place errors become exit codes."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import NoReturn, TextIO

from evalnb._exceptions import EvalnbError

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Parser",
    "UsageError",
    "guarded",
    "interrupts_once",
]

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
    """Run ``command``; an ordinary mistake becomes one line on stderr and exit 2, and
    a warning (a damaged part left out, a partial scoring passed over) one line too."""
    out = stderr or sys.stderr

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        print(f"evalnb {name}: warning: {' '.join(str(message).split())}", file=out)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = show
            return command()
    except EvalnbError as exc:  # a mistake of the user's; anything else is a bug to see
        message = str(exc)
    except OSError as exc:  # a path that is missing, a folder, unwritable, a full disk...
        where = f"{exc.filename}: " if exc.filename else ""
        message = f"{where}{exc.strerror or exc}"
    except RecursionError:
        message = "the input is nested too deeply to read"
    except (zlib.error, zipfile.BadZipFile) as exc:  # a damaged archive or stream
        message = f"a compressed input is damaged ({exc})"
    except MemoryError:
        message = "the input needs more memory than there is (see the caps in --help)"
    print(f"evalnb {name}: error: {' '.join(message.split())}", file=out)
    return EXIT_USAGE


class Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (usage stays behind ``--help``), exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


@contextlib.contextmanager
def interrupts_once() -> Iterator[None]:
    """While inside, the first Ctrl-C or SIGTERM (a job stopped by CI, ``kill``) interrupts
    the run, which saves what finished, ends its harnesses and is marked interrupted; the
    signals after it are ignored, so the saving is never cut short (and, the command
    ending, after it too)."""
    interrupted = False

    def interrupt(signum: int, frame: object) -> None:
        nonlocal interrupted
        if not interrupted:
            interrupted = True
            raise KeyboardInterrupt

    try:
        previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            # Once interrupted the command is ending: a signal right behind the first (a
            # second Ctrl-C) stays ignored, so the process ends with its own exit code.
            signal.signal(signum, signal.SIG_IGN if interrupted else handler)
