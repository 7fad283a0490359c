"""The vendors' wire protocols as the stand-in speaks them: each request turned into the
chat body the stand-in's assistants answer, each chat completion into the vendor's reply.

So every protocol is answered by the same seeded assistants, with the same draws, faults and
token counts: a body that means the same chat request gets the same answer whichever
protocol carried it. A request the protocol would refuse raises ``ValueError`` (a 400).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PROTOCOLS", "Protocol"]


@dataclass(frozen=True)
class Protocol:
    """How one protocol reaches the chat route and back."""

    name: str
    #: The body (and the route's ``match_info`` and query) as a chat body.
    request: Callable[[dict[str, Any], Mapping[str, str]], dict[str, Any]]
    #: A chat completion as the protocol's reply.
    response: Callable[[dict[str, Any]], dict[str, Any]]
    #: The status an ``overloaded`` fault answers.
    overload: int = 503
    #: The headers that carry a key, and what a key in them starts with.
    keys: tuple[tuple[str, str], ...] = (("Authorization", "Bearer "),)


def _call(call_id: Any, name: str, arguments: Any) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _tool(name: str, description: Any, parameters: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _choice(mode: str | None, name: str | None = None) -> Any:
    if name is not None:
        return {"type": "function", "function": {"name": name}}
    return {"any": "required", "ANY": "required", "AUTO": "auto", "NONE": "none"}.get(
        str(mode), mode
    )


def _message(completion: dict[str, Any]) -> tuple[str, list[dict[str, Any]], str, dict[str, int]]:
    """The first choice's text, tool calls (name and parsed arguments), finish reason, usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    calls = [
        {
            "id": c["id"],
            "name": c["function"]["name"],
            "input": json.loads(c["function"]["arguments"] or "{}"),
        }
        for c in message.get("tool_calls") or ()
    ]
    return message.get("content") or "", calls, choice["finish_reason"], completion["usage"]


def _turn(
    results: list[dict[str, Any]], role: Any, text: str, calls: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One turn as chat messages: its tool results, then what it said (and the calls)."""
    if text or calls or not results:
        said: dict[str, Any] = {"role": role, "content": text}
        results.append({**said, "tool_calls": calls} if calls else said)
    return results


def _with_fault(body: Mapping[str, Any], chat: dict[str, Any]) -> dict[str, Any]:
    """``chat`` with the body's ``standin_fault``, when it has one."""
    return {**chat, "standin_fault": body["standin_fault"]} if "standin_fault" in body else chat


def _required(body: Mapping[str, Any], key: str, kind: type) -> Any:
    value = body.get(key)
    if not isinstance(value, kind):
        raise ValueError(f"'{key}' must be a {kind.__name__}; got {value!r}")
    return value


# -- Anthropic Messages ----------------------------------------------------------------


def _anthropic_messages(turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = turn.get("content")
    if isinstance(content, str):
        return [{"role": turn.get("role"), "content": content}]
    if not isinstance(content, list):
        raise ValueError(f"'messages[].content' must be text or a list of blocks; got {content!r}")
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    calls = [
        _call(b["id"], b["name"], b.get("input")) for b in content if b.get("type") == "tool_use"
    ]
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": b.get("content")}
        for b in content
        if b.get("type") == "tool_result"
    ]
    return _turn(out, turn.get("role"), text, calls)


def _anthropic_request(body: dict[str, Any], route: Mapping[str, str]) -> dict[str, Any]:
    _required(body, "max_tokens", int)
    system = body.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    messages = [{"role": "system", "content": system}] if system else []
    for turn in _required(body, "messages", list):
        messages += _anthropic_messages(turn)
    chat: dict[str, Any] = {
        k: body[k] for k in ("model", "temperature", "top_p", "standin_fault") if k in body
    }
    chat.update(messages=messages, max_tokens=body["max_tokens"])
    if body.get("tools"):
        chat["tools"] = [
            _tool(t["name"], t.get("description"), t.get("input_schema")) for t in body["tools"]
        ]
    if isinstance(body.get("tool_choice"), dict):
        choice = body["tool_choice"]
        chat["tool_choice"] = _choice(choice.get("type"), choice.get("name"))
    return chat


_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _anthropic_response(completion: dict[str, Any]) -> dict[str, Any]:
    text, calls, finish, usage = _message(completion)
    blocks = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", **call} for call in calls]
    return {
        "id": "msg_" + completion["id"].removeprefix("chatcmpl-"),
        "type": "message",
        "role": "assistant",
        "model": completion["model"],
        "content": blocks,
        "stop_reason": _ANTHROPIC_STOP.get(finish, finish),
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
        },
    }


# -- OpenAI Responses ------------------------------------------------------------------


def _responses_messages(items: Any) -> list[dict[str, Any]]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    for item in _required({"input": items}, "input", list):
        kind = item.get("type", "message")
        if kind == "function_call":
            call = _call(item.get("call_id"), item["name"], item.get("arguments") or "{}")
            if not (messages and messages[-1]["role"] == "assistant"):
                messages.append({"role": "assistant", "content": None})
            messages[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}
            )
        else:
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content)
            messages.append({"role": item.get("role"), "content": content})
    return messages


def _responses_request(body: dict[str, Any], route: Mapping[str, str]) -> dict[str, Any]:
    messages = _responses_messages(body.get("input"))
    if body.get("instructions"):
        messages.insert(0, {"role": "system", "content": body["instructions"]})
    chat: dict[str, Any] = {
        k: body[k] for k in ("model", "temperature", "top_p", "standin_fault") if k in body
    }
    chat["messages"] = messages
    if "max_output_tokens" in body:
        chat["max_tokens"] = body["max_output_tokens"]
    if body.get("tools"):
        chat["tools"] = [
            _tool(t["name"], t.get("description"), t.get("parameters"))
            for t in body["tools"]
            if t.get("type") == "function"
        ]
    choice = body.get("tool_choice")
    if choice is not None:
        named = choice.get("name") if isinstance(choice, dict) else None
        chat["tool_choice"] = _choice(choice if named is None else None, named)
    form = (body.get("text") or {}).get("format")
    if isinstance(form, dict) and form.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    elif isinstance(form, dict) and form.get("type") == "json_schema":
        schema = {k: v for k, v in form.items() if k != "type"}
        chat["response_format"] = {"type": "json_schema", "json_schema": schema}
    return chat


def _responses_response(completion: dict[str, Any]) -> dict[str, Any]:
    text, calls, finish, usage = _message(completion)
    tag = completion["id"].removeprefix("chatcmpl-")
    output: list[dict[str, Any]] = []
    if text:
        part = {"type": "output_text", "text": text, "annotations": []}
        output.append(
            {"type": "message", "id": f"msg_{tag}", "role": "assistant", "content": [part]}
        )
    output += [
        {
            "type": "function_call",
            "id": f"fc_{c['id']}",
            "call_id": c["id"],
            "name": c["name"],
            "arguments": json.dumps(c["input"]),
            "status": "completed",
        }
        for c in calls
    ]
    cut = finish == "length"
    return {
        "id": f"resp_{tag}",
        "object": "response",
        "status": "incomplete" if cut else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": completion["model"],
        "output": output,
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
        },
    }


# -- Gemini generateContent ------------------------------------------------------------


def _gemini_messages(content: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts = _required(content, "parts", list)
    role = "assistant" if content.get("role") == "model" else "user"
    out: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": p["functionResponse"].get("id"),
            "content": json.dumps(p["functionResponse"].get("response")),
        }
        for p in parts
        if "functionResponse" in p
    ]
    text = "".join(p.get("text", "") for p in parts)
    calls = [
        _call(
            p["functionCall"].get("id") or f"call_{i}",
            p["functionCall"]["name"],
            p["functionCall"].get("args") or {},
        )
        for i, p in enumerate(parts)
        if "functionCall" in p
    ]
    return _turn(out, role, text, calls)


def _gemini_request(body: dict[str, Any], route: Mapping[str, str]) -> dict[str, Any]:
    system = body.get("systemInstruction") or {}
    text = "".join(p.get("text", "") for p in system.get("parts") or ())
    messages = [{"role": "system", "content": text}] if text else []
    for content in _required(body, "contents", list):
        messages += _gemini_messages(content)
    config = body.get("generationConfig") or {}
    chat: dict[str, Any] = {"model": route["model"], "messages": messages}
    names = {"temperature": "temperature", "topP": "top_p", "maxOutputTokens": "max_tokens"}
    chat.update({names[k]: v for k, v in config.items() if k in names})
    if "seed" in config:
        chat["seed"] = config["seed"]
    if config.get("responseMimeType") == "application/json":
        schema = config.get("responseJsonSchema")
        chat["response_format"] = (
            {"type": "json_object"}
            if schema is None
            else {"type": "json_schema", "json_schema": {"name": "schema", "schema": schema}}
        )
    declared = [d for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()]
    if declared:
        chat["tools"] = [
            _tool(d["name"], d.get("description"), d.get("parameters")) for d in declared
        ]
    calling = (body.get("toolConfig") or {}).get("functionCallingConfig")
    if calling:
        allowed = calling.get("allowedFunctionNames") or [None]
        chat["tool_choice"] = _choice(calling.get("mode"), allowed[0])
    return _with_fault(body, chat)


_GEMINI_STOP = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}


def _gemini_response(completion: dict[str, Any]) -> dict[str, Any]:
    text, calls, finish, usage = _message(completion)
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [
        {"functionCall": {"id": c["id"], "name": c["name"], "args": c["input"]}} for c in calls
    ]
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": _GEMINI_STOP.get(finish, finish),
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": usage["prompt_tokens"],
            "candidatesTokenCount": usage["completion_tokens"],
            "totalTokenCount": usage["total_tokens"],
        },
        "modelVersion": completion["model"],
        "responseId": completion["id"].removeprefix("chatcmpl-"),
    }


# -- Bedrock Converse ------------------------------------------------------------------


def _bedrock_messages(turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocks = _required(turn, "content", list)
    out: list[dict[str, Any]] = []
    for block in blocks:
        if "toolResult" in block:
            result = block["toolResult"]
            text = "".join(c.get("text", "") for c in result.get("content") or ())
            out.append({"role": "tool", "tool_call_id": result.get("toolUseId"), "content": text})
    text = "".join(b.get("text", "") for b in blocks)
    calls = [
        _call(b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"].get("input"))
        for b in blocks
        if "toolUse" in b
    ]
    return _turn(out, turn.get("role"), text, calls)


def _bedrock_request(body: dict[str, Any], route: Mapping[str, str]) -> dict[str, Any]:
    system = "".join(b.get("text", "") for b in body.get("system") or ())
    messages = [{"role": "system", "content": system}] if system else []
    for turn in _required(body, "messages", list):
        messages += _bedrock_messages(turn)
    config = body.get("inferenceConfig") or {}
    chat: dict[str, Any] = {"model": route["model"], "messages": messages}
    names = {"temperature": "temperature", "topP": "top_p", "maxTokens": "max_tokens"}
    chat.update({names[k]: v for k, v in config.items() if k in names})
    tools = body.get("toolConfig") or {}
    if tools.get("tools"):
        specs = [t["toolSpec"] for t in tools["tools"] if "toolSpec" in t]
        chat["tools"] = [
            _tool(s["name"], s.get("description"), (s.get("inputSchema") or {}).get("json"))
            for s in specs
        ]
    choice = tools.get("toolChoice")
    if isinstance(choice, dict) and choice:
        ((mode, value),) = choice.items()
        chat["tool_choice"] = _choice(mode, value.get("name") if mode == "tool" else None)
    return _with_fault(body, chat)


_BEDROCK_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _bedrock_response(completion: dict[str, Any]) -> dict[str, Any]:
    text, calls, finish, usage = _message(completion)
    blocks: list[dict[str, Any]] = [{"text": text}] if text else []
    blocks += [
        {"toolUse": {"toolUseId": c["id"], "name": c["name"], "input": c["input"]}} for c in calls
    ]
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": _BEDROCK_STOP.get(finish, finish),
        "usage": {
            "inputTokens": usage["prompt_tokens"],
            "outputTokens": usage["completion_tokens"],
            "totalTokens": usage["total_tokens"],
        },
        "metrics": {"latencyMs": 0},
    }


# -- OpenAI chat, and Azure's deployments of it ----------------------------------------


def _chat_request(body: dict[str, Any], route: Mapping[str, str]) -> dict[str, Any]:
    return body


def _azure_request(body: dict[str, Any], route: Mapping[str, str]) -> dict[str, Any]:
    if not route.get("api-version"):
        raise ValueError("the 'api-version' query parameter is required")
    return {**body, "model": route["deployment"]}


def _same(completion: dict[str, Any]) -> dict[str, Any]:
    return completion


#: Every protocol the stand-in speaks, by name.
PROTOCOLS = {
    "chat": Protocol("chat", _chat_request, _same),
    "anthropic": Protocol(
        "anthropic", _anthropic_request, _anthropic_response, 529, (("x-api-key", ""),)
    ),
    "responses": Protocol("responses", _responses_request, _responses_response),
    "gemini": Protocol("gemini", _gemini_request, _gemini_response, 503, (("x-goog-api-key", ""),)),
    "bedrock": Protocol(
        "bedrock",
        _bedrock_request,
        _bedrock_response,
        503,
        (("Authorization", "AWS4-HMAC-SHA256 Credential="), ("Authorization", "Bearer ")),
    ),
    "azure": Protocol("azure", _azure_request, _same, 503, (("api-key", ""),)),
}
