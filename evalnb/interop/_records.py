"""Reading record files (JSONL, JSON lists, CSV) with the place of each record, and chat
messages as evalnb keeps them."""

from __future__ import annotations

import base64
import csv
import io
import mimetypes
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalnb._types import text_of
from evalnb.interop._bounded import Sources
from evalnb.interop._suite import LFS_HEADER, ImportNotes, parse_json, source_error

__all__ = ["Images", "csv_rows", "lfs_pointer", "messages", "records"]


def records(path: Path, kind: str, sources: Sources) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for every record of a ``.jsonl``, ``.json`` or ``.csv`` file,
    read through ``sources`` (its caps)."""
    if path.suffix not in (".jsonl", ".json", ".csv"):
        raise source_error(path, f"a {kind} file must end in .jsonl, .json or .csv")
    text = sources.text(path, f"the {kind} file")
    lfs_pointer(path, text)
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


def lfs_pointer(path: Path, text: str) -> None:
    """A one-line error when ``text`` is a Git LFS pointer, not the file it stands for."""
    if not text.startswith(LFS_HEADER):
        return
    fields = dict(line.partition(" ")[::2] for line in text.splitlines()[1:] if " " in line)
    size = fields.get("size", "?")
    raise source_error(
        path,
        f"is a Git LFS pointer ({fields.get('oid', 'no oid')}, {size} bytes), not the data: "
        "fetch the file itself (git lfs pull) and import again",
    )


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


class Images:
    """Inspect's image parts as OpenAI ``image_url`` parts: a data or http(s) URL is kept,
    a file (relative to the dataset) is read within the caps and inlined as a data URL."""

    def __init__(self, dataset: Path, sources: Sources):
        self.base = dataset.parent
        self.sources = sources

    def part(self, part: dict[str, Any], where: str) -> dict[str, Any]:
        image = part.get("image")
        if not isinstance(image, str) or not image:
            raise source_error(Path(where), f"an image part needs 'image' text; got {image!r}")
        if image.startswith(("data:", "http://", "https://")):
            url = image
        else:
            path = Path(os.path.realpath(self.base / image.removeprefix("file://")))
            if not path.is_relative_to(os.path.realpath(self.base)):
                raise source_error(
                    Path(where),
                    f"the image {image!r} resolves to {path}, outside the dataset's folder "
                    f"{self.base}; only images inside it are read",
                )
            data = self.sources.read(path, "an image", at=where)
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            if not kind.startswith("image/"):
                raise source_error(Path(where), f"{image!r} is not an image file ({kind})")
            url = f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"
        out: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
        if part.get("detail") in ("auto", "low", "high"):
            out["image_url"]["detail"] = part["detail"]
        return out


def _content(content: Any, where: str, images: Images | None) -> Any:
    """A message's content as evalnb sends it: text, or text and image parts; None when
    it holds parts evalnb cannot send."""
    text = text_of(content, sep="", strict=True)
    if text is not None:
        return text
    if images is None or not isinstance(content, list):
        return None
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "image":
            parts.append(images.part(part, where))
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            parts.append({"type": "image_url", "image_url": dict(part["image_url"])})
        else:
            return None
    return parts


def messages(
    value: Any, where: str, notes: ImportNotes, *, images: Images | None = None
) -> list[dict[str, Any]] | None:
    """Chat messages as evalnb keeps them (role, content, name); None when a message holds
    parts evalnb cannot send (images too, unless ``images`` reads them)."""
    out = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise source_error(
                Path(where), f"'input[{i}]' must be a message with a 'role'; got {message!r}"
            )
        content = _content(message.get("content"), where, images)
        if content is None:
            what = "audio, video or other media" if images else "images or other media"
            notes.refuse("non-text message", where, f"input[{i}] holds {what}")
            return None
        kept = {"role": message["role"], "content": content}
        if isinstance(message.get("name"), str):
            kept["name"] = message["name"]
        out.append(kept)
    return out


def item_hint(record: Any, field: str) -> str:
    """What to do with OpenAI Evals data (``{"item": {...}}``) given to another importer
    that wanted ``field`` (empty: the record is not such data)."""
    if (
        not isinstance(record, dict)
        or set(record) != {"item"}
        or not isinstance(record["item"], dict)
    ):
        return ""
    return (
        ': this is OpenAI Evals data ({"item": {...}}): import it with `evalnb import '
        "openai-graders DATA.jsonl --criteria CRITERIA.json`"
        + (f", or read its field with --field {field}=item.{field}" if field else "")
    )
