"""Embedding similarity (promptfoo's ``similar``): the cosine of the answer's embedding and
each expected text's, passing at ``threshold`` (promptfoo's default 0.75).

``{"type": "similar", "value": "Ahoy, world", "threshold": 0.8}`` (``value`` may be a
list: the best match counts). The embeddings come from the ``/v1/embeddings`` route of the
spec's ``base_url`` when it gives one; else from :data:`EMBEDDINGS` when it is set (an object
with ``embed(texts) -> list of vectors``, as :class:`evalnb.targets.OpenAIEmbeddings` is: a
run sets it to its ``OpenAIChat`` target's server unless ``EVALNB_EMBEDDINGS_URL`` is set);
else from that environment variable's server; with ``model`` (default ``embed``). The
score is the best cosine clipped to [0, 1].
"""

from __future__ import annotations

import contextvars
import inspect
import math
import os
from collections.abc import Sequence
from typing import Any

import httpx

from evalnb._exceptions import EvalnbError
from evalnb._types import Sample
from evalnb.checks._base import (
    CheckReturn,
    Outcome,
    SpecCheck,
    Unscored,
    register,
    threshold_value,
)
from evalnb.checks._lexical import _text, _texts

__all__ = ["EMBEDDINGS", "EMBEDDINGS_URL_ENV", "SimilarCheck", "cosine"]

#: The embeddings client for checks running in this context (None: use ``base_url``).
EMBEDDINGS: contextvars.ContextVar[Any] = contextvars.ContextVar("evalnb_embeddings", default=None)

#: The environment variable naming the embeddings server when a spec gives none.
EMBEDDINGS_URL_ENV = "EVALNB_EMBEDDINGS_URL"

#: promptfoo's pass mark for ``similar``.
SIMILAR_THRESHOLD = 0.75


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors (0 when either is all zeros)."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


def _vectors(body: Any, count: int, where: str) -> list[list[float]]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"{where}: expected 'data' with {count} embeddings")
    ordered = sorted(data, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
    vectors = []
    for item in ordered:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not all(isinstance(x, int | float) for x in vector):
            raise ValueError(f"{where}: an embedding is not a list of numbers")
        vectors.append([float(x) for x in vector])
    return vectors


@register
class SimilarCheck(SpecCheck):
    """The answer's embedding close to an expected text's (see the module)."""

    type = "similar"
    required = {"value": _texts}
    optional = {"threshold": threshold_value, "base_url": _text, "model": _text}
    graded = True
    threshold = SIMILAR_THRESHOLD

    def validate(self, where: str) -> None:
        self.threshold = self.values.get("threshold", SIMILAR_THRESHOLD)

    def label(self) -> str:
        return f"~ {self.values['value'][0][:30]!r} >= {self.threshold:g}"

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        client = EMBEDDINGS.get()
        if client is not None and not self.values.get("base_url"):
            if "model" in self.values and hasattr(client, "with_model"):
                client = client.with_model(self.values["model"])
            result = client.embed(texts)
            return list(await result if inspect.isawaitable(result) else result)
        base = self.values.get("base_url") or os.environ.get(EMBEDDINGS_URL_ENV)
        if not base:
            raise LookupError(
                f"no embeddings server: give the check a 'base_url' or set {EMBEDDINGS_URL_ENV}"
            )
        url = base.rstrip("/") + "/embeddings"
        body = {"model": self.values.get("model", "embed"), "input": texts}
        async with httpx.AsyncClient(timeout=30.0) as client:
            response = await client.post(url, json=body)
        if response.status_code != 200:
            raise ValueError(f"{url} answered HTTP {response.status_code}")
        return _vectors(response.json(), len(texts), url)

    async def _score(self, answer: str) -> Outcome | Unscored:
        expected = list(self.values["value"])
        try:
            vectors = await self._embed([answer, *expected])
        except LookupError as exc:  # nothing to ask: not scored, never a fail
            return Unscored(str(exc))
        except (ValueError, httpx.HTTPError, EvalnbError) as exc:
            return Outcome(False, f"embeddings failed: {exc}"[:300], score=0.0)
        best = max(cosine(vectors[0], v) for v in vectors[1:])
        score = min(1.0, max(0.0, best))
        return Outcome(
            score >= self.threshold,
            f"cosine {best:.3f} (passes >= {self.threshold:g})",
            score=score,
        )

    def __call__(self, sample: Sample) -> CheckReturn:
        return self._score(sample.answer or "")
