"""promptfoo's ``select-best`` and ``max-score``: one choice among the variants' answers.

``select-best`` is graded by promptfoo itself: the grading worker calls promptfoo's own
comparison (``assertions.matchesComparisonBoolean``, the ``matchesSelectBest`` that promptfoo's
evaluator calls through ``runCompareAssertion``) with the group's answers in the run's
variant order; its grading prompt goes to the run's judge as every model-graded assertion's
does. The judge names one index; that answer passes, the others fail. A reply without a valid
index fails every answer, as in promptfoo.

``max-score`` needs no model: promptfoo picks the answer whose other assertions score
highest (their mean, or ``sum``, weighted by assertion type; the first of equal scores wins;
below ``threshold`` none). promptfoo does not export that function (``selectMaxScore``), so
evalnb applies its formula to the scores promptfoo gave the sample's other assertions (an
``assert-set`` counted by its inner assertions, as promptfoo counts it); the evidence says so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalnb._types import Case, CheckResult, Sample
from evalnb.checks._base import Outcome

__all__ = ["COMPARING", "KEPT_TYPES", "assertion_types", "components", "max_score", "select_best"]

#: promptfoo assertions that compare the variants' answers of one case and repeat.
COMPARING = frozenset({"select-best", "max-score"})
#: The promptfoo assertion type of a check evalnb's own translation grades.
KEPT_TYPES = {"python_code": "python", "javascript": "javascript", "similar": "similar"}


async def select_best(
    assertion: Mapping[str, Any],
    case: Case,
    engine: str,
    samples: Sequence[Sample],
    grade: Callable[[dict[str, Any]], dict[str, Any]],
    asked: list[dict[str, Any]],
    test_vars: Mapping[str, Any] | None = None,
) -> list[Outcome]:
    """The outcome of each of ``samples`` (completed answers of one group, at least two):
    ``grade`` sends the request to the grading worker, whose judge calls land in ``asked``;
    ``test_vars`` are the vars as promptfoo names them (the case's own by default)."""
    request = {
        "assertion": dict(assertion),
        "test": {
            "vars": dict(case.vars if test_vars is None else test_vars),
            "metadata": dict(case.metadata),
        },
        "outputs": [s.answer or "" for s in samples],
    }
    reply = await asyncio.to_thread(grade, request)
    evidence: dict[str, Any] = {
        "engine": engine,
        "function": "assertions.matchesComparisonBoolean",
        **({"judge": asked} if asked else {}),
    }
    done = reply.get("done")
    if not isinstance(done, list) or len(done) != len(samples):
        why = f"promptfoo could not grade: {reply.get('error')}"[:300]
        return [Outcome(False, why, evidence) for _ in samples]
    evidence["selected"] = [s.variant for s, r in zip(samples, done, strict=True) if r.get("pass")]
    outcomes = []
    for result in done:
        reason = str(result.get("reason") or "")
        score = result.get("score")
        score = float(score) if isinstance(score, int | float) and 0 <= score <= 1 else None
        passed = bool(result.get("pass"))
        kept = {**evidence, "reason": reason}
        outcomes.append(Outcome(passed, "" if passed else reason[:300], kept, score))
    return outcomes


def assertion_types(case: Case) -> dict[str, str]:
    """The promptfoo assertion type of each check of ``case``, by check name."""
    out = {}
    for given in case.checks:
        spec = given if isinstance(given, Mapping) else getattr(given, "spec", {})
        kind = str(spec.get("type"))
        name = spec.get("name") if isinstance(given, Mapping) else getattr(given, "name", None)
        assertion = spec.get("assertion")
        if isinstance(assertion, Mapping):
            kind = str(assertion.get("type"))
            name = name or kind
        out[str(name or kind)] = KEPT_TYPES.get(kind, kind)
    return out


def components(row: Sequence[CheckResult], types: Mapping[str, str]) -> list[tuple[str, float]]:
    """``(assertion type, score)`` of each assertion promptfoo counts in a max-score: every
    other assertion of the sample (an assert-set's inner ones), not select-best/max-score."""
    out = []
    for result in row:
        kind = types.get(result.check, result.type)
        if kind in COMPARING:
            continue
        evidence = _evidence(result)
        if kind == "assert-set":
            inner = evidence.get("components") or []
            out += [(str(c.get("type")), _number(c.get("score"))) for c in inner]
            continue
        score = evidence.get("score", result.score)
        if not isinstance(score, int | float) or isinstance(score, bool):
            score = result.score if result.score is not None else float(bool(result.outcome))
        out.append((kind, float(score)))
    return out


def _evidence(result: CheckResult) -> dict[str, Any]:
    try:
        data = json.loads(result.evidence) if result.evidence else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _number(value: Any) -> float:
    """promptfoo's ``score || 0``."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def max_score(
    assertion: Mapping[str, Any],
    components: Sequence[Sequence[tuple[str, float]]],
    engine: str,
) -> list[Outcome]:
    """promptfoo's ``selectMaxScore`` over each answer's ``(type, score)`` components."""
    value = assertion.get("value") or {}
    value = value if isinstance(value, Mapping) else {}
    method = value.get("method", "average")
    weights = value.get("weights") or {}
    threshold = value.get("threshold")
    evidence: dict[str, Any] = {
        "engine": f"evalnb's translation of {engine}'s max-score",
        "why": "promptfoo does not export its max-score function (selectMaxScore)",
    }
    if any(not row for row in components):
        why = (
            "max-score requires at least one other assertion (besides max-score or "
            "select-best) to aggregate scores from"
        )
        return [Outcome(False, why, evidence) for _ in components]
    scores = []
    for row in components:
        total = sum(score * _weight(weights, kind) for kind, score in row)
        weight = sum(_weight(weights, kind) for kind, _ in row)
        scores.append(total if method == "sum" else (total / weight if weight > 0 else 0.0))
    best = max(scores)
    winner = scores.index(best)
    meets = not isinstance(threshold, int | float) or best >= threshold
    outcomes = []
    for i, score in enumerate(scores):
        won = i == winner and meets
        if won:
            reason = f"Selected as highest scoring output (score: {score:.3f})"
        elif score == best and not meets:
            reason = f"Not selected - score {score:.3f} below threshold {threshold}"
        else:
            reason = f"Not selected (score: {score:.3f}, max: {best:.3f})"
        kept = {**evidence, "reason": reason, "aggregate": score, "assertions": len(components[i])}
        outcomes.append(Outcome(won, "" if won else reason, kept, 1.0 if won else 0.0))
    return outcomes


def _weight(weights: Any, kind: str) -> float:
    given = weights.get(kind) if isinstance(weights, Mapping) else None
    return float(given) if isinstance(given, int | float) and not isinstance(given, bool) else 1.0
