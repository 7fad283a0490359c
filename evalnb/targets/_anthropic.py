"""Anthropic's Messages API (``POST {base_url}/messages``), a thin client on the HTTP layer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from evalnb._types import ToolCall
from evalnb.targets._forms import (
    arguments_of,
    function_tools,
    image_of,
    merged_turns,
    reply,
    result_text,
    split_system,
    stop_list,
    tool_choice,
)
from evalnb.targets._http import HTTPTarget

__all__ = ["AnthropicMessages"]

#: Anthropic's stop reasons in the chat vocabulary the runner reads (``length``: cut short).
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


def _block(part: Any) -> Any:
    """A chat content part as an Anthropic block (an image as a base64 or URL source)."""
    image = image_of(part)
    if image is None:
        return dict(part) if isinstance(part, Mapping) else part
    url, media, data = image
    source = (
        {"type": "base64", "media_type": media, "data": data}
        if media
        else {"type": "url", "url": url}
    )
    return {"type": "image", "source": source}


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One chat message's content as Anthropic content blocks."""
    if message.get("role") == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": result_text(message.get("content")),
            }
        ]
    content = message.get("content")
    blocks = (
        [_block(part) for part in content]
        if isinstance(content, list)
        else ([{"type": "text", "text": content}] if content else [])
    )
    for call in message.get("tool_calls") or ():
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": call["function"]["name"],
                "input": arguments_of(call),
            }
        )
    return blocks


def _tools(params: dict[str, Any]) -> None:
    """``tools``, ``tool_choice`` and ``stop`` in Anthropic's form, in place."""
    if "tools" in params:
        functions, native = function_tools(params.pop("tools"))
        params["tools"] = [
            {"name": name, **({"description": d} if d else {}), "input_schema": schema}
            for name, d, schema in functions
        ] + native
    if "tool_choice" in params:
        choice = tool_choice(params["tool_choice"])
        if choice is not None:
            mode, name = choice
            params["tool_choice"] = (
                {"type": "tool", "name": name} if name else {"type": _CHOICE[mode]}
            )
    if "stop" in params:
        params["stop_sequences"] = stop_list(params.pop("stop"))


class AnthropicMessages(HTTPTarget):
    """POST ``{base_url}/messages`` (Anthropic's Messages API) for every sample.

    The request's system messages become ``system``, its messages content blocks (a tool
    call a ``tool_use`` block, a tool result a ``tool_result``), and the OpenAI-named params
    their Anthropic names: ``max_tokens`` (required by the API: ``max_tokens`` here unless
    the params give it), ``stop`` as ``stop_sequences``, chat-form ``tools`` and
    ``tool_choice``; any other param is sent as it is (``top_k``, ``thinking``...). The key
    goes in ``x-api-key``, the API version in ``anthropic-version``. 529 (overloaded) is
    retried like a 429, honouring ``Retry-After``. Every other option is
    :class:`~evalnb.OpenAIChat`'s.

    >>> AnthropicMessages("claude-sonnet-4-5", api_key_env="ANTHROPIC_API_KEY")  # doctest: +SKIP
    """

    kind = "anthropic"
    shape = "an Anthropic message"
    overload = frozenset({529})
    key_header = ("x-api-key", "")

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com/v1",
        max_tokens: int = 1024,
        version: str = "2023-06-01",
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ):
        self.max_tokens = max_tokens
        self.version = version
        headers = {"anthropic-version": version, **(headers or {})}
        super().__init__(base_url, model, headers=headers, **options)

    def _route(self, model: str | None) -> str:
        return "/messages"

    def _build(
        self, messages: list[dict[str, Any]], model: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        system, rest = split_system(messages)
        turns = [
            {"role": "user" if m.get("role") == "tool" else m.get("role"), "content": _blocks(m)}
            for m in rest
        ]
        limit = params.pop("max_tokens", params.pop("max_completion_tokens", self.max_tokens))
        _tools(params)
        body: dict[str, Any] = {"model": model, "max_tokens": limit}
        if system is not None:
            body["system"] = system
        return {**body, "messages": merged_turns(turns, "content"), **params}

    def _read(self, data: Any, model: str | None) -> dict[str, Any]:
        blocks = data["content"]
        usage = data.get("usage") or {}
        prompt = usage.get("input_tokens")
        if prompt is not None:  # the cached part of the prompt is counted apart
            prompt += (usage.get("cache_creation_input_tokens") or 0) + (
                usage.get("cache_read_input_tokens") or 0
            )
        return reply(
            "".join(b["text"] for b in blocks if b.get("type") == "text"),
            (
                ToolCall(b.get("id"), b["name"], json.dumps(b.get("input") or {}))
                for b in blocks
                if b.get("type") == "tool_use"
            ),
            model=data.get("model"),
            finish=FINISH.get(data.get("stop_reason"), data.get("stop_reason")),
            prompt=prompt,
            completion=usage.get("output_tokens"),
        )

    def _settings(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "version": self.version}

    def _models_url(self) -> httpx.URL:
        return self._url.copy_with(path=self._url.path.removesuffix("/messages") + "/models")
