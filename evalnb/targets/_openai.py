"""An OpenAI-compatible chat endpoint over httpx, on aiohttp's connection pool by default."""

from __future__ import annotations

from typing import Any

import httpx

from evalnb._types import ToolCall
from evalnb.targets._http import HTTPTarget

__all__ = ["OpenAIChat"]


class OpenAIChat(HTTPTarget):
    """POST ``{base_url}/chat/completions`` for every sample.

    ``base_url`` includes the API version (``http://127.0.0.1:8000/v1``). The API key is
    read from the environment variable named by ``api_key_env`` at request time and is
    never written anywhere. ``params`` (temperature, max_tokens, seed, tools,
    response_format, ...) go into every request body; a variant's params override them.
    ``headers`` go with every request and ``query`` into its URL (a gateway's own headers,
    an ``api-version``); their names are recorded in the manifest, never the header values.

    Transient failures (connection errors, timeouts, dropped connections, 429 and 5xx)
    are retried up to ``max_retries`` times with exponential backoff and jitter; the
    ``Retry-After`` of a 429 or a 503 is honoured. The retry count is recorded on the sample.

    ``max_in_flight`` caps this target's concurrent requests below the runner's
    concurrency: 1 for a server that answers one request at a time (llama.cpp). The
    timeout of a request starts when it is sent, never while it waits for its turn.

    The ``httpx.AsyncClient`` underneath runs on ``transport``: ``"aiohttp"`` (httpx-aiohttp's
    ``AiohttpTransport``, the default: several times less CPU per request than httpx's own)
    or ``"httpx"``. On ``"aiohttp"``, with no proxy named in the environment, the chat requests
    go straight to that transport's aiohttp session, with the headers and timeouts the client
    would give them: converting each request and response between httpx's objects and
    aiohttp's cost as much CPU as aiohttp itself. A ``client`` passed in is used as it is, and
    ``transport`` is ignored.
    """

    kind = "openai"
    shape = "an OpenAI chat completion"
    needs_model = False

    def _route(self, model: str | None) -> str:
        return "/chat/completions"

    def _build(
        self, messages: list[dict[str, Any]], model: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {} if model is None else {"model": model}
        return {**body, "messages": messages, **params}

    def _read(self, data: Any, model: str | None) -> dict[str, Any]:
        choice = data["choices"][0]
        message = choice["message"]
        calls = tuple(
            ToolCall(
                id=call.get("id"),
                name=call["function"]["name"],
                arguments=call["function"].get("arguments") or "",
            )
            for call in message.get("tool_calls") or ()
        )
        usage = data.get("usage") or {}
        return {
            "text": message.get("content") or "",
            "model": data.get("model"),
            "finish_reason": choice.get("finish_reason"),
            "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": usage.get("completion_tokens"),
            "total_tokens": usage.get("total_tokens"),
            "tool_calls": calls,
        }

    def _models_url(self) -> httpx.URL:
        return self._url.copy_with(
            path=self._url.path.removesuffix("/chat/completions") + "/models"
        )
