"""Reading record files (JSONL, JSON lists, CSV) with the place of each record, and chat
messages as evalnb keeps them."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalnb.interop._bounded import Sources
from evalnb.interop._suite import Unsupported, parse_json, source_error

__all__ = ["csv_rows", "messages", "records", "text_of"]


def records(path: Path, kind: str, sources: Sources) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every record of a ``.jsonl``, ``.json`` or ``.csv`` file,
    read through ``sources`` (its caps)."""
    if path.suffix not in (".jsonl", ".json", ".csv"):
        raise source_error(path, f"a {kind} file must end in .jsonl, .json or .csv")
    text = sources.text(path, f"the {kind} file")
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            item = parse_json(line, f"{path}:{number}", f"a {kind} record")
            if not isinstance(item, dict):
                raise source_error(
                    Path(f"{path}:{number}"), f"expected a JSON object; got {type(item).__name__}"
                )
            yield f"{path}:{number}", item
    elif path.suffix == ".json":
        data = parse_json(text, str(path), f"a {kind} file")
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise source_error(path, f"expected a JSON list of {kind} records (objects)")
        for i, item in enumerate(data):
            yield f"{path}[{i}]", item
    else:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        for row in csv_rows(reader, path):
            if None in row or None in row.values():
                raise source_error(
                    Path(f"{path}:{reader.line_num}"), "the row's cells do not match the header"
                )
            yield f"{path}:{reader.line_num}", dict(row)


def csv_rows(reader: csv.DictReader[str], path: Path) -> Iterator[dict[str, Any]]:
    """The rows of ``reader``; a CSV error (a field past the csv module's size limit, a
    stray quote) is one line naming the file and the row."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise source_error(
                Path(f"{path}:{reader.line_num}"), f"not valid CSV ({exc})"
            ) from None
        yield row


def text_of(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a content list (None: not text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        if parts and all(isinstance(p, str) for p in parts):
            return "".join(str(p) for p in parts)
    return None


def messages(value: Any, where: str, unsupported: list[Unsupported]) -> list[dict[str, Any]] | None:
    """Chat messages as evalnb keeps them (role, content, name); None when not text."""
    out = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise source_error(
                Path(where), f"'input[{i}]' must be a message with a 'role'; got {message!r}"
            )
        text = text_of(message.get("content"))
        if text is None:
            unsupported.append(
                Unsupported("non-text message", where, f"input[{i}] holds images or other media")
            )
            return None
        kept = {"role": message["role"], "content": text}
        if isinstance(message.get("name"), str):
            kept["name"] = message["name"]
        out.append(kept)
    return out
