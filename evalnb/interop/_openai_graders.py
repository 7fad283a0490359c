"""OpenAI / Azure AI Foundry Evals graders (``testing_criteria``) over ``{"item": {...}}`` data.

``import_openai_graders(DATA.jsonl, DEST, criteria=CRITERIA.json)``: each JSONL line
``{"item": {...}}`` is a case whose ``vars`` are the item (its ``input``, when text, is the
prompt: the variant's template is ``{{ input }}``); each grader of ``testing_criteria`` (the
file holds the list, or an eval object with the list under ``testing_criteria``) is a check on
every case. Templates: ``{{item.x}}`` is the case's ``x``, ``{{sample.output_text}}`` the
answer.

- ``string_check`` (``eq``, ``ne``, ``like``, ``ilike``) on the answer: a ``regex`` (whole
  answer, or its negation) or a ``contains`` check, its reference rendered with each item;
  one on other inputs (``{{sample.output_json.x}}``, a tool call): an ``openai_grader`` check;
- ``text_similarity``: an ``openai_grader`` check computing the metric with the library that
  defines it (rapidfuzz, sacrebleu, NLTK, rouge-score: :mod:`evalnb.checks._text_similarity`),
  passing at ``pass_threshold``; ``cosine`` a ``similar`` check on the run's embeddings
  server (approximated: that server's embedding model, not ``text-embedding-3-large``); a
  metric whose library or data is missing here is refused, saying how to install it;
- ``multi``: an ``openai_grader`` check scoring its string and similarity graders, then its
  ``calculate_output`` formula (a small evaluator, never ``eval``): a derived score;
- ``score_model`` / ``label_model``: a ``judge`` check with the grader's messages as its rubric
  (approximated: evalnb's judge answers PASS/FAIL, not a score in ``range`` or a label);
- ``python`` (``grade(sample, item)``): a ``python_code`` check holding the source, passing at
  ``pass_threshold``; it is code that comes with the suite (the experiment file says so).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import regex

from evalnb.checks import openai_grader_problem as grader_problem
from evalnb.checks import similarity_engine as metric_engine
from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._reserved import renamed_keys, renames, report
from evalnb.interop._shapes import shown
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
    given = grader.get("reference")
    if not isinstance(given, str):
        raise ValueError(
            f"{where}: 'reference' must be text (the expected string, or an {{{{item.x}}}} "
            f"template); got {shown(given)}"
        )
    reference = _render(given, item, where)
    if operation in ("like", "ilike") and not reference:
        return {"type": "regex", "pattern": "\\A"}  # every answer holds the empty text
    if operation in ("like", "ilike"):
        return {"type": "contains", "text": reference, "ignore_case": operation == "ilike"}
    exact = f"\\A{regex.escape(reference)}\\Z"
    return {"type": "regex", "pattern": exact if operation == "eq" else f"\\A(?!{exact})"}


def _item_renamed(value: Any, renamed: dict[str, str]) -> Any:
    """``value`` (a grader, its texts) with ``{{ item.old... }}`` naming the new field."""
    if not renamed:
        return value
    if isinstance(value, str):
        names = "|".join(re.escape(name) for name in renamed)
        field = re.compile(rf"(\{{\{{\s*item\.)({names})(?![\w-])")
        return field.sub(lambda m: m[1] + renamed[m[2]], value)
    if isinstance(value, dict):
        return {key: _item_renamed(item, renamed) for key, item in value.items()}
    if isinstance(value, list):
        return [_item_renamed(item, renamed) for item in value]
    return value


def _judge(grader: dict[str, Any], where: str, renamed: dict[str, str]) -> dict[str, Any]:
    messages = grader.get("input")
    if not isinstance(messages, list) or not messages:
        raise ValueError(
            f"{where}: 'input' must be a list of messages ({{role, content}}); "
            f"got {shown(messages)}"
        )
    texts = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        text = content.get("text") if isinstance(content, dict) else content
        if not isinstance(text, str):
            raise ValueError(
                f"{where}: each message of 'input' needs text 'content'; got {shown(message)}"
            )
        texts.append(text)
    rubric = "\n\n".join(texts)

    def field(match: re.Match[str]) -> str:
        head, dot, rest = match[1].partition(".")
        return "{{ vars." + renamed.get(head, head) + dot + rest + " }}"

    rubric = _ITEM.sub(field, rubric)
    rubric = re.sub(r"\{\{\s*sample\.output_text\s*\}\}", "the answer", rubric)
    return {"type": "judge", "rubric": rubric}


_PYTHON_CALL = (
    "\n\ndef __evalnb_grade(output, context):\n"
    "    item = {{{renamed}.get(k, k): v for k, v in context['vars'].items()}}\n"
    "    return grade({{'output_text': output}}, item)\n"
)


def _plain_answer(grader: dict[str, Any]) -> bool:
    """Whether a string check compares the answer itself with a reference of the item."""
    reference = str(grader.get("reference", ""))
    return bool(_SAMPLE.match(str(grader.get("input", "")))) and "sample." not in reference


def _grader(
    grader: dict[str, Any], index: int, item: dict[str, Any], where: str, renamed: dict[str, str]
) -> dict[str, Any]:
    """The check for one grader (one :func:`_refusal` lets in) on one item; ``renamed``:
    the item fields stored under a new name (:mod:`evalnb.interop._reserved`)."""
    at = f"{where}: testing_criteria[{index}]"
    kind, name = grader["type"], str(grader.get("name") or grader["type"])
    spec: dict[str, Any]
    cosine = kind == "text_similarity" and grader.get("evaluation_metric") == "cosine"
    if kind == "string_check" and _plain_answer(grader):
        spec = _string_check(grader, item, at)
    elif kind in ("string_check", "text_similarity", "multi") and not cosine:
        spec = {"type": "openai_grader", "grader": _item_renamed(grader, renamed)}
    elif cosine:
        spec = {"type": "similar", "value": _render(str(grader.get("reference", "")), item, at)}
        if isinstance(grader.get("pass_threshold"), int | float):
            spec["threshold"] = min(1.0, max(0.0, float(grader["pass_threshold"])))
    elif kind in ("score_model", "label_model"):
        spec = _judge(grader, at, renamed)
    else:
        source = grader.get("source")
        if not isinstance(source, str) or "def grade" not in source:
            raise ValueError(
                f"{at}: 'source' must be Python text that defines grade(sample, item); "
                f"got {shown(source)}"
            )
        back = {new: old for old, new in renamed.items()}
        call = _PYTHON_CALL.format(renamed=repr(back))
        spec = {"type": "python_code", "code": source + call, "function": "__evalnb_grade"}
        threshold = grader.get("pass_threshold")
        if isinstance(threshold, int | float):
            spec["threshold"] = float(threshold)
    return {"name": name, **spec}


_HOW = {
    "score_model": "a judge with the grader's messages as rubric: PASS/FAIL, not a score in "
    "'range' against 'pass_threshold'",
    "label_model": "a judge with the grader's messages as rubric: PASS/FAIL, not one of "
    "'labels' checked against 'passing_labels'",
    "python": "a python_code check calling grade({'output_text': answer}, item); the suite's "
    "own code: run it only if you trust it",
    "cosine": "a similar check: the cosine of embeddings from the run's OpenAI-compatible "
    "server (EVALNB_EMBEDDINGS_URL), that server's model, not text-embedding-3-large",
}


def _refusal(grader: dict[str, Any]) -> str | None:
    """Why ``grader`` is not imported (one line saying what to do), or None."""
    kind = grader["type"]
    if kind in ("score_model", "label_model", "python"):
        return None
    if kind == "text_similarity" and grader.get("evaluation_metric") == "cosine":
        if not _SAMPLE.match(str(grader.get("input", ""))):
            return "cosine is graded on the answer: set 'input' to {{sample.output_text}}"
        return None
    if kind not in ("string_check", "text_similarity", "multi"):
        return (
            f"{kind!r} is not an Evals grader type (types: string_check, text_similarity, "
            "score_model, label_model, python, multi)"
        )
    return grader_problem(grader)


def _note(grader: dict[str, Any], where: str, result: ImportResult) -> None:
    """List how ``grader`` is imported: mapped, or approximated saying what differs."""
    kind = str(grader["type"])
    if kind == "text_similarity":
        metric = str(grader.get("evaluation_metric"))
        if metric == "cosine":
            result.approximated.append(Note(kind, where, _HOW["cosine"]))
            return
        how = f"{metric} by {metric_engine(metric)}, passing at {grader.get('pass_threshold')}"
        result.mapped.append(Note(kind, where, how))
    elif kind == "multi":
        formula = grader.get("calculate_output")
        if isinstance(grader.get("pass_threshold"), int | float):
            how = f"a derived score, {formula}, passing at {grader['pass_threshold']}"
            result.mapped.append(Note(kind, where, how))
        else:
            how = (
                f"a derived score, {formula}; the Evals API gives a multi grader no pass mark, "
                "so it passes at 0.5 (evalnb's default for scores)"
            )
            result.approximated.append(Note(kind, where, how))
    elif kind == "string_check":
        how = "regex or contains" if _plain_answer(grader) else "an openai_grader check"
        result.mapped.append(Note(kind, where, f"{grader.get('operation')}: {how}"))
    else:
        result.approximated.append(Note(kind, where, _HOW[kind]))


def _numbers(grader: dict[str, Any], path: Path, where: str) -> None:
    """A grader's ``pass_threshold`` (a ``multi`` grader's graders' too) is a number."""
    threshold = grader.get("pass_threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float)
    ):
        raise source_error(
            path, f"{where}: 'pass_threshold' must be a number; got {shown(threshold)}"
        )
    graders = grader.get("graders")
    for name, sub in graders.items() if isinstance(graders, dict) else ():
        if isinstance(sub, dict):
            _numbers(sub, path, f"{where}.graders.{name}")


def _found(data: Any) -> str:
    """What a criteria file held instead of graders, shortly."""
    if isinstance(data, dict) and "testing_criteria" not in data:
        return "an object with " + (", ".join(repr(k) for k in list(data)[:6]) or "no field")
    return shown(data.get("testing_criteria") if isinstance(data, dict) else data)


def _criteria(path: Path, sources: Sources) -> list[Any]:
    data = parse_json(sources.text(path, "the testing criteria"), str(path), "JSON")
    graders = data.get("testing_criteria") if isinstance(data, dict) else data
    if not isinstance(graders, list) or not graders:
        raise source_error(
            path,
            "expected a list of graders, or an object with 'testing_criteria' (a list); "
            f"got {_found(data)}",
        )
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
                'expected {"item": {...}} (OpenAI Evals data); got '
                f'{shown(record)}: wrap each record in "item"',
            )
        items.append((f"{path}:{n}", record["item"]))
    return items


#: The item fields taken as the prompt when no item has a text ``input``, in this order.
PROMPT_FIELDS = ("input", "prompt", "question")


def _prompt_field(path: Path, items: list[tuple[str, dict[str, Any]]]) -> str:
    """The item field that is the prompt sent to the model: ``input``, else the first of
    :data:`PROMPT_FIELDS` that every item holds as text; else one line saying what to do."""
    for field in PROMPT_FIELDS:
        if all(isinstance(item.get(field), str) for _, item in items):
            return field
    where, item = next((w, i) for w, i in items if not isinstance(i.get("input"), str))
    found = ", ".join(repr(k) for k in list(item)[:8]) or "no field"
    raise source_error(
        Path(where),
        f"each item needs a text 'input' (the prompt sent to the model); got {found}: "
        "name the prompt's field 'input' in every item",
    )


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
    kept = []
    for i, grader in enumerate(graders):
        where = f"{criteria_path}: testing_criteria[{i}]"
        if not isinstance(grader, dict) or not isinstance(grader.get("type"), str):
            raise source_error(
                criteria_path,
                f"testing_criteria[{i}]: a grader must be an object with a text 'type'; "
                f"got {shown(grader)}",
            )
        _numbers(grader, criteria_path, f"testing_criteria[{i}]")
        reason = _refusal(grader)
        if reason is not None:
            name = f"{grader['type']} {grader.get('name') or ''}".strip()
            result.unsupported.append(Unsupported(name, where, reason))
            continue
        _note(grader, where, result)
        kept.append((i, grader))
    field = _prompt_field(path, items) if items else "input"
    renamed = renames({key for _, item in items for key in item}, "item")
    if renamed:
        result.mapped.append(Note("item fields", str(path), report(renamed, "item field")))
    if field != "input":
        how = f"no item has a text 'input': the prompt sent is each item's {field!r}"
        result.approximated.append(Note("prompt", str(path), how))
    cases = []
    seen: dict[str, str] = {}
    for n, (where, item) in enumerate(items, start=1):
        checks = []
        for i, grader in kept:
            try:
                checks.append(_grader(grader, i, item, where, renamed))
            except ValueError as exc:
                raise source_error(criteria_path, str(exc)) from None
        name = str(item.get("id") or f"item-{n}")
        if name in seen:
            raise source_error(
                Path(where),
                f"'id' must be unique; got {name!r} again (first at {seen[name]}): give each "
                "item its own 'id', or leave it out (items are then numbered)",
            )
        seen[name] = where
        case: dict[str, Any] = {"id": name, "vars": renamed_keys(item, renamed)}
        case["metadata"] = {"source": where}
        if checks:
            case["checks"] = checks
        cases.append(case)
    result.files = sources.files
    kinds = {g["type"] for _, g in kept}
    notes = ["python_code checks run this suite's Python: run it only if you trust its source"]
    return write_suite(
        result,
        dest,
        cases=cases,
        variants=[{"name": "baseline", "template": f"{{{{ {renamed.get(field, field)} }}}}"}],
        repeats=repeats,
        judge=bool(kinds & {"score_model", "label_model"}),
        notes=notes if "python" in kinds else None,
    )
