"""Which engine grades each imported promptfoo assertion: promptfoo itself, or evalnb.

Where promptfoo is installed (:func:`~evalnb.checks._promptfoo.find_promptfoo`), an
assertion becomes a ``promptfoo`` check holding it as the config wrote it (its ``$ref``
read, a ``file://`` data value loaded): promptfoo renders its templates with each case's
vars (``defaultTest`` values that name per-test vars included) and grades it. A few stay
with evalnb's own checks, each listed in the import's ``fallback`` with the reason
(:data:`KEPT`): code that arrives with the suite and must pass the trust rule in evalnb's
bounded workers, embeddings and prices that only the run has, and output transforms set on
a test. Without promptfoo every assertion is graded by evalnb's translation, and each is
listed so.
"""

from __future__ import annotations

import json
from typing import Any

from evalnb.checks import PromptfooEngine

__all__ = ["COMPARED", "COMPARED_BY", "KEPT", "MODEL_GRADED", "engine_reason", "engine_spec"]

#: Assertion types evalnb's own checks grade even with promptfoo here, and why.
KEPT = {
    "python": "suite Python runs in evalnb's bounded Python worker, under the trust rule",
    "similar": "embeddings come from the run's embeddings server (EVALNB_EMBEDDINGS_URL)",
    "cost": "evalnb prices the answer's token usage from a price table",
}

#: Assertions that compare the answers of several variants (of one case and repeat), not one
#: answer: graded over each group once the run is complete (evalnb/checks/_compare.py), one
#: outcome per sample. Without promptfoo they are refused, each with what to do.
COMPARED = {
    "select-best": "it picks the best of the variants' answers with promptfoo's own comparison: "
    "install promptfoo (`make promptfoo`, or npm install promptfoo) and import again",
    "max-score": "it picks the variant whose other assertions promptfoo scores highest: "
    "install promptfoo (`make promptfoo`, or npm install promptfoo) and import again",
}

#: How each compared assertion is graded where promptfoo is here.
COMPARED_BY = {
    "select-best": "graded by {engine} (assertions.matchesComparisonBoolean) over the variants' "
    "answers of each case and repeat, once the run is complete; passed = this variant's "
    "answer was selected",
    "max-score": "graded by evalnb over the variants' answers of each case and repeat, once the "
    "run is complete, with promptfoo's max-score formula on the scores {engine} gave the other "
    "assertions (promptfoo does not export its max-score function)",
}

#: promptfoo's model-graded assertions: their grading prompt goes to the run's judge.
MODEL_GRADED = frozenset(
    {
        "llm-rubric",
        "select-best",
        "model-graded-closedqa",
        "model-graded-factuality",
        "factuality",
        "g-eval",
        "answer-relevance",
        "context-faithfulness",
        "context-recall",
        "context-relevance",
        "conversation-relevance",
        "search-rubric",
    }
)


def engine_reason(kind: str, raw: dict[str, Any], transforms: list[str]) -> str | None:
    """Why evalnb's translation grades this assertion although promptfoo is here (None:
    promptfoo grades it)."""
    base = kind.removeprefix("not-")
    if base in KEPT or base.startswith("similar"):
        return KEPT.get(base, KEPT["similar"])
    value = raw.get("value")
    if kind == "javascript" and isinstance(value, str) and value.startswith("file://"):
        return "a JavaScript grader file runs in evalnb's bounded JavaScript worker"
    if transforms:
        return f"the test's output transform {transforms[-1]!r} is applied by evalnb"
    return None


def engine_spec(raw: dict[str, Any], value: Any, engine: PromptfooEngine) -> dict[str, Any]:
    """The ``promptfoo`` check for ``raw`` (its value already read from any file): its own
    grading ``provider`` is left out, as the run's judge grades."""
    assertion = {k: v for k, v in raw.items() if k not in ("provider", "metric", "weight")}
    if "value" in raw:
        assertion["value"] = value
    return {
        "type": "promptfoo",
        "assertion": json.loads(json.dumps(assertion)),
        "engine": engine.name,
    }
