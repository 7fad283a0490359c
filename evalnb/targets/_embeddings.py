"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` route (the stand-in's,
llama.cpp's server started with ``--embeddings``, OpenAI's).

>>> embedder = OpenAIEmbeddings("http://127.0.0.1:8080/v1", model="embed")
>>> vectors = await embedder.embed(["Ahoy, world", "Hello world"])

``embed`` keeps the order of its inputs; an error answer or a malformed body is a
:class:`~evalnb.TargetError` naming the URL. The API key is read from the environment
variable ``api_key_env`` names, at request time, and never stored. The ``similar`` check
uses this client when it is set in :data:`evalnb.checks._similar.EMBEDDINGS`.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from evalnb._exceptions import ArgumentError, TargetError

__all__ = ["OpenAIEmbeddings"]


class OpenAIEmbeddings:
    """An embeddings client: ``await embed(texts) -> list of vectors``."""

    def __init__(
        self,
        base_url: str,
        model: str = "embed",
        *,
        api_key_env: str | None = None,
        timeout: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ArgumentError(f"'base_url' must be an http(s) URL; got {base_url!r}")
        if api_key_env is not None and api_key_env not in os.environ:
            raise ArgumentError(
                f"'api_key_env' names {api_key_env!r}, but that environment variable is not set"
            )
        if not timeout > 0:
            raise ArgumentError(f"'timeout' must be > 0 seconds; got {timeout!r}")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.client = client

    def with_model(self, model: str) -> OpenAIEmbeddings:
        """The same server and key, asking ``model``."""
        copy = OpenAIEmbeddings.__new__(OpenAIEmbeddings)
        copy.__dict__.update(self.__dict__, model=model)
        return copy

    def __repr__(self) -> str:
        return f"OpenAIEmbeddings({self.url!r}, model={self.model!r})"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"'texts' must be a list of strings; got {texts!r}")
        headers = {}
        if self.api_key_env is not None:
            headers["Authorization"] = f"Bearer {os.environ[self.api_key_env]}"
        body = {"model": self.model, "input": texts}
        try:
            if self.client is not None:
                response = await self.client.post(self.url, json=body, headers=headers)
            else:
                async with httpx.AsyncClient(timeout=self.timeout) as client:
                    response = await client.post(self.url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise TargetError(f"{self.url}: {type(exc).__name__}: {exc}", status="error") from None
        if response.status_code != 200:
            raise TargetError(
                f"{self.url}: HTTP {response.status_code}: {response.text[:200]}", status="error"
            )
        return _vectors(response, len(texts), self.url)


def _vectors(response: httpx.Response, count: int, url: str) -> list[list[float]]:
    try:
        body: Any = response.json()
    except ValueError:
        raise TargetError(f"{url}: the answer is not JSON", status="error") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise TargetError(f"{url}: expected 'data' with {count} embeddings", status="error")
    ordered = sorted(data, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
    vectors = []
    for item in ordered:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in vector
        ):
            raise TargetError(f"{url}: an embedding is not a list of numbers", status="error")
        vectors.append([float(x) for x in vector])
    return vectors
