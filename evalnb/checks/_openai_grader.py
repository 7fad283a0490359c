"""An OpenAI / Azure AI Foundry grader graded as the Evals API defines it.

``{"type": "openai_grader", "grader": {...}}`` holds the grader as the criteria file wrote it;
its templates are filled when it grades, ``{{ item.x }}`` from the case's ``vars`` (the
item) and ``{{ sample.output_text }}``, ``{{ sample.output_json.x }}`` (the answer read as
JSON) and ``{{ sample.output_tools[0].function.name }}`` (the answer's tool calls) from the
sample; a path reads nested fields and list indexes.

- ``string_check``: ``eq``, ``ne`` (case-sensitive equality), ``like`` (contains),
  ``ilike`` (contains, any case): 1 or 0.
- ``text_similarity``: the metric's score (:mod:`evalnb.checks._text_similarity`: rapidfuzz,
  sacrebleu, NLTK, rouge-score), passing at ``pass_threshold``.
- ``multi``: each of its ``graders`` scored (string checks and text similarity), then its
  ``calculate_output`` formula over their scores (:class:`~evalnb.checks._formula.Formula`,
  never ``eval``); a derived score that passes at ``pass_threshold`` when the grader gives
  one, else at 0.5. A value outside [0, 1] is kept in the evidence, not as the check's score.

The evidence names the engine of every score (``rouge-score 0.1.2``), the filled input and
reference, and for ``multi`` each sub-grader's score.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._types import Sample
from evalnb.checks._base import (
    CHECK_TIMEOUT,
    THRESHOLD,
    Outcome,
    SpecCheck,
    on_a_thread,
    register,
)
from evalnb.checks._formula import Formula
from evalnb.checks._text_similarity import METRICS, missing, score

__all__ = ["KINDS", "METRICS", "OPERATIONS", "OpenAIGraderCheck", "fill", "grader_problem"]

#: ``string_check`` operations.
OPERATIONS = ("eq", "ne", "like", "ilike")
#: The grader types this check grades (and those a ``multi`` may hold).
KINDS = ("string_check", "text_similarity", "multi")
_FIELD = re.compile(r"\{\{\s*(item|sample)((?:\.[A-Za-z_][\w-]*|\[\d+\])+)\s*\}\}")
_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")


def _dig(value: Any, path: str, where: str) -> Any:
    for name, index in _STEP.findall(path):
        if name and isinstance(value, Mapping) and name in value:
            value = value[name]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            raise ValueError(f"{where}{path} is not there")
    return value


def _sample_fields(sample: Sample) -> dict[str, Any]:
    """The ``sample`` namespace: the answer, as text and as JSON, and its tool calls."""
    answer = sample.answer or ""
    fields: dict[str, Any] = {"output_text": answer}
    # Not JSON: a path into output_json then says so.
    with contextlib.suppress(ValueError):
        fields["output_json"] = json.loads(answer)
    fields["output_tools"] = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in sample.tool_calls
    ]
    return fields


def fill(template: Any, item: Mapping[str, Any], sample: Mapping[str, Any]) -> str:
    """``template`` with its ``{{ item.x }}`` / ``{{ sample.x }}`` fields filled (a value
    that is not text as JSON); ``ValueError`` naming a field that is not there."""
    if not isinstance(template, str):
        return json.dumps(template, ensure_ascii=False)

    def value(match: re.Match[str]) -> str:
        namespace, path = match[1], match[2]
        if (
            namespace == "sample"
            and path.startswith(".output_json")
            and "output_json" not in sample
        ):
            raise ValueError("sample.output_json: the answer is not JSON")
        found = _dig(item if namespace == "item" else sample, path, namespace)
        return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)

    return _FIELD.sub(value, template)


def grader_problem(grader: Any, inside_multi: bool = False) -> str | None:
    """Why this check cannot grade ``grader`` here (one line saying what to do), or None."""
    if not isinstance(grader, Mapping) or not isinstance(grader.get("type"), str):
        return "a grader is an object with a 'type'"
    kind = grader["type"]
    if kind not in KINDS or (inside_multi and kind == "multi"):
        allowed = KINDS[:2] if inside_multi else KINDS
        return f"a {kind!r} grader is not graded here (graded: {', '.join(allowed)})"
    if kind == "string_check":
        if grader.get("operation") not in OPERATIONS:
            given = grader.get("operation")
            return f"'operation' must be one of {', '.join(OPERATIONS)}; got {given!r}"
        return None
    if kind == "text_similarity":
        metric = grader.get("evaluation_metric")
        if metric == "cosine":
            return (
                "cosine compares embeddings: grade it as its own criterion (evalnb's similar "
                "check, on the run's embeddings server)"
            )
        return missing(str(metric))
    graders = grader.get("graders")
    if not isinstance(graders, Mapping) or not graders:
        return "a multi grader needs 'graders', an object of named graders"
    for name, sub in graders.items():
        problem = grader_problem(sub, inside_multi=True)
        if problem is not None:
            return f"its grader {name!r}: {problem}"
    try:
        Formula(str(grader.get("calculate_output") or ""), list(graders))
    except ValueError as exc:
        return f"'calculate_output': {exc}"
    return None


def _grader(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise ValueError("must be an OpenAI grader (an object with a 'type')")
    plain: dict[str, Any] = json.loads(json.dumps(dict(value)))
    return plain


def _grade(
    grader: Mapping[str, Any], item: Mapping[str, Any], sample: Mapping[str, Any]
) -> tuple[float, dict[str, Any]]:
    """``(score, evidence)`` of one grader on one answer."""
    kind = grader["type"]
    if kind == "multi":
        scores, engines = {}, set()
        for name, sub in grader["graders"].items():
            scores[name], found = _grade(sub, item, sample)
            engines.add(found["engine"])
        formula = Formula(str(grader["calculate_output"]), list(scores))
        value = formula(scores)
        engine = ", ".join(sorted(engines)) + " (a formula over the scores, evalnb)"
        return value, {"engine": engine, "scores": scores, "formula": formula.text}
    given = fill(grader.get("input", ""), item, sample)
    reference = fill(grader.get("reference", ""), item, sample)
    evidence: dict[str, Any] = {"input": given[:500], "reference": reference[:500]}
    if kind == "string_check":
        operation = grader["operation"]
        passed = {
            "eq": given == reference,
            "ne": given != reference,
            "like": reference in given,
            "ilike": reference.lower() in given.lower(),
        }[operation]
        return (1.0 if passed else 0.0), {**evidence, "engine": "evalnb", "operation": operation}
    metric = str(grader["evaluation_metric"])
    value, engine = score(metric, given, reference)
    return value, {**evidence, "engine": engine, "metric": metric}


@register
class OpenAIGraderCheck(SpecCheck):
    """An OpenAI Evals grader (see the module)."""

    type = "openai_grader"
    required = {"grader": _grader}
    reads_case = True
    graded = True

    def validate(self, where: str) -> None:
        grader = self.values["grader"]
        problem = grader_problem(grader)
        if problem is not None:
            raise ArgumentError(f"'{where}.grader': {problem}")
        threshold = grader.get("pass_threshold")
        if threshold is not None and not isinstance(threshold, int | float):
            raise ArgumentError(f"'{where}.grader.pass_threshold' must be a number")
        self.threshold = float(threshold) if threshold is not None else THRESHOLD
        if grader["type"] == "string_check":
            self.threshold = 1.0

    def label(self) -> str:
        grader = self.values["grader"]
        return str(grader.get("evaluation_metric") or grader.get("operation") or grader["type"])

    async def __call__(self, sample: Sample) -> Outcome:
        grader = self.values["grader"]
        item = dict(self.bound_case().vars)
        fields = _sample_fields(sample)
        try:
            value, evidence = await on_a_thread(
                lambda: _grade(grader, item, fields), CHECK_TIMEOUT, self.name
            )
        except TimeoutError:
            return Outcome(False, f"took longer than {CHECK_TIMEOUT:g} s", score=0.0)
        except ValueError as exc:
            return Outcome(False, f"cannot grade: {exc}"[:300], score=0.0)
        kept = value if 0.0 <= value <= 1.0 else None
        evidence["score"] = value
        passed = value >= self.threshold
        detail = f"{self.label()} {value:.3f} (passes >= {self.threshold:g})"
        return Outcome(passed, detail, evidence, kept)
