"""The one way a file of a run directory is written: under a temporary name beside it,
created ``0600`` and exclusively, flushed and fsynced, then renamed into place (or linked,
which fails when the final name exists), so a crash never leaves a torn file.

>>> write_atomic(run_dir / "scores" / label / "scoring.json", text)
>>> with atomic_file(run_dir / "samples" / name) as handle:
...     pq.write_table(table, handle)
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_file", "write_atomic"]


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], *, exclusive: bool = False) -> Iterator[BinaryIO]:
    """A private (``0600``) file to write, which becomes ``path`` once the block ends
    without an error; on an error nothing is left. ``exclusive``: ``path`` must not exist
    yet (:class:`FileExistsError` otherwise, and the file is not placed)."""
    final = Path(path)
    tmp = _temporary(final)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            os.link(tmp, final)
        else:
            os.replace(tmp, final)
            os.chmod(final, 0o600)
    finally:
        with contextlib.suppress(FileNotFoundError):  # renamed into place: nothing left
            os.unlink(tmp)


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, *, exclusive: bool = False
) -> bool:
    """Write ``data`` (text as UTF-8) to ``path`` through :func:`atomic_file`; with
    ``exclusive``, False when ``path`` exists already (nothing is written)."""
    content = data.encode() if isinstance(data, str) else data
    try:
        with atomic_file(path, exclusive=exclusive) as handle:
            handle.write(content)
    except FileExistsError:
        if not exclusive:
            raise
        return False
    return True
