"""A development cache: an HTTP target's completions (:class:`OpenAIChat`, the vendors'
protocols) kept on disk.

Off by default (``run(cache=DIR)``, ``evalnb run --cache DIR``). An entry is keyed by the
case id, the variant name, the repeat index *and* the exact request body the target posts:
each (case, variant, repeat) is served its own stored draw, so repeats, two cases with one
prompt, and two variants that send the same request (an A/A comparison) stay independent
draws of the model, as they were when they were first asked; a changed request is a new
entry. The base URL is not part of the key (a local server may come back on another port):
keep one cache per model server.

What is stored is what the sample stores: the answer, usage, the request body and the
response body. The cache never sees the headers (the API key travels only there), and the
value of the target's API key variable is removed from an entry before it is written,
should a server echo it. Entries are private files (``0600`` in ``0700`` folders), written
under a temporary name and renamed. Every entry is type-checked as it is read: one that
cannot be read, or whose fields are not what a completion holds (an answer that is not a
string, a token count that is negative or not a whole number, ...), is a miss: the request
is asked again and the entry overwritten, so a damaged cache never reaches the samples.
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
from evalnb.targets._http import HTTPTarget

__all__ = ["ResponseCache"]

#: The layout of an entry; an entry of another version is a miss.
VERSION = 2

#: Each optional field of a stored completion and the types it may hold (``None`` aside).
_OPTIONAL_TEXT = ("model", "finish_reason", "stdout", "stderr", "trace")
_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens", "exit_code")
_FLAGS = ("stdout_truncated", "stderr_truncated", "trace_truncated")


class ResponseCache:
    """Wraps an HTTP target: a stored completion is served (marked
    ``cached=True``), any other request goes to the target and its completion is stored
    (``cached=False``). ``hits`` and ``misses`` count both."""

    def __init__(self, target: Any, directory: str | os.PathLike[str]):
        if not isinstance(target, HTTPTarget):
            raise TypeError(
                "'cache' keys entries by the HTTP request body, so it needs an HTTP target "
                f"(OpenAIChat, AnthropicMessages...); got {type(target).__name__}"
            )
        if not isinstance(directory, str | os.PathLike):
            raise TypeError(f"'cache' must be a directory path; got {directory!r}")
        self.target = target
        self.directory = Path(directory)
        self.hits = 0
        self.misses = 0
        #: Entries found but refused on reading (damaged or of the wrong types); each is
        #: also a miss.
        self.rejected = 0

    def key(self, request: Request) -> str:
        """SHA-256 of the case id, the variant name, the repeat index and the exact body
        the target posts (with the URL's path, when that names the model)."""
        body = json.dumps(self.target._body(request), ensure_ascii=False)
        head = json.dumps([request.case.id, request.variant.name, request.repeat])
        return hashlib.sha256(f"{head}\n{body}".encode()).hexdigest()

    async def complete(self, request: Request) -> Completion:
        key = self.key(request)
        path = self.directory / key[:2] / f"{key}.json"
        stored = _read(path, key)
        if isinstance(stored, Completion):
            self.hits += 1
            return stored
        self.rejected += stored
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
        """What the manifest says of the cache (``rejected``: entries refused on reading and
        asked again, when there were any)."""
        record: dict[str, Any] = {"path": str(self.directory), "hits": self.hits}
        record["misses"] = self.misses
        if self.rejected:
            record["rejected"] = self.rejected
        return record

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


def _read(path: Path, key: str) -> Completion | int:
    """The stored completion, or how many entries were refused (0: none stored, 1: an entry
    of this version that is damaged or of the wrong types)."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        return 1
    if not isinstance(entry, dict) or entry.get("version") != VERSION or entry.get("key") != key:
        return 1
    fields = _checked(entry.get("completion"))
    if fields is None:
        return 1
    # Nothing was sent this time: no retries were made.
    return Completion(**{**fields, "retries": 0, "cached": True})


def _checked(stored: Any) -> dict[str, Any] | None:
    """The fields of a stored completion, or ``None`` when any is not what a completion
    holds: the entry is then a miss rather than a sample the Parquet flush cannot store."""
    if (
        not isinstance(stored, dict)
        or set(stored) - _FIELDS
        or not isinstance(stored.get("text"), str)
    ):
        return None
    fields = dict(stored)
    if not all(
        fields.get(name) is None or isinstance(fields[name], str) for name in _OPTIONAL_TEXT
    ):
        return None
    for name in _COUNTS:
        value = fields.get(name)
        low = -(2**31) if name == "exit_code" else 0
        if value is not None and (type(value) is not int or not low <= value < 2**63):
            return None
    if not all(isinstance(fields.get(name, False), bool) for name in _FLAGS):
        return None
    if fields.get("facts") is not None and not isinstance(fields["facts"], dict):
        return None
    calls = fields.get("tool_calls") or []
    if not isinstance(calls, list) or not all(_is_call(call) for call in calls):
        return None
    fields["tool_calls"] = tuple(ToolCall(**call) for call in calls)
    return fields


def _is_call(call: Any) -> bool:
    return (
        isinstance(call, dict)
        and set(call) == {"id", "name", "arguments"}
        and (call["id"] is None or isinstance(call["id"], str))
        and isinstance(call["name"], str)
        and isinstance(call["arguments"], str)
    )


_FIELDS = {f.name for f in dataclasses.fields(Completion)} - {"cached"}
