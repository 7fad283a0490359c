"""A development cache: an :class:`OpenAIChat` target's completions kept on disk.

Off by default (``run(cache=DIR)``, ``evalnb run --cache DIR``). An entry is keyed by the
exact request body the target posts *and the repeat index*: repeat 3 of a case is served
repeat 3's stored draw, so repeats stay separate draws of the model, as they were when
they were first asked. The base URL is not part of the key (a local server may come back
on another port): keep one cache per model server.

What is stored is what the sample stores: the answer, usage, the request body and the
response body. The cache never sees the headers (the API key travels only there), and the
value of the target's API key variable is removed from an entry before it is written,
should a server echo it. Entries are private files (``0600`` in ``0700`` folders), written
under a temporary name and renamed; an entry that cannot be read is asked again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from evalnb._exceptions import TargetError
from evalnb._types import Completion, Request, ToolCall
from evalnb.targets._openai import OpenAIChat

__all__ = ["ResponseCache"]

#: The layout of an entry; an entry of another version is a miss.
VERSION = 1


class ResponseCache:
    """Wraps an :class:`OpenAIChat` target: a stored completion is served (marked
    ``cached=True``), any other request goes to the target and its completion is stored
    (``cached=False``). ``hits`` and ``misses`` count both."""

    def __init__(self, target: Any, directory: str | os.PathLike[str]):
        if not isinstance(target, OpenAIChat):
            raise TypeError(
                "'cache' keys entries by the HTTP request body, so it needs an OpenAIChat "
                f"target; got {type(target).__name__}"
            )
        if not isinstance(directory, str | os.PathLike):
            raise TypeError(f"'cache' must be a directory path; got {directory!r}")
        self.target = target
        self.directory = Path(directory)
        self.hits = 0
        self.misses = 0

    def key(self, request: Request) -> str:
        """SHA-256 of the repeat index and the exact body :class:`OpenAIChat` posts."""
        body = json.dumps(self.target._body(request), ensure_ascii=False)
        return hashlib.sha256(f"repeat {request.repeat}\n{body}".encode()).hexdigest()

    async def complete(self, request: Request) -> Completion:
        key = self.key(request)
        path = self.directory / key[:2] / f"{key}.json"
        stored = _read(path, key)
        if stored is not None:
            self.hits += 1
            return stored
        try:
            completion = await self.target.complete(request)
        except TargetError as exc:
            # Failures are never stored: the next run asks again.
            if exc.partial is not None:
                exc.partial = dataclasses.replace(exc.partial, cached=False)
            raise
        self.misses += 1
        self._write(path, {"version": VERSION, "key": key, "completion": _fields(completion)})
        return dataclasses.replace(completion, cached=False)

    def record(self) -> dict[str, Any]:
        """What the manifest says of the cache."""
        return {"path": str(self.directory), "hits": self.hits, "misses": self.misses}

    def _write(self, path: Path, entry: dict[str, Any]) -> None:
        text = json.dumps(entry, ensure_ascii=False)
        secret = os.environ.get(self.target.api_key_env) if self.target.api_key_env else None
        if secret:
            text = text.replace(secret, "[redacted]")
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(text)
        os.replace(tmp, path)


def _fields(completion: Completion) -> dict[str, Any]:
    fields = dataclasses.asdict(completion)
    fields.pop("cached", None)
    return fields


def _read(path: Path, key: str) -> Completion | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry.get("version") != VERSION or entry.get("key") != key:
            return None
        fields = dict(entry["completion"])
        fields["tool_calls"] = tuple(ToolCall(**call) for call in fields.get("tool_calls") or ())
        # Nothing was sent this time: no retries were made.
        return Completion(**{**fields, "retries": 0, "cached": True})
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
