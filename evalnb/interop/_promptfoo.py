"""promptfoo configs (``promptfooconfig.yaml``) as an evalnb suite.

- ``prompts`` (inline text, ``{id, raw}`` / ``{label, raw}`` objects, ``file://`` text
  files, several prompts in one file split by a ``---`` line) become template variants;
- ``tests`` (inline, ``file://`` YAML/JSON/CSV, a CSV with ``__expected`` columns) become
  cases with ``vars`` (a var whose value is a list makes one case per value, as promptfoo
  does); ``defaultTest`` becomes the cases file's ``defaults``;
- assertions become checks (:data:`MAPPED`); the others are listed, never dropped.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import regex

from evalnb._exceptions import ArgumentError
from evalnb._types import check_template, render_template
from evalnb.interop._suite import ImportResult, Unsupported, source_error, write_suite

__all__ = ["MAPPED", "import_promptfoo"]

#: promptfoo assertion types evalnb expresses, and the check each becomes.
MAPPED = {
    "equals": "regex (the whole answer, case-sensitive)",
    "contains": "contains (case-sensitive)",
    "icontains": "contains (ignore_case)",
    "contains-any": "contains_any (case-sensitive)",
    "icontains-any": "contains_any (ignore_case)",
    "contains-all": "regex (every value, case-sensitive)",
    "icontains-all": "regex (every value, ignore_case)",
    "starts-with": "regex (at the start, case-sensitive)",
    "regex": "regex",
    "is-json": "is_json, or json_schema with the value as schema",
    "contains-json": "is_json, or json_schema with the value as schema",
    "llm-rubric": "judge (the rubric)",
    "not-contains": "avoids (case-sensitive)",
    "not-icontains": "avoids (ignore_case)",
    "not-contains-any": "avoids (case-sensitive)",
    "not-icontains-any": "avoids (ignore_case)",
    "not-equals": "regex (a negative lookahead)",
    "not-starts-with": "regex (a negative lookahead)",
    "not-regex": "regex (a negative lookahead)",
}

_EXPECTED = re.compile(r"^(?P<type>[a-z][a-z-]*)(?:\((?P<arg>[^)]*)\))?:(?P<value>.*)$", re.S)
_CSV_ALIASES = {"grade": "llm-rubric", "fn": "javascript", "eval": "javascript"}


class _Lined(dict[str, Any]):
    """A YAML mapping that remembers its line."""

    line = 0


def _yaml(path: Path, text: str) -> Any:
    import yaml  # type: ignore[import-untyped]

    class Loader(yaml.SafeLoader):
        pass

    # promptfoo reads YAML 1.2 (js-yaml): only true/false are booleans, "Yes" is text.
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )

    def mapping(loader: Any, node: Any) -> _Lined:
        out = _Lined(loader.construct_mapping(node, deep=True))
        out.line = node.start_mark.line + 1
        return out

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise source_error(Path(f"{path}{line}"), f"not valid YAML ({problem})") from None


def _plain(value: Any) -> Any:
    """JSON-ready data without the line markers."""
    return json.loads(json.dumps(value, default=str))


def _read(config: Path, ref: str, where: str) -> tuple[Path, str]:
    path = config.parent / ref.removeprefix("file://")
    try:
        return path, path.read_text(encoding="utf-8")
    except OSError as exc:
        raise source_error(
            config, f"{where}: cannot read the file:// reference {ref!r} ({exc.strerror})"
        ) from None


class _Importer:
    def __init__(self, path: Path):
        self.path = path
        self.unsupported: list[Unsupported] = []
        self.templates: dict[str, Any] = {}
        self.judge = False
        self.taken: set[str] = set()

    def skip(self, name: str, where: str, reason: str) -> None:
        self.unsupported.append(Unsupported(name, where, reason))

    # -- prompts ------------------------------------------------------------------

    def prompts(self, raw: Any) -> list[dict[str, Any]]:
        if raw is None:
            return [{"name": "baseline"}]
        items = raw if isinstance(raw, list) else [raw]
        found: list[tuple[str | None, str, str]] = []
        for i, item in enumerate(items):
            line = getattr(item, "line", 0)
            where = f"{self.path}{f':{line}' if line else ''}: prompts[{i}]"
            label = None
            if isinstance(item, dict):
                label = item.get("label") or item.get("id")
                item = item.get("raw", item.get("id"))
            if not isinstance(item, str):
                self.skip("prompt", where, f"expected text or file://; got {_plain(item)!r}")
                continue
            if item.startswith("file://"):
                file, text = _read(self.path, item, f"prompts[{i}]")
                if file.suffix not in (".txt", ".md", ".j2", ".jinja", ""):
                    self.skip(
                        f"prompt {file.name}",
                        where,
                        "only text prompt files become templates (chat JSON, .py, .js do not)",
                    )
                    continue
                parts = [p.strip("\n") for p in re.split(r"\n-{3,}\n", text) if p.strip()]
                for j, part in enumerate(parts):
                    name = label if label and len(parts) == 1 else f"{file.stem}-{j + 1}"
                    found.append((name, part, f"{where} ({file.name} part {j + 1})"))
            else:
                found.append((label, item, where))
        variants = []
        for n, (label, text, where) in enumerate(found, start=1):
            try:
                check_template(text)
            except ValueError as exc:
                self.skip(f"prompt {n}", where, f"its template does not compile in Jinja2 ({exc})")
                continue
            name = str(label) if label else f"prompt-{n}"
            variants.append({"name": re.sub(r"[^A-Za-z0-9_.-]+", "-", name), "template": text})
        if not variants:
            raise source_error(self.path, "no prompt could be imported (see the list above)")
        return variants

    # -- assertions ---------------------------------------------------------------

    def assertion(self, raw: Any, where: str, context: dict[str, Any]) -> dict[str, Any] | None:
        if isinstance(raw, dict) and "$ref" in raw:
            ref = str(raw["$ref"])
            name = ref.removeprefix("#/assertionTemplates/")
            if name not in self.templates:
                raise source_error(self.path, f"{where}: '$ref' {ref!r} names no assertionTemplate")
            raw = self.templates[name]
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise source_error(self.path, f"{where}: an assertion needs a 'type'; got {raw!r}")
        kind, value = raw["type"], raw.get("value")
        if kind not in MAPPED:
            self.skip(kind, where, "no evalnb check expresses it")
            return None
        if isinstance(value, str) and value.startswith("file://"):
            value = _read(self.path, value, where)[1]
        if isinstance(value, str) and "{{" in value and kind != "llm-rubric":
            try:
                value = render_template(value, context)
            except ValueError as exc:
                self.skip(kind, where, f"its value uses a template evalnb cannot fill ({exc})")
                return None
        try:
            return self._spec(kind, value)
        except (TypeError, ValueError) as exc:
            raise source_error(self.path, f"{where}: {kind}: {exc}") from None

    def _spec(self, kind: str, value: Any) -> dict[str, Any]:
        ignore = kind.removeprefix("not-").startswith("i")
        base = kind.removeprefix("not-").removeprefix("i")

        def text() -> str:
            if not isinstance(value, str | int | float) or value == "":
                raise ArgumentError(f"'value' must be non-empty text; got {value!r}")
            return str(value)

        def texts() -> list[str]:
            items = value.split(",") if isinstance(value, str) else value
            if not isinstance(items, list) or not items:
                raise ArgumentError(
                    f"'value' must be a list or comma-separated text; got {value!r}"
                )
            return [str(v).strip() for v in items if str(v).strip()]

        if kind in ("llm-rubric",):
            self.judge = True
            return {"type": "judge", "rubric": text()}
        if kind in ("is-json", "contains-json"):
            return {"type": "json_schema", "schema": value} if value else {"type": "is_json"}
        if kind in ("contains", "icontains"):
            return {"type": "contains", "text": text(), "ignore_case": ignore}
        if kind in ("contains-any", "icontains-any"):
            return {"type": "contains_any", "options": texts(), "ignore_case": ignore}
        if kind.startswith("not-") and base in ("contains", "contains-any"):
            phrases = [text()] if base == "contains" else texts()
            return {"type": "avoids", "phrases": phrases, "ignore_case": ignore}
        if kind in ("contains-all", "icontains-all"):
            ahead = "".join(f"(?=.*?{regex.escape(t)})" for t in texts())
            return {"type": "regex", "pattern": f"(?s)\\A{ahead}", "ignore_case": ignore}
        pattern = {
            "equals": lambda: f"\\A{regex.escape(text())}\\Z",
            "starts-with": lambda: f"\\A{regex.escape(text())}",
            "regex": text,
        }[base]()
        if kind.startswith("not-"):
            body = pattern.removeprefix("\\A")
            pattern = f"(?s)\\A(?!{body})" if base != "regex" else f"(?s)\\A(?!.*?(?:{body}))"
        return {"type": "regex", "pattern": pattern, "ignore_case": False}

    def checks(
        self, raws: Any, where: str, context: dict[str, Any], taken: set[str]
    ) -> list[dict[str, Any]]:
        if raws is None:
            return []
        if not isinstance(raws, list):
            raise source_error(self.path, f"{where}: 'assert' must be a list; got {raws!r}")
        out = []
        for i, raw in enumerate(raws):
            line = getattr(raw, "line", 0)
            at = f"{self.path}:{line}" if line else where
            spec = self.assertion(raw, f"{at}: {where}.assert[{i}]", context)
            if spec is None:
                continue
            kind = raw.get("type") if isinstance(raw, dict) and "type" in raw else "assertion"
            name, n = str(kind), 1
            while name in taken:
                n += 1
                name = f"{kind}-{n}"
            taken.add(name)
            out.append({"name": name, **spec})
        return out

    # -- tests --------------------------------------------------------------------

    def test_items(self, raw: Any) -> list[tuple[str, Any]]:
        if raw is None:
            raise source_error(self.path, "expected 'tests' (a list or a file:// reference)")
        refs = raw if isinstance(raw, list) else [raw]
        items: list[tuple[str, Any]] = []
        for i, ref in enumerate(refs):
            if isinstance(ref, str) and ref.startswith("file://"):
                items += self._test_file(ref, f"tests[{i}]")
            elif isinstance(ref, dict):
                items.append((f"{self.path}:{getattr(ref, 'line', '?')}", ref))
            else:
                raise source_error(
                    self.path, f"tests[{i}]: expected a test or a file:// reference; got {ref!r}"
                )
        return items

    def _test_file(self, ref: str, where: str) -> list[tuple[str, Any]]:
        file, text = _read(self.path, ref, where)
        if file.suffix == ".csv":
            return self._csv(file, text)
        data = json.loads(text) if file.suffix == ".json" else _yaml(file, text)
        if file.suffix == ".jsonl":
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not isinstance(data, list):
            raise source_error(file, f"expected a list of tests; got {type(data).__name__}")
        return [(f"{file}:{getattr(t, 'line', i + 1)}", t) for i, t in enumerate(data)]

    def _csv(self, file: Path, text: str) -> list[tuple[str, Any]]:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        items = []
        for row in reader:
            where = f"{file}:{reader.line_num}"
            test: dict[str, Any] = {"vars": {}, "assert": []}
            for column, cell in row.items():
                if column is None or cell is None:
                    raise source_error(Path(where), "the row has more cells than the header")
                if column.startswith("__expected"):
                    if cell.strip():
                        test["assert"].append(self._expected(cell, where, column))
                elif column == "__description":
                    test["description"] = cell
                elif column.startswith("__metadata:"):
                    test.setdefault("metadata", {})[column.removeprefix("__metadata:")] = cell
                elif column.startswith("__"):
                    self.skip(column, where, "this CSV column has no evalnb counterpart")
                else:
                    test["vars"][column] = cell
            items.append((where, test))
        return items

    def _expected(self, cell: str, where: str, column: str) -> dict[str, Any]:
        match = _EXPECTED.match(cell)
        kind = match["type"] if match else ""
        kind = _CSV_ALIASES.get(kind, kind)
        known = kind in MAPPED or kind in ("javascript", "python", "similar", "levenshtein")
        if match is None or not known:
            if cell.strip() in ("is-json", "contains-json"):
                return {"type": cell.strip()}
            return {"type": "equals", "value": cell}
        return {"type": kind, "value": match["value"]}

    def case(self, n: int, where: str, test: Any, defaults_vars: dict[str, Any]) -> list[Any]:
        if not isinstance(test, dict):
            raise source_error(self.path, f"{where}: a test must be an object; got {test!r}")
        raw_vars = test.get("vars") or {}
        if not isinstance(raw_vars, dict):
            raise source_error(self.path, f"{where}: 'vars' must be an object; got {raw_vars!r}")
        for key in sorted(set(test) - {"vars", "assert", "description", "metadata"}):
            self.skip(f"test option {key!r}", where, "evalnb has no counterpart; left out")
        values = {}
        for key, value in raw_vars.items():
            if isinstance(value, str) and value.startswith("file://"):
                value = _read(self.path, value, f"{where}: vars.{key}")[1]
            values[key] = value if isinstance(value, list) else [value]
        keys = list(values)
        combos = list(itertools.product(*values.values())) or [()]
        cases = []
        for j, combo in enumerate(combos, start=1):
            case_vars = _plain(dict(zip(keys, combo, strict=True)))
            context = {**defaults_vars, **case_vars}
            case_id = f"test-{n}" if len(combos) == 1 else f"test-{n}-{j}"
            case: dict[str, Any] = {"id": case_id, "vars": case_vars or {"_": ""}}
            metadata = {"source": where, **_plain(test.get("metadata") or {})}
            if test.get("description"):
                metadata["description"] = str(test["description"])
            case["metadata"] = metadata
            before = len(self.unsupported)
            checks = self.checks(test.get("assert"), f"tests[{n - 1}]", context, set(self.taken))
            if j > 1:
                # An expanded test's assertions are listed once, not once per case.
                del self.unsupported[before:]
            if checks:
                case["checks"] = checks
            cases.append(case)
        return cases


def import_promptfoo(
    source: str | os.PathLike[str], dest: str | os.PathLike[str], *, repeats: int = 5
) -> ImportResult:
    """Import a ``promptfooconfig.yaml`` into ``DEST/cases.yaml`` + ``DEST/experiment.toml``;
    the result lists what was imported and each assertion evalnb cannot express."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise source_error(path, f"cannot read the promptfoo config ({exc.strerror})") from None
    config = _yaml(path, text)
    if not isinstance(config, dict) or ("prompts" not in config and "tests" not in config):
        raise source_error(
            path, "not a promptfoo config: expected a YAML object with 'prompts' and 'tests'"
        )
    importer = _Importer(path)
    templates = config.get("assertionTemplates") or {}
    importer.templates = templates if isinstance(templates, dict) else {}
    variants = importer.prompts(config.get("prompts"))
    for i, provider in enumerate(config.get("providers") or []):
        name = provider if isinstance(provider, str) else _plain(provider)
        importer.skip(
            f"provider {name}",
            f"{path}: providers[{i}]",
            "one target per experiment: point experiment.toml at it (--base-url, --model)",
        )
    default = config.get("defaultTest") or {}
    defaults: dict[str, Any] = {}
    default_vars = _plain(default.get("vars") or {}) if isinstance(default, dict) else {}
    if default_vars:
        defaults["vars"] = default_vars
    taken: set[str] = set()
    if isinstance(default, dict):
        where = f"{path}:{getattr(default, 'line', '?')}"
        for key in sorted(set(default) - {"vars", "assert"}):
            importer.skip(f"defaultTest.{key}", where, "evalnb has no counterpart; left out")
        checks = importer.checks(default.get("assert"), "defaultTest", default_vars, taken)
        if checks:
            defaults["checks"] = checks
    importer.taken = taken
    cases = []
    for n, (where, test) in enumerate(importer.test_items(config.get("tests")), start=1):
        cases += importer.case(n, where, test, default_vars)
    result = ImportResult("promptfoo", path)
    result.unsupported = importer.unsupported
    return write_suite(
        result,
        dest,
        cases=cases,
        defaults=defaults or None,
        variants=variants,
        repeats=repeats,
        judge=importer.judge,
    )
