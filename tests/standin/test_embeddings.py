"""The stand-in's ``/v1/embeddings`` route, the embeddings client and the ``similar``
check on it: unit vectors, texts sharing words closer than texts that do not."""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest

from evalnb._exceptions import TargetError
from evalnb.checks import Outcome, Unscored, build_check
from evalnb.checks._similar import cosine
from evalnb.standin._server import EMBEDDING_DIMENSIONS
from evalnb.targets import OpenAIEmbeddings
from tests.builders import sample


def test_the_route_answers_openai_shaped_unit_vectors(standin) -> None:
    body = {"model": "embed", "input": ["Ahoy, world", "Hello world"]}
    response = httpx.post(f"{standin.base_url}/embeddings", json=body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["object"] == "list" and answer["model"] == "embed"
    assert [d["index"] for d in answer["data"]] == [0, 1]
    for item in answer["data"]:
        vector = item["embedding"]
        assert len(vector) == EMBEDDING_DIMENSIONS
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-4)
    again = httpx.post(f"{standin.base_url}/embeddings", json=body).json()
    assert again["data"] == answer["data"]  # deterministic
    bad = httpx.post(f"{standin.base_url}/embeddings", json={"input": 3})
    assert bad.status_code == 400 and "'input' must be" in bad.json()["error"]["message"]


def test_the_client_keeps_order_and_similar_texts_are_closer(standin) -> None:
    embedder = OpenAIEmbeddings(standin.base_url)
    texts = ["It will rain in Lisbon tomorrow", "Tomorrow it will rain in Lisbon", "Stocks fell"]
    a, b, c = asyncio.run(embedder.embed(texts))
    assert cosine(a, b) > 0.9 > 0.3 > cosine(a, c)
    wrong = OpenAIEmbeddings(standin.base_url.removesuffix("/v1"))
    with pytest.raises(TargetError, match="HTTP 404"):
        asyncio.run(wrong.embed(["x"]))


def test_similar_scores_the_cosine_against_its_threshold(standin, monkeypatch) -> None:
    check = build_check(
        {"type": "similar", "value": "It will rain tomorrow", "base_url": standin.base_url}
    )
    close = asyncio.run(check(sample("Tomorrow it will rain")))  # type: ignore[arg-type]
    far = asyncio.run(check(sample("Quarterly earnings beat expectations")))  # type: ignore[arg-type]
    assert isinstance(close, Outcome) and close.passed is True and close.score > 0.75
    assert isinstance(far, Outcome) and far.passed is False and far.score < 0.75
    monkeypatch.delenv("EVALNB_EMBEDDINGS_URL", raising=False)
    unset = build_check({"type": "similar", "value": "x"})
    result = asyncio.run(unset(sample("x")))  # type: ignore[arg-type]
    assert isinstance(result, Unscored) and "EVALNB_EMBEDDINGS_URL" in result.reason


def test_a_run_embeds_with_its_targets_server_by_default(standin, tmp_path, monkeypatch) -> None:
    import json

    import evalnb

    monkeypatch.delenv("EVALNB_EMBEDDINGS_URL", raising=False)
    cases = tmp_path / "cases.jsonl"
    spec = {"type": "similar", "value": "It will rain in Lisbon tomorrow", "threshold": 0.6}
    rows = [
        {"id": "close", "prompt": "Tomorrow it will rain in Lisbon", "checks": [spec]},
        {"id": "far", "prompt": "Quarterly earnings beat expectations", "checks": [spec]},
    ]
    cases.write_text("".join(json.dumps(row) + "\n" for row in rows))
    target = evalnb.OpenAIChat(standin.base_url, "echo")
    evalnb.run(cases, target, repeats=1, out=tmp_path / "run", progress=False)
    checks = evalnb.load(tmp_path / "run").checks.set_index("case_id")
    # scored (no run-wide setting needed): the echo answer is the prompt itself
    assert checks.loc["close", "outcome"] == True  # noqa: E712
    assert checks.loc["far", "outcome"] == False  # noqa: E712
    assert all("cosine" in detail for detail in checks["detail"])
