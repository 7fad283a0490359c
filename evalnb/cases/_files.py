"""Load and validate cases files: JSONL (one object a line), JSON (a list, or an object with
``cases`` and ``defaults``), YAML (the same two shapes) and CSV (a header row).

Everything is checked before anything runs, and the first problem is reported in one
line naming the file, the line (or list index) and the field::

    cases.jsonl:7: 'checks[1].type' must be one of 'avoids', 'contains', ...; got 'contians'

``defaults`` (a YAML or JSON file's own, or an experiment's) apply to every case: their
``checks`` run after the case's own, ``vars`` and ``metadata`` are merged (the case's keys
win), ``tags`` are added, and any other field is used when the case does not give it.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, cast

from evalnb._exceptions import ArgumentError, CasesError
from evalnb._types import SPLITS, Case
from evalnb.cases._yaml import read_yaml
from evalnb.checks import Check, build_check, build_checks, unique_names

__all__ = [
    "CASE_FIELDS",
    "CSV_COLUMNS",
    "DEFAULT_FIELDS",
    "SUFFIXES",
    "YAML_NODES",
    "file_sha256",
    "load_cases",
    "validate_defaults",
]

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
    "target",
    "choices",
    "vars",
    "context",
)

#: The fields ``defaults`` may give: a case's own text and identity stay its own.
DEFAULT_FIELDS = tuple(f for f in CASE_FIELDS if f not in ("id", "prompt", "messages"))

#: CSV columns besides ``vars.NAME``, ``metadata.NAME`` and ``choices.A``, ``choices.B``...
#: (``input`` is another name for ``prompt``; ``checks`` holds a JSON list; ``tags`` are
#: separated by commas).
CSV_COLUMNS = ("id", "prompt", "input", "target", "context", "review", "group", "split", "tags")

SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".csv")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _expect(ok: bool, field: str, expected: str, value: Any) -> None:
    if not ok:
        raise ArgumentError(f"'{field}' must be {expected}; got {_shown(value)}")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_messages(messages: Any) -> None:
    _expect(isinstance(messages, list) and messages != [], "messages", "a non-empty list", messages)
    for i, message in enumerate(messages):
        _expect(isinstance(message, dict), f"messages[{i}]", "an object", message)
        _expect(
            isinstance(message.get("role"), str),
            f"messages[{i}].role",
            "a string",
            message.get("role"),
        )
        _expect("content" in message, f"messages[{i}].content", "present", None)


def _check_fixtures(fixtures: Any) -> None:
    _expect(isinstance(fixtures, dict), "fixtures", "an object of path: text", fixtures)
    for name, text in fixtures.items():
        parts = PurePosixPath(name).parts
        _expect(
            bool(parts) and parts[0] != "/" and ".." not in parts and "\\" not in name,
            f"fixtures.{name}",
            "a relative path that stays inside the workspace (no '/' start, no '..')",
            name,
        )
        _expect(isinstance(text, str), f"fixtures.{name}", "a string (the file's text)", text)


def _check_target(target: Any) -> None:
    ok = (
        (isinstance(target, str) and target != "")
        or (isinstance(target, int | float) and not isinstance(target, bool))
        or (_strings(target) and target != [] and "" not in target)
    )
    _expect(ok, "target", "a non-empty string, a list of strings, or a number", target)


def _check_choices(choices: Any) -> None:
    _expect(
        _strings(choices) and 2 <= len(choices) <= 26 and all(c.strip() for c in choices),
        "choices",
        "a list of 2 to 26 non-empty strings",
        choices,
    )


def _check_vars(value: Any) -> None:
    _expect(isinstance(value, dict), "vars", "an object of name: value", value)


def _check_context(value: Any) -> None:
    _expect(
        isinstance(value, str) or _strings(value), "context", "a string or a list of strings", value
    )


#: Each field's own check (the ``id`` and the prompt/messages choice are checked apart).
_FIELD_CHECKS = {
    "prompt": lambda v: _expect(
        isinstance(v, str) and v.strip() != "", "prompt", "a non-empty string", v
    ),
    "messages": _check_messages,
    "fixtures": _check_fixtures,
    "checks": lambda v: _expect(isinstance(v, list), "checks", "a list of check specs", v),
    "review": lambda v: _expect(v is None or isinstance(v, str), "review", "a string", v),
    "group": lambda v: _expect(v is None or isinstance(v, str), "group", "a string", v),
    "split": lambda v: _expect(v in SPLITS, "split", " or ".join(repr(s) for s in SPLITS), v),
    "tags": lambda v: _expect(_strings(v), "tags", "a list of strings", v),
    "metadata": lambda v: _expect(isinstance(v, dict), "metadata", "an object", v),
    "expect_keys": lambda v: _expect(
        _strings(v) and all(v), "expect_keys", "a list of key names", v
    ),
    "target": _check_target,
    "choices": _check_choices,
    "vars": _check_vars,
    "context": _check_context,
}


def _validate_fields(item: Any) -> dict[str, Any]:
    _expect(isinstance(item, dict), "case", "an object", item)
    for key in item:
        if key not in CASE_FIELDS:
            raise ArgumentError(f"'{key}' is not a case field (fields: {', '.join(CASE_FIELDS)})")
    _expect(
        isinstance(item.get("id"), str) and item["id"] != "",
        "id",
        "a non-empty string",
        item.get("id"),
    )
    has_prompt, has_messages = "prompt" in item, "messages" in item
    if has_prompt and has_messages:
        raise ArgumentError("a case needs exactly one of 'prompt' or 'messages'; got both")
    if not has_prompt and not has_messages and not item.get("vars"):
        raise ArgumentError(
            "a case needs exactly one of 'prompt' or 'messages'; got neither "
            "(or 'vars' for template variants)"
        )
    for key, value in item.items():
        if key in _FIELD_CHECKS:
            _FIELD_CHECKS[key](value)
    return cast(dict[str, Any], item)


def validate_defaults(raw: Any, *, base: Path | None = None) -> dict[str, Any]:
    """``defaults`` checked as a whole: known fields with valid values and checks.

    Raises ``ValueError`` naming the field (``'defaults.checks[0].type' must be ...``).
    """
    if not isinstance(raw, dict):
        raise ArgumentError(f"'defaults' must be an object of case fields; got {_shown(raw)}")
    for key, value in raw.items():
        if key not in DEFAULT_FIELDS:
            raise ArgumentError(
                f"'defaults.{key}' is not a field defaults may give "
                f"(fields: {', '.join(DEFAULT_FIELDS)})"
            )
        try:
            _FIELD_CHECKS[key](value)
        except ValueError as exc:
            raise ArgumentError(f"'defaults.{str(exc)[1:]}") from None
    build_checks(raw.get("checks", []), base=base, where="defaults.checks")
    return dict(raw)


def _merge(outer: Mapping[str, Any], inner: Mapping[str, Any]) -> dict[str, Any]:
    """``inner`` over ``outer`` by the defaults rules (``checks`` are kept apart)."""
    out = {k: v for k, v in outer.items() if k != "checks"}
    for key, value in inner.items():
        if key in ("vars", "metadata", "fixtures") and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        elif key == "tags" and isinstance(out.get(key), list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        else:
            out[key] = value
    return out


class _Defaults:
    """The defaults in force for a file: fields, and the checks with where they came from."""

    def __init__(self, layers: list[tuple[dict[str, Any], str]]):
        self.fields: dict[str, Any] = {}
        self.specs: list[tuple[Any, str]] = []
        for layer, where in layers:
            self.fields = _merge(self.fields, layer)
            self.specs += [(s, f"{where}[{i}]") for i, s in enumerate(layer.get("checks", []))]

    def case(self, item: Any, base: Path) -> Case:
        _expect(isinstance(item, dict), "case", "an object", item)
        fields = _validate_fields(_merge(self.fields, item))
        own = fields.pop("checks", [])
        case = Case(**fields)
        checks: list[Check] = list(build_checks(own, case=case, base=base))
        wheres = [f"checks[{i}]" for i in range(len(checks))]
        for spec, where in self.specs:
            checks.append(build_check(spec, where=where, case=case, base=base))
            wheres.append(where)
        unique_names(checks, wheres)
        return dataclasses.replace(case, checks=tuple(checks))


def _jsonl_items(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    # Lines end at "\n" only (JSON Lines): str.splitlines would also cut at U+2028 and the
    # other Unicode line breaks, which JSON allows raw inside a string.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        yield f"{path}:{number}", _json(line, path, number)


def _json(text: str, path: Path, line: int | None = None) -> Any:
    """The JSON value in ``text``, the whole file or its ``line``; a located error if not."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"{path}:{line or exc.lineno}"
        raise CasesError(f"{at}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        at = f"{path}:{line}" if line else str(path)
        raise CasesError(f"{at}: JSON nested too deeply to read") from None


def _split_top(path: Path, data: Any, kind: str) -> tuple[Any, Any]:
    """(defaults, cases) from a file's top level: a list of cases, or an object."""
    if isinstance(data, dict) and "cases" in data:
        extra = sorted(str(k) for k in data if k not in ("cases", "defaults"))
        if extra:
            raise CasesError(
                f"{path}: '{extra[0]}' is not a top-level field (fields: cases, defaults)"
            )
        return data.get("defaults"), data["cases"]
    if not isinstance(data, list):
        raise CasesError(
            f"{path}: expected a {kind} list of cases, or an object with 'cases' (and "
            f"'defaults'); got {type(data).__name__}"
        )
    return None, data


def _json_items(path: Path, text: str) -> tuple[Any, str, Iterator[tuple[str, Any]]]:
    defaults, items = _split_top(path, _json(text, path), "JSON")
    if not isinstance(items, list):
        raise CasesError(f"{path}: 'cases' must be a list; got {type(items).__name__}")
    return defaults, str(path), ((f"{path}[{i}]", item) for i, item in enumerate(items))


#: The nodes a YAML cases file may expand to, each alias counted as the nodes it repeats
#: (a few aliases of aliases stand for billions of nodes: a "billion laughs"), unless the
#: file has more bytes than that: written out without aliases it would have about as many.
YAML_NODES = 1_000_000


def _yaml_items(path: Path, text: str) -> tuple[Any, str, Iterator[tuple[str, Any]]]:
    import yaml  # type: ignore[import-untyped]

    # The node tree gives each case's first line; the values are built from that same tree.
    # A file may expand to as many nodes as it has characters: written out without aliases
    # it would have about as many.
    limit = max(YAML_NODES, len(text))
    refusal = (
        f"its aliases expand it past {limit:,} YAML nodes (the larger of {YAML_NODES:,} and "
        "the file's size in characters); write the repeated parts out, or use 'defaults'"
    )
    document = read_yaml(text, str(path), limit=limit, refusal=refusal)
    root, data = document.root, document.data
    if root is None:
        return None, str(path), iter(())
    defaults, items = _split_top(path, data, "YAML")
    nodes, defaults_where = root, str(path)
    if isinstance(root, yaml.MappingNode):
        found = {key.value: (key, value) for key, value in root.value}
        nodes = found["cases"][1]
        if "defaults" in found:
            defaults_where = f"{path}:{found['defaults'][0].start_mark.line + 1}"
    if not isinstance(items, list) or not isinstance(nodes, yaml.SequenceNode):
        raise CasesError(f"{path}: 'cases' must be a list; got {type(items).__name__}")
    lines = [node.start_mark.line + 1 for node in nodes.value]
    pairs = ((f"{path}:{line}", item) for line, item in zip(lines, items, strict=True))
    return defaults, defaults_where, pairs


def _csv_row(header: list[str], row: list[str]) -> dict[str, Any]:
    item: dict[str, Any] = {}
    choices: list[str] = []
    for column, cell in zip(header, row, strict=True):
        if column.startswith("vars."):
            item.setdefault("vars", {})[column.removeprefix("vars.")] = cell
            continue
        if not cell.strip():
            continue
        if column.startswith("metadata."):
            item.setdefault("metadata", {})[column.removeprefix("metadata.")] = cell
        elif column.startswith("choices."):
            choices.append(cell)
        elif column == "checks":
            try:
                item["checks"] = json.loads(cell)
            except json.JSONDecodeError as exc:
                raise ArgumentError(
                    f"'checks' must be a JSON list of check specs ({exc.msg} at column {exc.colno})"
                ) from None
        elif column == "tags":
            item["tags"] = [t.strip() for t in cell.split(",") if t.strip()]
        else:
            item["prompt" if column == "input" else column] = cell
    if choices:
        item["choices"] = choices
    return item


def _csv_header(path: Path, header: list[str]) -> None:
    for i, column in enumerate(header):
        letter = column.removeprefix("choices.")
        known = (
            column in (*CSV_COLUMNS, "checks")
            or (column.startswith(("vars.", "metadata.")) and column.count(".") == 1)
            or (column.startswith("choices.") and len(letter) == 1 and letter.isupper())
        )
        if not known:
            raise CasesError(
                f"{path}:1: column {i + 1} {column!r} is not a cases column (columns: "
                f"{', '.join(CSV_COLUMNS)}, checks, vars.NAME, metadata.NAME, choices.A...)"
            )
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        raise CasesError(f"{path}:1: column {repeated[0]!r} appears twice")
    if "prompt" in header and "input" in header:
        raise CasesError(f"{path}:1: give a 'prompt' or an 'input' column, not both")
    if "id" not in header:
        raise CasesError(f"{path}:1: the header needs an 'id' column; got {', '.join(header)}")
    letters = [c.removeprefix("choices.") for c in header if c.startswith("choices.")]
    if letters != [chr(ord("A") + i) for i in range(len(letters))]:
        raise CasesError(f"{path}:1: choice columns must be choices.A, choices.B, ... in order")


def _csv_items(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [column.strip() for column in next(reader)]
    except StopIteration:
        return
    except csv.Error as exc:
        raise CasesError(f"{path}:1: not valid CSV ({exc})") from None
    _csv_header(path, header)
    end = reader.line_num
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CasesError(f"{path}:{start}: not valid CSV ({exc})") from None
        end = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise CasesError(
                f"{path}:{start}: the row has {len(row)} cells and the header {len(header)}"
            )
        try:
            yield f"{path}:{start}", _csv_row(header, row)
        except ValueError as exc:
            raise CasesError(f"{path}:{start}: {exc}") from None


def load_cases(
    path: str | os.PathLike[str], *, defaults: Mapping[str, Any] | None = None
) -> list[Case]:
    """Read and validate every case of a ``.jsonl``, ``.json``, ``.yaml``/``.yml`` or
    ``.csv`` file.

    ``defaults`` (an experiment's) apply to every case, under the file's own. A ``python``
    check's module is looked for in the file's folder. Raises :class:`CasesError` with a
    one-line message for the first problem found.
    """
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise CasesError(
            f"{path}: cases file must end in {', '.join(SUFFIXES)}; got {path.suffix!r}"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CasesError(f"{path}: no such cases file") from None
    except UnicodeDecodeError as exc:
        raise CasesError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    base = path.parent
    layers: list[tuple[dict[str, Any], str]] = []
    if defaults:
        layers.append((dict(defaults), "defaults.checks"))
    own: Any = None
    if path.suffix == ".jsonl":
        items = _jsonl_items(path, text)
    elif path.suffix == ".csv":
        items = _csv_items(path, text)
    else:
        read = _yaml_items if path.suffix in (".yaml", ".yml") else _json_items
        own, where, items = read(path, text)
        if own is not None:
            try:
                layers.append((validate_defaults(own, base=base), "defaults.checks"))
            except ValueError as exc:
                raise CasesError(f"{where}: {exc}") from None
    merged = _Defaults(layers)
    cases: list[Case] = []
    first_seen: dict[str, str] = {}
    for where, item in items:
        try:
            case = merged.case(item, base)
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
