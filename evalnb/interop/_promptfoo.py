"""promptfoo configs (``promptfooconfig.yaml``) as an evalnb suite.

- ``prompts`` (inline text, ``{id, raw}`` / ``{label, raw}`` objects, ``file://`` text
  files, several prompts in one file split by a ``---`` line) become template variants;
- ``tests`` (inline, ``file://`` YAML/JSON/CSV, a CSV with ``__expected`` columns) become
  cases with ``vars`` (a var whose value is a list makes one case per value, as promptfoo
  does); ``defaultTest`` becomes the cases file's ``defaults``;
- assertions become checks (:data:`MAPPED`); the others are listed, never dropped.

The config is untrusted: ``file://`` references resolve inside its folder only (unless
allowed), every file is read within :class:`~evalnb.interop.Limits`, and the YAML may
expand (aliases, list-valued vars) to at most ``Limits.yaml_nodes`` nodes.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import regex

from evalnb._exceptions import ArgumentError
from evalnb._types import chat_prompt, render_template
from evalnb.cases import read_yaml, safe_loader
from evalnb.checks import PromptfooEngine, find_promptfoo, promptfoo_code, template_hazard
from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._promptfoo_engine import (
    COMPARED,
    COMPARED_BY,
    MODEL_GRADED,
    engine_reason,
    engine_spec,
)
from evalnb.interop._promptfoo_expand import (
    ExpansionError,
    agreement,
    expand,
    suite_code,
    unexpanded,
)
from evalnb.interop._promptfoo_graders import (
    CODE,
    GRADERS,
    code_reference,
    grader_spec,
    transformed_spec,
)
from evalnb.interop._promptfoo_prompts import Prompts, globbed, provider_variants
from evalnb.interop._records import csv_rows, lfs_pointer
from evalnb.interop._reserved import keep_apart, report
from evalnb.interop._shapes import shown
from evalnb.interop._suite import (
    ImportNotes,
    ImportResult,
    Note,
    parse_json,
    reading,
    source_error,
    write_suite,
)

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

#: Assertion fields read (the others are listed as not imported).
UNGRADED = (
    "no evalnb check expresses it: install promptfoo (`make promptfoo`, or npm install "
    "promptfoo) and import again, so that promptfoo grades it"
)
_ASSERTION_KEYS = {"type", "value", "threshold", "metric", "transform", "weight", "provider"}
_JSON_PARSE = re.compile(r"^\s*JSON\.parse\(\s*output\s*\)\s*;?\s*$")


def _named(raw: Any, templates: dict[str, Any]) -> str:
    """The check's name: the assertion's ``metric``, else its type (a ``$ref`` read)."""
    if isinstance(raw, dict) and "$ref" in raw:
        raw = templates.get(str(raw["$ref"]).removeprefix("#/assertionTemplates/"), raw)
    if isinstance(raw, dict) and isinstance(raw.get("metric"), str) and raw["metric"].strip():
        return str(raw["metric"]).strip()
    return str(raw.get("type")) if isinstance(raw, dict) and "type" in raw else "assertion"


_EXPECTED = re.compile(r"^(?P<type>[a-z][a-z-]*)(?:\((?P<arg>[^)]*)\))?:(?P<value>.*)$", re.S)
_CSV_ALIASES = {"grade": "llm-rubric", "fn": "javascript", "eval": "javascript"}


class _Lined(dict[str, Any]):
    """A YAML mapping that remembers its line."""

    line = 0


def _loader() -> Any:
    """A safe YAML loader (libyaml's when PyYAML has it) that reads YAML 1.2 booleans, as
    promptfoo (js-yaml) does, and keeps each mapping's line."""
    import yaml  # type: ignore[import-untyped]

    class Loader(safe_loader()):  # type: ignore[misc]
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
    return Loader


def _plain(value: Any) -> Any:
    """JSON-ready data without the line markers."""
    return json.loads(json.dumps(value, default=str))


_PLAIN_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _fill(template: str, context: dict[str, Any]) -> str:
    """``template`` rendered with ``context``: a template of only ``{{ name }}`` fields is
    filled directly (as Jinja2 would fill it, ``str`` of each value: a 10,000-test config
    spends seconds in Jinja2 otherwise); any other goes through the sandbox."""
    rest = _PLAIN_VAR.sub("", template)
    names = _PLAIN_VAR.findall(template)
    if "{{" in rest or "{%" in rest or "{#" in rest or any(n not in context for n in names):
        return render_template(template, context)
    return _PLAIN_VAR.sub(lambda m: str(context[m[1]]), template)


def _count(value: Any) -> int:
    """The YAML nodes ``value`` would be written as (a mapping's keys counted)."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            count += len(item)
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return count


#: Test files by suffix: what promptfoo reads that evalnb reads too.
_TEST_FILES = (".csv", ".json", ".jsonl", ".yaml", ".yml")


class _Importer:
    def __init__(self, path: Path, sources: Sources, engine: PromptfooEngine | None = None):
        self.path = path
        self.sources = sources
        self.notes = ImportNotes()
        self.templates: dict[str, Any] = {}
        self.judge = False
        self.taken: set[str] = set()
        self.default_transforms: list[str] = []
        self.budget = sources.limits.yaml_nodes
        self.engine = engine
        self.fallback: list[Note] = []
        #: defaultTest assertions that go with each test (they name per-test vars).
        self.per_case: list[Any] = []
        #: The prompts read from the config, imported or refused (promptfoo numbers them).
        self.prompt_count = 0
        #: Whether promptfoo was asked for (``engine=True``); ``engine`` is None when it is
        #: not here.
        self.engine_asked = True

    def yaml(self, path: Path, text: str) -> Any:
        """The YAML in ``text``; its nodes come out of the budget the config shares with
        its test files and the cases list-valued vars make."""
        document = read_yaml(text, str(path), limit=self.budget, loader=_loader())
        self.spend(
            document.nodes,
            str(path),
            "the YAML expands (each alias counted as the nodes it repeats)",
        )
        return document.data

    def spend(self, nodes: int, where: str, what: str) -> None:
        """Take ``nodes`` from the budget; past it, ``what`` is the one-line error."""
        self.budget -= nodes
        if self.budget < 0:
            limit = self.sources.limits.yaml_nodes
            raise source_error(
                Path(where),
                f"{what} to more than {limit:,} YAML nodes; {Limits.hint('yaml_nodes')}",
            )

    def read(self, ref: str, at: str) -> tuple[Path, str]:
        """``(path, text)`` of a ``file://`` reference made at ``at`` (a place in a file:
        ``config.yaml:7: tests[2].assert[0]``); see :meth:`Sources.reference`."""
        return self.sources.reference(self.path, ref, at)

    # -- prompts ------------------------------------------------------------------

    def prompts(self, raw: Any) -> list[dict[str, Any]]:
        reader = Prompts(self)
        variants = reader.variants(raw)
        self.prompt_count = len(reader.found)
        return variants

    # -- assertions ---------------------------------------------------------------

    def assertion(
        self, raw: Any, where: str, context: dict[str, Any], transforms: list[str]
    ) -> dict[str, Any] | None:
        """The check for one assertion: graded by promptfoo where it is here (see
        :mod:`~evalnb.interop._promptfoo_engine`), else by evalnb's translation, each
        such assertion listed in ``fallback``; None when it is refused (listed too)."""
        raw = self.resolved(raw, where)
        kind = raw["type"]
        if kind in COMPARED:
            return self.compared(raw, where, transforms)
        own = raw.get("transform")
        if own is not None and not isinstance(own, str):
            raise source_error(self.path, f"{where}: 'transform' must be text; got {own!r}")
        why = engine_reason(kind, raw, transforms) if self.engine else "promptfoo is not here"
        if self.engine is not None and why is None:
            return self.by_engine(raw, where, self.engine)
        spec = self.translated(raw, where, context, transforms)
        if spec is not None:
            self.fallback.append(Note(kind, where, f"graded by evalnb's translation: {why}"))
        return spec

    def compared(
        self, raw: dict[str, Any], where: str, transforms: list[str]
    ) -> dict[str, Any] | None:
        """select-best / max-score: one check over the variants' answers of each case and
        repeat where promptfoo is here; refused (saying what to do) where it is not."""
        kind = raw["type"]
        if self.engine is None:
            self.notes.refuse(kind, where, COMPARED[kind])
            return None
        spec = self.by_engine(raw, where, self.engine)
        how = COMPARED_BY[kind].format(engine=self.engine.name)
        self.notes.mapped[-1] = Note(kind, where, how)  # by_engine's note, for a group
        if kind == "max-score":
            self.fallback.append(Note(kind, where, how))
        if transforms:
            self.notes.approximate(
                kind, where, f"compares the answers before the output transform {transforms[-1]!r}"
            )
        return spec

    def by_engine(self, raw: dict[str, Any], where: str, engine: PromptfooEngine) -> dict[str, Any]:
        kind, value = raw["type"], _plain(raw.get("value"))
        if isinstance(value, str) and value.startswith("file://") and kind not in CODE:
            file, text = self.read(value, where)
            value = _plain(self.data(file, text)) if file.suffix in _TEST_FILES[1:] else text
        if raw.get("provider") is not None:
            how = "graded by the run's judge (or --judge), not the assertion's own provider"
            self.notes.approximate(f"{kind}.provider", where, how)
        if isinstance(raw.get("weight"), int | float) and raw["weight"] != 1:
            self.notes.approximate(
                f"{kind}.weight", where, "evalnb reports each check's rate; weights are not applied"
            )
        self.judge = self.judge or kind in MODEL_GRADED
        self.notes.map(kind, where, f"graded by {engine.name} (assertions.runAssertion)")
        return engine_spec(raw, value, engine)

    def resolved(self, raw: Any, where: str) -> dict[str, Any]:
        """The assertion with its ``$ref`` read; one without a ``type`` is an error."""
        if isinstance(raw, dict) and "$ref" in raw:
            ref = str(raw["$ref"])
            name = ref.removeprefix("#/assertionTemplates/")
            if name not in self.templates:
                raise source_error(self.path, f"{where}: '$ref' {ref!r} names no assertionTemplate")
            raw = self.templates[name]
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise source_error(self.path, f"{where}: an assertion needs a 'type'; got {raw!r}")
        return raw

    def translated(
        self, raw: dict[str, Any], where: str, context: dict[str, Any], transforms: list[str]
    ) -> dict[str, Any] | None:
        raw = self.resolved(raw, where)
        kind, value = raw["type"], _plain(raw.get("value"))
        if kind not in MAPPED and kind not in GRADERS:
            self.notes.refuse(kind, where, UNGRADED)
            return None
        own = raw.get("transform")
        if own is not None and not isinstance(own, str):
            raise source_error(self.path, f"{where}: 'transform' must be text; got {own!r}")
        transforms = [*transforms, *([own] if own else [])]
        function = None
        code_file: Path | None = None
        if isinstance(value, str) and value.startswith("file://"):
            if kind in CODE:
                ref, function = code_reference(value, kind)
                if Path(ref).suffix != CODE[kind][0]:
                    self.notes.refuse(
                        kind, where, f"a {kind} grader file must end in {CODE[kind][0]}"
                    )
                    return None
                code_file, value = self.read(ref, where)
                function = function or CODE[kind][1]
            else:
                file, value = self.read(value, where)
                if kind in ("is-json", "contains-json") and file.suffix in _TEST_FILES[1:]:
                    value = _plain(self.data(file, value))
        if isinstance(value, str) and "{{" in value and kind not in ("llm-rubric", *CODE):
            try:
                value = _fill(value, context)
            except ValueError as exc:
                self.notes.refuse(
                    kind, where, f"its value uses a template evalnb cannot fill ({exc})"
                )
                return None
        try:
            spec, how = self._mapped(kind, raw, value, function, transforms)
        except (TypeError, ValueError) as exc:
            raise source_error(self.path, f"{where}: {kind}: {exc}") from None
        if spec is None:
            self.notes.refuse(kind, where, how)
            return None
        if code_file is not None and spec.get("type") == "python_code":
            spec["file"] = code_file.name  # named when the run asks to trust it
        for key in sorted(set(raw) - _ASSERTION_KEYS, key=str):
            self.notes.refuse(
                f"{kind}.{key}", where, "this assertion field has no evalnb counterpart"
            )
        if isinstance(raw.get("weight"), int | float) and raw["weight"] != 1:
            self.notes.approximate(
                f"{kind}.weight", where, "evalnb reports each check's rate; weights are not applied"
            )
        if how:
            self.notes.approximate(kind, where, how)
        else:
            self.notes.map(kind, where, GRADERS.get(kind) or MAPPED[kind])
        return spec

    def _mapped(
        self,
        kind: str,
        raw: dict[str, Any],
        value: Any,
        function: str | None,
        transforms: list[str],
    ) -> tuple[dict[str, Any] | None, str]:
        """``(spec, how)``: the check and how it differs (empty text: it does not); a
        None spec is a refusal and ``how`` its reason."""
        if kind in GRADERS:
            spec, how = grader_spec(kind, raw, value, function, transforms)
            return spec, how or ""
        if (
            transforms
            and kind in ("is-json", "contains-json")
            and all(_JSON_PARSE.match(t) for t in transforms)
        ):
            how = "checks the answer text; the transform JSON.parse(output) only parses it"
            return self._spec(kind, value), how
        if transforms and kind == "llm-rubric":
            how = f"the judge reads the answer as given, not after {transforms[-1]!r}"
            return self._spec(kind, value), how
        if transforms:
            made = transformed_spec(kind, value, transforms)
            if made is None:
                reason = f"its transform {transforms[-1]!r} applies to javascript checks only"
                return None, reason
            return made
        if kind == "llm-rubric" and raw.get("threshold") is not None:
            return self._spec(kind, value), "judged pass/fail; promptfoo's score threshold unused"
        return self._spec(kind, value), ""

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
        self,
        raws: Any,
        where: str,
        context: dict[str, Any],
        taken: set[str],
        transforms: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        if raws is None:
            return []
        if not isinstance(raws, list):
            raise source_error(self.path, f"{where}: 'assert' must be a list; got {raws!r}")
        out = []
        for i, raw in enumerate(raws):
            line = getattr(raw, "line", 0)
            at = f"{self.path}:{line}" if line else where
            spec = self.assertion(raw, f"{at}: {where}.assert[{i}]", context, transforms or [])
            if spec is None:
                continue
            kind = _named(raw, self.templates)
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

    def data(self, file: Path, text: str) -> Any:
        """The data of a ``.json``, ``.jsonl`` (a list) or YAML file's ``text``."""
        if file.suffix == ".json":
            return parse_json(text, str(file), "JSON")
        if file.suffix == ".jsonl":
            lines = enumerate(text.splitlines(), start=1)
            return [parse_json(line, f"{file}:{n}", "JSON") for n, line in lines if line.strip()]
        return self.yaml(file, text)

    def _test_file(self, ref: str, where: str) -> list[tuple[str, Any]]:
        suffix = Path(ref).suffix
        if suffix not in _TEST_FILES:
            self.notes.refuse(
                f"tests {Path(ref).name}",
                f"{self.path}: {where}",
                "only CSV, JSON, JSONL and YAML test files are read (not generators)",
            )
            return []
        file, text = self.read(ref, f"{self.path}: {where}")
        if suffix == ".csv":
            return self._csv(file, text)
        data = self.data(file, text)
        if not isinstance(data, list):
            raise source_error(file, f"expected a list of tests; got {shown(data)}")
        return [(f"{file}:{getattr(t, 'line', i + 1)}", t) for i, t in enumerate(data)]

    def _csv(self, file: Path, text: str) -> list[tuple[str, Any]]:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        items = []
        for row in csv_rows(reader, file):
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
                    self.notes.refuse(column, where, "this CSV column has no evalnb counterpart")
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
        # promptfoo trims the value after the colon (``icontains: Paris``).
        out: dict[str, Any] = {"type": kind, "value": match["value"].strip()}
        if match["arg"]:
            try:
                out["threshold"] = float(match["arg"])
            except ValueError:
                raise source_error(
                    Path(where), f"{column}: {kind}({match['arg']}) needs a number in ()"
                ) from None
        return out

    def options(self, raw: Any, where: str) -> list[str]:
        """A test's ``options``: its ``transform`` (kept for the checks); the others listed."""
        if raw is None:
            return []
        if not isinstance(raw, dict):
            raise source_error(self.path, f"{where}: 'options' must be an object; got {raw!r}")
        for key in sorted(set(raw) - {"transform"}, key=str):
            self.notes.refuse(f"options.{key}", where, "evalnb has no counterpart; left out")
        transform = raw.get("transform")
        if transform is None:
            return []
        if not isinstance(transform, str) or transform.startswith("file://"):
            self.notes.refuse(
                "options.transform",
                where,
                f"only an inline JavaScript transform is applied; got {_plain(transform)!r}",
            )
            return []
        return [transform]

    def var_file(self, ref: str, where: str) -> Any:
        """A ``file://`` var: the file's text (trimmed), or for a glob (``*``, ``?``, ``[``) the
        text of each matching file, one case each (as promptfoo does)."""
        # promptfoo trims a var file's text.
        if not any(c in ref for c in "*?["):
            return self.read(ref, where)[1].strip()
        base = self.path.parent
        matches = globbed(base, ref, where)
        if not matches:
            raise source_error(self.path, f"{where}: the glob {ref!r} matches no file")
        texts = [self.read(f"file://{p.relative_to(base)}", where)[1].strip() for p in matches]
        self.notes.map("vars glob", where, f"{len(texts)} files, one case each")
        return texts

    def case(self, n: int, where: str, test: Any, defaults_vars: dict[str, Any]) -> list[Any]:
        if not isinstance(test, dict):
            raise source_error(self.path, f"{where}: a test must be an object; got {test!r}")
        raw_vars = test.get("vars") or {}
        if not isinstance(raw_vars, dict):
            raise source_error(self.path, f"{where}: 'vars' must be an object; got {raw_vars!r}")
        if not isinstance(test.get("metadata") or {}, dict):
            raise source_error(
                self.path, f"{where}: 'metadata' must be an object; got {shown(test['metadata'])}"
            )
        known = {"vars", "assert", "description", "metadata", "options"}
        for key in sorted(set(test) - known, key=str):
            self.notes.refuse(f"test option {key!r}", where, "evalnb has no counterpart; left out")
        transforms = self.options(test.get("options"), where) or self.default_transforms
        values = {}
        # promptfoo merges defaultTest's vars first, then makes a case per list value.
        listed = {
            k: v for k, v in defaults_vars.items() if isinstance(v, list) and k not in raw_vars
        }
        for key, value in {**listed, **raw_vars}.items():
            if isinstance(value, str) and value.startswith("file://"):
                value = self.var_file(value, f"{where}: vars.{key}")
            values[key] = value if isinstance(value, list) else [value]
        keys = list(values)
        empty = [key for key, value in values.items() if not value]
        if empty:
            self.notes.refuse(
                f"test {n}", where, f"vars.{empty[0]} is an empty list: it makes no case"
            )
            return []
        count = math.prod(len(v) for v in values.values())
        if count > 1:
            # Each case a list-valued var makes repeats the test: it counts as its nodes.
            what = f"its list-valued vars make {count:,} cases, which expand the suite"
            self.spend((count - 1) * _count(test), where, what)
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
            before = self.notes.mark()
            own = test.get("assert")
            raws = [*(own or []), *self.per_case] if isinstance(own, list) or not own else own
            checks = self.checks(
                raws or None, f"tests[{n - 1}]", context, set(self.taken), transforms
            )
            if j > 1:
                # An expanded test's assertions are listed once, not once per case.
                self.notes.undo(before)
            if checks:
                case["checks"] = checks
            cases.append(case)
        return cases


#: A prompt that begins with a template expression may render to a message list.
_OPENS_WITH_TEMPLATE = re.compile(r"^\s*\{[{%]")


def _transcripts(
    importer: _Importer,
    variants: list[dict[str, Any]],
    cases: list[dict[str, Any]],
    default_vars: dict[str, Any],
) -> None:
    """Mark each prompt that renders to a chat transcript (a JSON message list, as a
    ``'{{ conversation }}'`` prompt of a ``file://`` JSON var does) for some test as a chat
    template: promptfoo sends such a rendering as the list of messages, and so does evalnb."""
    for variant in variants:
        template = variant.get("template")
        if variant.get("chat") or "system" in variant or not isinstance(template, str):
            continue
        if not _OPENS_WITH_TEMPLATE.match(template):
            continue
        for case in cases:
            context = {**default_vars, **case.get("vars", {})}
            try:
                text = render_template(template, {**context, "vars": context})
            except ValueError:
                continue  # the run reports a template it cannot fill
            if chat_prompt(text) is not None:
                variant["chat"] = True
                importer.notes.map(
                    f"prompt {variant['name']}",
                    f"{importer.path}: {case['id']}",
                    "renders to a list of messages: a chat template, sent as that list as "
                    "promptfoo sends it",
                )
                break


def _names_test_vars(raw: Any, default_vars: dict[str, Any]) -> bool:
    """Whether a defaultTest assertion's text value names a var defaultTest lacks."""
    value = raw.get("value") if isinstance(raw, dict) else None
    if not isinstance(value, str) or raw.get("type") in ("llm-rubric", *CODE):
        return False
    return any(name not in default_vars for name in _PLAIN_VAR.findall(value))


def _default_test(importer: _Importer, raw: Any) -> dict[str, Any]:
    """``defaultTest``: an object, or a ``file://`` reference to a YAML or JSON one."""
    where = importer.path
    if isinstance(raw, str) and raw.startswith("file://"):
        if Path(raw).suffix not in _TEST_FILES[1:]:
            raise source_error(where, f"'defaultTest' {raw!r} must be a YAML or JSON file")
        where, text = importer.read(raw, f"{where}: defaultTest")
        raw = importer.data(where, text)
    if not isinstance(raw, dict):
        raise source_error(
            where,
            "'defaultTest' must be an object (vars, assert, ...) or a file:// reference; "
            f"got {shown(raw)}",
        )
    if not isinstance(raw.get("vars") or {}, dict):
        raise source_error(where, f"'defaultTest.vars' must be an object; got {shown(raw['vars'])}")
    return raw


def import_promptfoo(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    repeats: int = 5,
    allow_outside: Iterable[str | os.PathLike[str]] = (),
    limits: Limits | None = None,
    engine: bool = True,
) -> ImportResult:
    """Import a ``promptfooconfig.yaml`` into ``DEST/cases.yaml`` + ``DEST/experiment.toml``;
    the result lists what was imported and each assertion evalnb cannot express.

    ``file://`` references must resolve (symbolic links followed) inside the config's
    folder or inside a path of ``allow_outside``; every file is read within ``limits``
    (default :class:`Limits`: regular files of at most 256 MiB, 1 GiB in all, and at most
    1,000,000 YAML nodes once aliases and list-valued vars are expanded). Every file read
    is listed in ``imported.json``.

    With ``engine`` (the default) and promptfoo installed (``make promptfoo``, the user's own
    ``promptfoo``, or ``EVALNB_PROMPTFOO``), promptfoo grades the assertions; the others, and
    all of them without promptfoo, are graded by evalnb's translation and listed as such
    (``fallback`` in the result and in ``imported.json``).
    """
    path = Path(source)
    sources = Sources(limits, root=path.parent, allow_outside=allow_outside)
    with reading(path):
        importer = _Importer(path, sources, find_promptfoo() if engine else None)
        importer.engine_asked = engine
        text = sources.text(path, "the promptfoo config")
        lfs_pointer(path, text)
        config = importer.yaml(path, text)
        return _import(importer, config, dest, repeats)


def _import(
    importer: _Importer, config: Any, dest: str | os.PathLike[str], repeats: int
) -> ImportResult:
    path = importer.path
    if not isinstance(config, dict) or ("prompts" not in config and "tests" not in config):
        raise source_error(
            path, "not a promptfoo config: expected a YAML object with 'prompts' and 'tests'"
        )
    templates = config.get("assertionTemplates") or {}
    if not isinstance(templates, dict):
        raise source_error(path, f"'assertionTemplates' must be an object; got {shown(templates)}")
    importer.templates = templates
    prompts = importer.prompts(config.get("prompts"))
    variants = provider_variants(importer, prompts, config.get("providers"))
    derived = config.get("derivedMetrics")
    for i, metric in enumerate(derived if isinstance(derived, list) else [derived] * bool(derived)):
        name = metric.get("name") if isinstance(metric, dict) else None
        importer.notes.refuse(
            f"derivedMetrics {name or i}",
            f"{path}:{getattr(metric, 'line', '?')}: derivedMetrics[{i}]",
            "a formula over named scores is not a check: evalnb keeps each named check's "
            "rate; compute the formula from rates() by check",
        )
    raw_default = config.get("defaultTest")
    default: dict[str, Any] = {}
    if raw_default is not None:
        default = _default_test(importer, raw_default)
    defaults: dict[str, Any] = {}
    default_vars = _plain(default.get("vars") or {})
    if default_vars:
        defaults["vars"] = default_vars
    taken: set[str] = set()
    if default:
        where = f"{path}:{getattr(default, 'line', '?')}"
        for key in sorted(set(default) - {"vars", "assert", "options"}, key=str):
            importer.notes.refuse(
                f"defaultTest.{key}", where, "evalnb has no counterpart; left out"
            )
        importer.default_transforms = importer.options(default.get("options"), where)
        shared = default.get("assert")
        if importer.engine is None and isinstance(shared, list):
            # evalnb's translation fills values when it imports: one that names a per-test
            # var goes with each test, as promptfoo renders it for each.
            importer.per_case = [a for a in shared if _names_test_vars(a, default_vars)]
            shared = [a for a in shared if not _names_test_vars(a, default_vars)]
        checks = importer.checks(
            shared, "defaultTest", default_vars, taken, importer.default_transforms
        )
        if checks:
            defaults["checks"] = checks
    importer.taken = taken
    cases = []
    items = importer.test_items(config.get("tests"))
    for n, (where, test) in enumerate(items, start=1):
        cases += importer.case(n, where, test, default_vars)
    _transcripts(importer, variants, cases, default_vars)
    tests = [test for _, test in items]
    renamed = keep_apart(cases, defaults, variants)
    if renamed:
        importer.notes.map("vars", str(path), report(renamed, "var"))
    expansion = _expanded(importer, config, default, tests, variants, cases, default_vars, renamed)
    _alone(importer, cases, defaults, variants)
    result = importer.notes.result("promptfoo", path, importer.sources.files)
    result.fallback = importer.fallback
    result.engine = importer.engine.name if importer.engine else None
    result.expansion = expansion
    return write_suite(
        result,
        dest,
        cases=cases,
        defaults=defaults or None,
        variants=variants,
        repeats=repeats,
        judge=importer.judge,
        notes=_notes(cases, defaults),
    )


def _expanded(
    importer: _Importer,
    config: dict[str, Any],
    default: dict[str, Any],
    tests: list[Any],
    variants: list[dict[str, Any]],
    cases: list[dict[str, Any]],
    default_vars: dict[str, Any],
    renamed: dict[str, str],
) -> dict[str, Any]:
    """Who renders the prompts (see :mod:`~evalnb.interop._promptfoo_expand`): promptfoo's
    expansion where it can run here without the suite's own code, each variant carrying
    promptfoo's rendering of the cases where evalnb's differs, and a prompt evalnb's
    templates cannot compile kept as promptfoo renders it for every case; else evalnb's
    translation. ``variants`` is changed in place: the marks taken off, and a prompt that
    does not compile left out unless promptfoo renders it."""
    every = list(variants)
    variants[:] = [v for v in every if "_uncompiled" not in v]
    why = _unexpandable(importer, config, default, tests, every)
    if why is not None:
        for variant in every:
            variant.pop("_prompt", None)
            variant.pop("_text", None)
        return unexpanded(why)
    assert importer.engine is not None
    try:
        expansion = expand(importer.engine, importer.path)
    except ExpansionError as exc:
        expansion = None
        record = unexpanded(str(exc))
    refusals = {id(v): v.pop("_uncompiled", None) for v in every}
    if expansion is not None:
        for variant in every:
            if refusals[id(variant)] is not None:
                variant["_uncompiled"] = refusals[id(variant)].reason
        count = importer.prompt_count
        folder = importer.path.parent
        record = agreement(expansion, every, cases, default_vars, count, folder, renamed)
    variants[:] = []
    for variant in every:
        variant.pop("_prompt", None)
        variant.pop("_uncompiled", None)
        variant.pop("_text", None)
        refusal = refusals[id(variant)]
        if refusal is None:
            variants.append(variant)
        elif len(variant.get("rendered") or {}) == len(cases):
            # Every case rendered by promptfoo: the prompt is imported as promptfoo sends it.
            variants.append(variant)
            if refusal in importer.notes.unsupported:
                importer.notes.unsupported.remove(refusal)
            importer.notes.map(
                f"prompt {variant['name']}",
                refusal.where,
                "evalnb's templates cannot compile it; each case's messages as promptfoo "
                "renders them",
            )
    return record


def _unexpandable(
    importer: _Importer,
    config: dict[str, Any],
    default: dict[str, Any],
    tests: list[Any],
    variants: list[dict[str, Any]],
) -> str | None:
    """Why the config is not expanded by promptfoo (None: it is)."""
    engine = importer.engine
    if engine is None and not importer.engine_asked:
        return "the import was asked for evalnb's translation (engine=False)"
    if engine is None:
        return "promptfoo is not here (`make promptfoo` or `npm install promptfoo` installs it)"
    if any("_prompt" not in variant for variant in variants):
        return "the config has no prompts"
    code = suite_code(config, tests, default) or _template_hazard(variants, tests, default)
    if code is not None:
        return (
            f"not expanded by {engine.name}, as {code} and expanding would run it at import "
            "(a suite's code runs only at run or scoring, after --trust-code)"
        )
    return None


def _specs(cases: list[dict[str, Any]], defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """Every check spec the written suite holds: each case's, then the defaults'."""
    specs: list[dict[str, Any]] = [c for case in cases for c in case.get("checks", [])]
    return specs + list(defaults.get("checks", []))


def _alone(
    importer: _Importer,
    cases: list[dict[str, Any]],
    defaults: dict[str, Any],
    variants: list[dict[str, Any]],
) -> None:
    """A check that compares the variants' answers, in a suite of one variant, can choose
    nothing: each is listed as approximated, saying its outcomes stay unscored."""
    if len(variants) > 1:
        return
    kinds = sorted(
        {
            str(c["assertion"]["type"])
            for c in _specs(cases, defaults)
            if c.get("type") == "promptfoo" and c["assertion"].get("type") in COMPARED
        }
    )
    for kind in kinds:
        importer.notes.approximate(
            kind,
            str(importer.path),
            f"compares the answers of two or more variants, and this config makes "
            f"{len(variants)}: every outcome stays unscored (add a prompt or a provider)",
        )


def _template_hazard(
    variants: list[dict[str, Any]], tests: list[Any], default: dict[str, Any]
) -> str | None:
    """Why promptfoo's Nunjucks would run more than a rendering of data in a prompt or a var
    (see :func:`~evalnb.checks.template_hazard`), or None."""
    texts = [(f"the prompt {v['name']!r}", v.get("_text", v)) for v in variants]
    for n, test in enumerate([default, *tests]):
        if isinstance(test, dict) and isinstance(test.get("vars"), dict):
            where = "defaultTest" if n == 0 else f"tests[{n - 1}]"
            texts += [(f"{where}.vars.{k}", value) for k, value in test["vars"].items()]
    for where, value in texts:
        if isinstance(value, dict):
            value = list(value.values())
        for text in value if isinstance(value, list) else [value]:
            hazard = template_hazard(text) if isinstance(text, str) else None
            if hazard is not None:
                return f"{where} {hazard}"
    return None


def _notes(cases: list[dict[str, Any]], defaults: dict[str, Any]) -> list[str]:
    """What the experiment file says a run needs beyond the target."""
    specs = _specs(cases, defaults)
    kinds = {c.get("type") for c in specs}
    notes = []
    if "similar" in kinds:
        notes.append(
            "similar checks embed through /v1/embeddings: set EVALNB_EMBEDDINGS_URL to the "
            "server's base URL"
        )
    if "python_code" in kinds:
        notes.append(
            "python_code checks hold this suite's Python: a run or a scoring runs it only "
            "with --trust-code, in a bounded process of its own"
        )
    if any(c.get("type") == "promptfoo" and promptfoo_code(c.get("assertion")) for c in specs):
        notes.append(
            "some promptfoo checks hold this suite's JavaScript (or a transform): promptfoo "
            "runs it only with --trust-code, in its bounded grading worker"
        )
    if "javascript" in kinds:
        notes.append("javascript checks run in Node.js: `node` must be on PATH")
    if "cost" in kinds:
        notes.append("cost checks price token usage: add 'prices' to each cost check")
    return notes
