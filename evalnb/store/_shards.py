"""Shards of a run written by other processes: parts that count only once committed.

A shard attempt writes its parts under ``samples/`` and ``checks/`` with names starting
``part-shard-<shard>-<attempt>-``, then commits them by creating ``shards/<shard>.json``
(the marker) listing them. The marker is created exclusively, so of two attempts of one
shard (a retry after a worker died, a task run twice) the first to commit wins and the
other's parts stay invisible; readers count a shard part only when a marker lists it.

A driver that takes over a run (a new run or a resume) writes ``shards/fence.json`` with
its session first: a shard of an older session, still running on a worker the old driver
left behind, finds the fence changed and does not commit, so its keys are never stored a
second time by the new session.

::

    shards/fence.json            {"session": ...}  the session allowed to commit
    shards/<shard>.json          {"shard", "attempt", "session", "parts", ...}
    samples/part-shard-<shard>-<attempt>-000000.parquet
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalnb.store._atomic import write_atomic

__all__ = [
    "SHARDS",
    "SHARD_PREFIX",
    "commit_shard",
    "committed_shard",
    "committed_shard_parts",
    "fence_shards",
    "fenced_session",
    "is_shard_part",
    "shard_token",
]

#: The folder of commit markers and the fence.
SHARDS = "shards"
#: How every shard part's name begins.
SHARD_PREFIX = "part-shard-"
_FENCE = "fence.json"


def shard_token(shard: str, attempt: str) -> str:
    """The writer token of one attempt: its parts are ``part-<token>-NNNNNN.parquet``."""
    return f"shard-{shard}-{attempt}"


def is_shard_part(name: str) -> bool:
    return name.startswith(SHARD_PREFIX)


def _write_new(path: Path, data: Mapping[str, Any], *, replace: bool) -> bool:
    """Write JSON atomically; without ``replace`` exclusively (False: ``path`` exists)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return write_atomic(path, text, exclusive=not replace)


def _folder(run_dir: str | os.PathLike[str]) -> Path:
    folder = Path(run_dir) / SHARDS
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def fence_shards(run_dir: str | os.PathLike[str], *, create: bool = True) -> str:
    """Start a new session of ``run_dir`` (the caller holds the run's lock): only shards of
    the returned session may commit from now on. Without ``create`` a run that never had
    shards gets no ``shards/`` folder (there is nothing to fence)."""
    session = secrets.token_hex(4)
    if create or (Path(run_dir) / SHARDS).is_dir():
        _write_new(_folder(run_dir) / _FENCE, {"session": session}, replace=True)
    return session


def fenced_session(run_dir: str | os.PathLike[str]) -> str | None:
    """The session allowed to commit shards, or ``None`` before any was fenced."""
    try:
        data = json.loads((Path(run_dir) / SHARDS / _FENCE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return data.get("session") if isinstance(data, dict) else None


def committed_shard(run_dir: str | os.PathLike[str], shard: str) -> dict[str, Any] | None:
    """The marker of ``shard`` once an attempt committed it, else ``None``."""
    try:
        data = json.loads((Path(run_dir) / SHARDS / f"{shard}.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return data if isinstance(data, dict) else None


def commit_shard(
    run_dir: str | os.PathLike[str], shard: str, marker: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Commit one attempt of ``shard`` (``marker`` lists its ``parts``) unless another
    attempt already did: returns ``None`` when this one is now the shard's, else the
    marker that won. Raises ``PermissionError`` when the run was fenced by a newer session.
    """
    session = fenced_session(run_dir)
    if session != marker.get("session"):
        raise PermissionError(
            f"{run_dir}: shard {shard!r} belongs to session {marker.get('session')!r}, but "
            f"session {session!r} has taken the run over; its parts were not committed"
        )
    if _write_new(_folder(run_dir) / f"{shard}.json", marker, replace=False):
        return None
    return committed_shard(run_dir, shard)


def committed_shard_parts(run_dir: str | os.PathLike[str]) -> set[str]:
    """The names of every shard part a commit marker lists."""
    folder = Path(run_dir) / SHARDS
    names: set[str] = set()
    for marker in folder.glob("*.json") if folder.is_dir() else ():
        if marker.name == _FENCE:
            continue
        try:
            data = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # never committed whole: a marker is renamed into place complete
        parts: Iterable[Any] = data.get("parts", []) if isinstance(data, dict) else []
        names.update(p for p in parts if isinstance(p, str))
    return names
