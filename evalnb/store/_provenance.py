"""What produced a run, as the head of its manifest: the evalnb and Python that wrote it,
the machine, the command line, the folder and its git revision. The runner writes it above
a run's design; an importer above what it read."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from evalnb.store._schema import SCHEMA_VERSION

__all__ = ["now", "provenance"]


def now() -> dt.datetime:
    """The time, in UTC, as every manifest records it."""
    return dt.datetime.now(dt.UTC)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evalnb")
    except PackageNotFoundError:
        return "0+unknown"


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def provenance(run_id: str, started: dt.datetime, command: Sequence[str] | None) -> dict[str, Any]:
    """The head of a new run's manifest, status ``running`` (``docs/schema.md``)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "status": "running",
        "started_at": started.isoformat(),
        "ended_at": None,
        "evalnb_version": _version(),
        "python": sys.version.split()[0],
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "implementation": platform.python_implementation(),
        },
        "command": list(command) if command else None,
        "cwd": os.getcwd(),
        "git_revision": _git_revision(),
    }
