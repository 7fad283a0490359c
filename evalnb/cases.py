"""Load and validate cases files (JSONL: one object a line; JSON: a list of objects).

Everything is checked before anything runs, and the first problem is reported in one
line naming the file, the line (or list index) and the field::

    cases.jsonl:7: 'checks[1].type' must be one of 'avoids', 'contains', ...; got 'contians'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalnb._exceptions import CasesError
from evalnb._types import SPLITS, Case
from evalnb.checks import build_checks

__all__ = ["CASE_FIELDS", "file_sha256", "load_cases"]

CASE_FIELDS = (
    "id",
    "prompt",
    "messages",
    "fixtures",
    "checks",
    "review",
    "group",
    "split",
    "tags",
    "metadata",
    "expect_keys",
)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _expect(ok: bool, field: str, expected: str, value: Any) -> None:
    if not ok:
        raise ValueError(f"'{field}' must be {expected}; got {_shown(value)}")


def _validate_fields(item: Any) -> dict[str, Any]:
    _expect(isinstance(item, dict), "case", "a JSON object", item)
    for key in item:
        if key not in CASE_FIELDS:
            raise ValueError(f"'{key}' is not a case field (fields: {', '.join(CASE_FIELDS)})")
    _expect(
        isinstance(item.get("id"), str) and item["id"] != "",
        "id",
        "a non-empty string",
        item.get("id"),
    )
    has_prompt, has_messages = "prompt" in item, "messages" in item
    if has_prompt == has_messages:
        raise ValueError(
            "a case needs exactly one of 'prompt' or 'messages'; "
            f"got {'both' if has_prompt else 'neither'}"
        )
    if has_prompt:
        _expect(
            isinstance(item["prompt"], str) and item["prompt"].strip() != "",
            "prompt",
            "a non-empty string",
            item["prompt"],
        )
    else:
        messages = item["messages"]
        _expect(
            isinstance(messages, list) and messages != [], "messages", "a non-empty list", messages
        )
        for i, message in enumerate(messages):
            _expect(isinstance(message, dict), f"messages[{i}]", "an object", message)
            _expect(
                isinstance(message.get("role"), str),
                f"messages[{i}].role",
                "a string",
                message.get("role"),
            )
            _expect("content" in message, f"messages[{i}].content", "present", None)
    fixtures = item.get("fixtures", {})
    _expect(isinstance(fixtures, dict), "fixtures", "an object of path: text", fixtures)
    for name, text in fixtures.items():
        _expect(isinstance(text, str), f"fixtures.{name}", "a string (the file's text)", text)
    _expect(
        isinstance(item.get("checks", []), list),
        "checks",
        "a list of check specs",
        item.get("checks"),
    )
    for key in ("review", "group"):
        if item.get(key) is not None:
            _expect(isinstance(item[key], str), key, "a string", item[key])
    split = item.get("split", "dev")
    _expect(split in SPLITS, "split", " or ".join(repr(s) for s in SPLITS), split)
    tags = item.get("tags", [])
    _expect(
        isinstance(tags, list) and all(isinstance(t, str) for t in tags),
        "tags",
        "a list of strings",
        tags,
    )
    _expect(
        isinstance(item.get("metadata", {}), dict), "metadata", "an object", item.get("metadata")
    )
    keys = item.get("expect_keys", [])
    _expect(
        isinstance(keys, list) and all(isinstance(k, str) and k for k in keys),
        "expect_keys",
        "a list of key names",
        keys,
    )
    return item


def _items(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """(location, parsed item) pairs; location is ``file:line`` or ``file[index]``."""
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield f"{path}:{number}", json.loads(line)
            except json.JSONDecodeError as exc:
                raise CasesError(
                    f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CasesError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if isinstance(data, dict) and "cases" in data:
        data = data["cases"]
    if not isinstance(data, list):
        raise CasesError(f"{path}: expected a JSON list of cases; got {type(data).__name__}")
    for index, item in enumerate(data):
        yield f"{path}[{index}]", item


def load_cases(path: str | os.PathLike[str]) -> list[Case]:
    """Read and validate every case of a ``.jsonl`` or ``.json`` file.

    Raises :class:`CasesError` with a one-line message for the first problem found.
    """
    path = Path(path)
    if path.suffix not in (".jsonl", ".json"):
        raise CasesError(f"{path}: cases file must end in .jsonl or .json; got {path.suffix!r}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CasesError(f"{path}: no such cases file") from None
    except UnicodeDecodeError as exc:
        raise CasesError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    cases: list[Case] = []
    first_seen: dict[str, str] = {}
    for where, item in _items(path, text):
        try:
            fields = _validate_fields(item)
            case = Case(**fields)
            case = dataclasses.replace(case, checks=build_checks(case.checks))
        except (ValueError, TypeError) as exc:
            raise CasesError(f"{where}: {exc}") from None
        if case.id in first_seen:
            raise CasesError(
                f"{where}: 'id' must be unique; "
                f"got {case.id!r} again (first at {first_seen[case.id]})"
            )
        first_seen[case.id] = where
        cases.append(case)
    if not cases:
        raise CasesError(f"{path}: no cases found (the file is empty)")
    return cases
