"""Suites shipped inside the package: cases files and experiment files that an installed
evalnb runs from any folder.

On the command line a packaged file is named ``builtin:NAME``: ``evalnb run builtin:shop
--standin --model shop-v1`` (the cases) or ``evalnb run --experiment builtin:shop`` (the
experiment of the same name). From Python, :func:`path` gives the file:

>>> evalnb.run(evalnb.cases.suites.path("shop.jsonl"), target)          # doctest: +SKIP
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from evalnb._exceptions import CasesError

__all__ = ["PREFIX", "names", "path", "resolve"]

#: Marks a packaged suite on the command line and in experiment files.
PREFIX = "builtin:"


def _folder() -> Path:
    # A wheel installs as plain files (never zipped), so the folder is a real path.
    return Path(str(resources.files(__name__)))


def names(suffix: str) -> list[str]:
    """The packaged files ending in ``suffix`` (``".jsonl"`` or ``".toml"``), without it."""
    return sorted(p.name.removesuffix(suffix) for p in _folder().glob(f"*{suffix}"))


def path(name: str) -> Path:
    """The packaged file ``name`` (e.g. ``"shop.jsonl"``); a missing one is a CasesError."""
    found = _folder() / name
    if not found.is_file() or Path(name).name != name:
        shipped = sorted(p.name for p in _folder().iterdir() if p.suffix in (".jsonl", ".toml"))
        raise CasesError(
            f"{PREFIX}{name}: no such packaged file; evalnb ships {', '.join(shipped)}"
        )
    return found


def resolve(spec: str | os.PathLike[str], suffix: str) -> Path:
    """``builtin:NAME`` as the packaged ``NAME + suffix``; anything else as a plain path."""
    text = os.fspath(spec)
    if not text.startswith(PREFIX):
        return Path(text)
    name = text.removeprefix(PREFIX)
    if not name or "/" in name or os.sep in name:
        raise CasesError(
            f"{text!r}: expected {PREFIX}NAME with NAME one of {', '.join(names(suffix))}"
        )
    return path(name if name.endswith(suffix) else name + suffix)
