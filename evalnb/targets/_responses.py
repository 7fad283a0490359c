"""OpenAI's Responses API (``POST {base_url}/responses``), a thin client on the HTTP layer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from evalnb._types import ToolCall
from evalnb.targets._forms import (
    function_tools,
    image_of,
    reply,
    result_text,
    split_system,
    tool_choice,
)
from evalnb.targets._http import HTTPTarget

__all__ = ["OpenAIResponses"]


def _part(part: Any, kind: str) -> Any:
    """A chat content part as a Responses content part."""
    image = image_of(part)
    if image is not None:
        return {"type": "input_image", "image_url": image[0]}
    if isinstance(part, Mapping) and part.get("type") == "text":
        return {"type": kind, "text": part.get("text", "")}
    return dict(part) if isinstance(part, Mapping) else part


def _items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One chat message as Responses input items."""
    role = message.get("role")
    if role == "tool":
        output = result_text(message.get("content"))
        return [
            {
                "type": "function_call_output",
                "call_id": message.get("tool_call_id"),
                "output": output,
            }
        ]
    content = message.get("content")
    kind = "output_text" if role == "assistant" else "input_text"
    if isinstance(content, list):
        content = [_part(p, kind) for p in content]
    items: list[dict[str, Any]] = [{"role": role, "content": content}] if content else []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id"),
                "name": function["name"],
                "arguments": function.get("arguments") or "{}",
            }
        )
    return items


def _params(params: dict[str, Any]) -> None:
    """The chat-named params in the Responses API's form, in place."""
    for old in ("max_tokens", "max_completion_tokens"):
        if old in params:
            params["max_output_tokens"] = params.pop(old)
    if "tools" in params:
        functions, native = function_tools(params.pop("tools"))
        params["tools"] = [
            {"type": "function", "name": n, **({"description": d} if d else {}), "parameters": s}
            for n, d, s in functions
        ] + native
    choice = tool_choice(params.get("tool_choice"))
    if choice is not None and choice[1] is not None:
        params["tool_choice"] = {"type": "function", "name": choice[1]}
    form = params.pop("response_format", None)
    if isinstance(form, Mapping):
        schema = form.get("json_schema")
        text = {"type": form.get("type"), **(dict(schema) if isinstance(schema, Mapping) else {})}
        params["text"] = {"format": text}


class OpenAIResponses(HTTPTarget):
    """POST ``{base_url}/responses`` (OpenAI's Responses API) for every sample.

    System messages become ``instructions``, the others ``input`` items (a tool call a
    ``function_call`` item, a tool result a ``function_call_output``); ``max_tokens``
    is sent as ``max_output_tokens``, chat-form ``tools`` and ``tool_choice`` in the
    Responses form, ``response_format`` as ``text.format``; any other param as it is
    (``reasoning``, ``store``...). The answer is the text of the ``message`` output
    items, the tool calls its ``function_call`` items. Every option is
    :class:`~evalnb.OpenAIChat`'s.

    >>> OpenAIResponses(
    ...     "https://api.openai.com/v1", "gpt-5-mini", api_key_env="OPENAI_API_KEY"
    ... )  # doctest: +SKIP
    """

    kind = "openai-responses"
    shape = "an OpenAI response"

    def _route(self, model: str | None) -> str:
        return "/responses"

    def _build(
        self, messages: list[dict[str, Any]], model: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        system, rest = split_system(messages)
        _params(params)
        body: dict[str, Any] = {} if model is None else {"model": model}
        if system is not None:
            body["instructions"] = system
        return {**body, "input": [item for m in rest for item in _items(m)], **params}

    def _read(self, data: Any, model: str | None) -> dict[str, Any]:
        output = data["output"]
        texts = [
            part["text"]
            for item in output
            if item.get("type") == "message"
            for part in item["content"]
            if part.get("type") == "output_text"
        ]
        calls = [
            ToolCall(item.get("call_id"), item["name"], item.get("arguments") or "")
            for item in output
            if item.get("type") == "function_call"
        ]
        finish = "tool_calls" if calls else "stop"
        if data.get("status") == "incomplete":
            reason = (data.get("incomplete_details") or {}).get("reason")
            finish = "length" if reason == "max_output_tokens" else str(reason)
        usage = data.get("usage") or {}
        return reply(
            "".join(texts),
            calls,
            model=data.get("model"),
            finish=finish,
            prompt=usage.get("input_tokens"),
            completion=usage.get("output_tokens"),
            total=usage.get("total_tokens"),
        )

    def _models_url(self) -> httpx.URL:
        return self._url.copy_with(path=self._url.path.removesuffix("/responses") + "/models")
