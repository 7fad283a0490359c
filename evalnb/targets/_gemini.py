"""Google's Gemini API (``POST {base_url}/models/{model}:generateContent``), a thin client on
the HTTP layer."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

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

__all__ = ["GeminiGenerateContent"]

#: Gemini's finish reasons in the chat vocabulary the runner reads.
FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
}
#: Chat params and their ``generationConfig`` names.
CONFIG = {
    "temperature": "temperature",
    "top_p": "topP",
    "max_tokens": "maxOutputTokens",
    "max_completion_tokens": "maxOutputTokens",
    "seed": "seed",
    "n": "candidateCount",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
}
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY", "function": "ANY"}


def _part(part: Any) -> Any:
    """A chat content part as a Gemini part (an image as inline data when it is a data URL)."""
    if not isinstance(part, Mapping):
        return part
    if part.get("type") == "text":
        return {"text": part.get("text", "")}
    image = image_of(part)
    if image is not None and image[1] is not None:
        return {"inlineData": {"mimeType": image[1], "data": image[2]}}
    return dict(part)


def _turn(message: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """One chat message as a Gemini ``content`` (``names``: tool call ids to tool names)."""
    if message.get("role") == "tool":
        content = message.get("content")
        try:
            answer = json.loads(content) if isinstance(content, str) else content
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            answer = {"result": result_text(content)}
        call_id = message.get("tool_call_id")
        name = names.get(call_id or "", message.get("name") or "tool")
        response = {"name": name, "response": answer, **({"id": call_id} if call_id else {})}
        return {"role": "user", "parts": [{"functionResponse": response}]}
    content = message.get("content")
    parts = [_part(p) for p in content] if isinstance(content, list) else []
    if isinstance(content, str) and content:
        parts = [{"text": content}]
    for call in message.get("tool_calls") or ():
        names[call.get("id") or ""] = call["function"]["name"]
        asked = {"name": call["function"]["name"], "args": arguments_of(call)}
        parts.append({"functionCall": {**asked, **({"id": call["id"]} if call.get("id") else {})}})
    return {"role": "model" if message.get("role") == "assistant" else "user", "parts": parts}


def _config(params: dict[str, Any]) -> dict[str, Any]:
    """The body's ``generationConfig``, ``tools`` and ``toolConfig`` from the chat params
    (taken out of ``params``; what is left is sent as it is)."""
    config = {CONFIG[k]: params.pop(k) for k in list(params) if k in CONFIG}
    if "stop" in params:
        config["stopSequences"] = stop_list(params.pop("stop"))
    form = params.pop("response_format", None)
    if isinstance(form, Mapping) and form.get("type") in ("json_object", "json_schema"):
        config["responseMimeType"] = "application/json"
        schema = (form.get("json_schema") or {}).get("schema")
        if schema is not None:
            config["responseJsonSchema"] = schema
    config.update(params.pop("generationConfig", {}))
    out: dict[str, Any] = {"generationConfig": config} if config else {}
    if "tools" in params:
        functions, native = function_tools(params.pop("tools"))
        declared = [
            {"name": n, **({"description": d} if d else {}), "parameters": s}
            for n, d, s in functions
        ]
        out["tools"] = ([{"functionDeclarations": declared}] if declared else []) + native
    choice = tool_choice(params.pop("tool_choice", None))
    if choice is not None:
        calling: dict[str, Any] = {"mode": _MODES[choice[0]]}
        if choice[1] is not None:
            calling["allowedFunctionNames"] = [choice[1]]
        out["toolConfig"] = {"functionCallingConfig": calling}
    return out


class GeminiGenerateContent(HTTPTarget):
    """POST ``{base_url}/models/{model}:generateContent`` (the Gemini API) for every sample.

    System messages become ``systemInstruction``, the others ``contents`` (``user`` and
    ``model`` turns; a tool call a ``functionCall`` part, a tool result a
    ``functionResponse``); ``temperature``, ``top_p``, ``max_tokens``, ``stop``, ``seed``,
    ``n`` and a JSON ``response_format`` go into ``generationConfig``, chat-form ``tools``
    into ``functionDeclarations`` and ``tool_choice`` into ``toolConfig``; any other param
    is sent as it is (``safetySettings``...). The model is in the URL (a variant's
    ``model`` param changes it). The key goes in ``x-goog-api-key``; ``bearer=True`` sends it
    as ``Authorization: Bearer`` instead (an access token: Vertex AI, whose ``base_url`` is
    ``https://LOCATION-aiplatform.googleapis.com/v1/projects/P/locations/LOCATION/publishers/google``).
    Every other option is :class:`~evalnb.OpenAIChat`'s.

    >>> GeminiGenerateContent("gemini-2.5-flash", api_key_env="GEMINI_API_KEY")  # doctest: +SKIP
    """

    kind = "gemini"
    shape = "a Gemini generateContent response"
    model_in_route = True
    key_header = ("x-goog-api-key", "")

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://generativelanguage.googleapis.com/v1beta",
        bearer: bool = False,
        **options: Any,
    ):
        if bearer:
            self.key_header = ("Authorization", "Bearer ")
        super().__init__(base_url, model, **options)

    def _route(self, model: str | None) -> str:
        name = urllib.parse.quote(str(model).removeprefix("models/"), safe="")
        return f"/models/{name}:generateContent"

    def _build(
        self, messages: list[dict[str, Any]], model: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        system, rest = split_system(messages)
        names: dict[str, str] = {}
        body: dict[str, Any] = {"contents": merged_turns([_turn(m, names) for m in rest], "parts")}
        if system is not None:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return {**body, **_config(params), **params}

    def _read(self, data: Any, model: str | None) -> dict[str, Any]:
        candidate = data["candidates"][0]
        parts = (candidate.get("content") or {}).get("parts") or []
        calls = [
            ToolCall(
                p["functionCall"].get("id"),
                p["functionCall"]["name"],
                json.dumps(p["functionCall"].get("args") or {}),
            )
            for p in parts
            if "functionCall" in p
        ]
        reason = candidate.get("finishReason")
        finish = "tool_calls" if calls and reason == "STOP" else FINISH.get(reason, reason)
        usage = data.get("usageMetadata") or {}
        completion = usage.get("candidatesTokenCount")
        if completion is not None:  # a thinking model's thoughts are output tokens too
            completion += usage.get("thoughtsTokenCount") or 0
        return reply(
            "".join(p["text"] for p in parts if "text" in p and not p.get("thought")),
            calls,
            model=data.get("modelVersion") or model,
            finish=finish,
            prompt=usage.get("promptTokenCount"),
            completion=completion,
            total=usage.get("totalTokenCount"),
        )

    def _settings(self) -> dict[str, Any]:
        return {"auth": self.key_header[0]}
