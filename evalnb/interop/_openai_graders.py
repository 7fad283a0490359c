"""OpenAI / Azure AI Foundry Evals graders (``testing_criteria``) over ``{"item": {...}}`` data.

``import_openai_graders(DATA.jsonl, DEST, criteria=CRITERIA.json)``: each JSONL line
``{"item": {...}}`` is a case whose ``vars`` are the item (its ``input``, when text, is the
prompt: the variant's template is ``{{ input }}``); each grader of ``testing_criteria`` (the
file holds the list, or an eval object with the list under ``testing_criteria``) is a check on
every case. Templates: ``{{item.x}}`` is the case's ``x``, ``{{sample.output_text}}`` the
answer.

- ``string_check`` (``eq``, ``ne``, ``like``, ``ilike``): a ``regex`` (whole answer, or its
  negation) or a ``contains`` check, its reference rendered with each item;
- ``score_model`` / ``label_model``: a ``judge`` check with the grader's messages as its rubric
  (approximated: evalnb's judge answers PASS/FAIL, not a score in ``range`` or a label);
- ``python`` (``grade(sample, item)``): a ``python_code`` check holding the source, passing at
  ``pass_threshold``; it is code that comes with the suite (the experiment file says so);
- ``text_similarity`` and ``multi``: refused, each saying what to do.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import regex

from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._suite import (
    ImportResult,
    Note,
    Unsupported,
    parse_json,
    reading,
    source_error,
    write_suite,
)

__all__ = ["import_openai_graders"]

_ITEM = re.compile(r"\{\{\s*item\.([A-Za-z_][\w.]*)\s*\}\}")
_SAMPLE = re.compile(r"^\s*\{\{\s*sample\.output_text\s*\}\}\s*$")
_OPERATIONS = ("eq", "ne", "like", "ilike")


def _render(template: str, item: dict[str, Any], where: str) -> str:
    """``{{item.x}}`` filled from ``item`` (a dotted path reads nested fields)."""

    def value(match: re.Match[str]) -> str:
        found: Any = item
        for part in match[1].split("."):
            if not isinstance(found, dict) or part not in found:
                raise ValueError(f"{where}: the item has no field {match[1]!r}")
            found = found[part]
        return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)

    return _ITEM.sub(value, template)


def _string_check(grader: dict[str, Any], item: dict[str, Any], where: str) -> dict[str, Any]:
    operation = grader.get("operation")
    if operation not in _OPERATIONS:
        raise ValueError(f"{where}: 'operation' must be one of {', '.join(_OPERATIONS)}")
    if not _SAMPLE.match(str(grader.get("input", ""))):
        raise ValueError(f"{where}: 'input' must be {{{{sample.output_text}}}} (the answer)")
    reference = _render(str(grader.get("reference", "")), item, where)
    if operation in ("like", "ilike"):
        return {"type": "contains", "text": reference, "ignore_case": operation == "ilike"}
    exact = f"\\A{regex.escape(reference)}\\Z"
    return {"type": "regex", "pattern": exact if operation == "eq" else f"\\A(?!{exact})"}


def _judge(grader: dict[str, Any], where: str) -> dict[str, Any]:
    messages = grader.get("input")
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{where}: 'input' must be a list of messages")
    texts = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        text = content.get("text") if isinstance(content, dict) else content
        if not isinstance(text, str):
            raise ValueError(f"{where}: each message of 'input' needs text 'content'")
        texts.append(text)
    rubric = "\n\n".join(texts)
    rubric = _ITEM.sub(lambda m: "{{ vars." + m[1] + " }}", rubric)
    rubric = re.sub(r"\{\{\s*sample\.output_text\s*\}\}", "the answer", rubric)
    return {"type": "judge", "rubric": rubric}


_PYTHON_CALL = (
    "\n\ndef __evalnb_grade(output, context):\n"
    "    return grade({'output_text': output}, context['vars'])\n"
)


def _grader(
    grader: Any, index: int, item: dict[str, Any], where: str, result: ImportResult
) -> dict[str, Any] | None:
    """The check for one grader on one item; None (listed once) when it is refused."""
    at = f"{where}: testing_criteria[{index}]"
    if not isinstance(grader, dict) or not isinstance(grader.get("type"), str):
        raise ValueError(f"{at}: a grader needs a 'type'")
    kind, name = grader["type"], str(grader.get("name") or grader["type"])
    spec: dict[str, Any] | None = None
    if kind == "string_check":
        spec = _string_check(grader, item, at)
    elif kind in ("score_model", "label_model"):
        spec = _judge(grader, at)
    elif kind == "python":
        source = grader.get("source")
        if not isinstance(source, str) or "def grade" not in source:
            raise ValueError(f"{at}: 'source' must define grade(sample, item)")
        spec = {"type": "python_code", "code": source + _PYTHON_CALL, "function": "__evalnb_grade"}
        threshold = grader.get("pass_threshold")
        if isinstance(threshold, int | float):
            spec["threshold"] = float(threshold)
    return None if spec is None else {"name": name, **spec}


_REFUSED = {
    "text_similarity": "its metrics (fuzzy_match, bleu, rouge, ...) are not graded by evalnb "
    "yet: grade the answers with a python grader that computes the metric",
    "multi": "a formula over the other graders' scores: compute it from rates() by check",
}
_HOW = {
    "score_model": "a judge with the grader's messages as rubric: PASS/FAIL, not a score in "
    "'range' against 'pass_threshold'",
    "label_model": "a judge with the grader's messages as rubric: PASS/FAIL, not one of "
    "'labels' checked against 'passing_labels'",
    "python": "a python_code check calling grade({'output_text': answer}, item); the suite's "
    "own code: run it only if you trust it",
}


def _criteria(path: Path, sources: Sources) -> list[Any]:
    data = parse_json(sources.text(path, "the testing criteria"), str(path), "JSON")
    graders = data.get("testing_criteria") if isinstance(data, dict) else data
    if not isinstance(graders, list) or not graders:
        raise source_error(path, "expected a list of graders, or an object with 'testing_criteria'")
    return graders


def _items(path: Path, sources: Sources) -> list[tuple[str, dict[str, Any]]]:
    items = []
    for n, line in enumerate(sources.text(path, "the data").splitlines(), start=1):
        if not line.strip():
            continue
        record = parse_json(line, f"{path}:{n}", "JSON")
        if not isinstance(record, dict) or not isinstance(record.get("item"), dict):
            raise source_error(
                Path(f"{path}:{n}"),
                'expected {"item": {...}} (OpenAI Evals data); wrap each record in "item"',
            )
        items.append((f"{path}:{n}", record["item"]))
    return items


def import_openai_graders(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    criteria: str | os.PathLike[str],
    repeats: int = 5,
    limits: Limits | None = None,
) -> ImportResult:
    """Import OpenAI / Azure Evals data (``{"item": ...}`` JSONL) and its ``testing_criteria``
    into ``DEST/cases.yaml`` + ``DEST/experiment.toml`` (see the module)."""
    path, criteria_path = Path(source), Path(criteria)
    sources = Sources(limits)
    with reading(path):
        graders = _criteria(criteria_path, sources)
        items = _items(path, sources)
    result = ImportResult("openai-graders", path)
    for i, grader in enumerate(graders):
        kind = grader.get("type") if isinstance(grader, dict) else None
        where = f"{criteria_path}: testing_criteria[{i}]"
        if kind in _REFUSED:
            result.unsupported.append(Unsupported(str(kind), where, _REFUSED[str(kind)]))
        elif kind in _HOW:
            result.approximated.append(Note(str(kind), where, _HOW[str(kind)]))
        elif kind == "string_check":
            result.mapped.append(Note(kind, where, f"{grader.get('operation')}: regex or contains"))
        else:
            result.unsupported.append(Unsupported(str(kind), where, "not an Evals grader type"))
    cases = []
    for n, (where, item) in enumerate(items, start=1):
        checks = []
        for i, grader in enumerate(graders):
            try:
                spec = _grader(grader, i, item, where, result)
            except ValueError as exc:
                raise source_error(criteria_path, str(exc)) from None
            if spec is not None:
                checks.append(spec)
        case: dict[str, Any] = {"id": str(item.get("id") or f"item-{n}"), "vars": item}
        case["metadata"] = {"source": where}
        if checks:
            case["checks"] = checks
        cases.append(case)
    if not all(isinstance(item.get("input"), str) for _, item in items):
        raise source_error(path, "each item needs a text 'input' (the prompt sent to the model)")
    result.files = sources.files
    kinds = {g.get("type") for g in graders if isinstance(g, dict)}
    notes = ["python_code checks run this suite's Python: run it only if you trust its source"]
    return write_suite(
        result,
        dest,
        cases=cases,
        variants=[{"name": "baseline", "template": "{{ input }}"}],
        repeats=repeats,
        judge=bool(kinds & {"score_model", "label_model"}),
        notes=notes if "python" in kinds else None,
    )
