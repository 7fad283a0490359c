"""Amazon Bedrock's Converse API (``POST {base_url}/model/{model}/converse``), a thin client on
the HTTP layer whose requests botocore signs (SigV4)."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

import httpx

from evalnb._exceptions import ArgumentError
from evalnb._secrets import register
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

__all__ = ["BedrockConverse"]

#: Bedrock's stop reasons in the chat vocabulary the runner reads.
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
#: Chat params and their ``inferenceConfig`` names.
INFERENCE = {
    "max_tokens": "maxTokens",
    "max_completion_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
}


def _block(part: Any) -> Any:
    """A chat content part as a Converse block (an image from a data URL as its bytes)."""
    image = image_of(part)
    if image is not None and image[1] is not None:
        kind = image[1].rsplit("/", 1)[-1].replace("jpg", "jpeg")
        return {"image": {"format": kind, "source": {"bytes": image[2]}}}
    if isinstance(part, Mapping) and part.get("type") == "text":
        return {"text": part.get("text", "")}
    return dict(part) if isinstance(part, Mapping) else part


def _content(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One chat message's content as Converse content blocks."""
    if message.get("role") == "tool":
        text = result_text(message.get("content"))
        result = {"toolUseId": message.get("tool_call_id"), "content": [{"text": text}]}
        return [{"toolResult": result}]
    content = message.get("content")
    blocks = (
        [_block(p) for p in content]
        if isinstance(content, list)
        else ([{"text": content}] if content else [])
    )
    for call in message.get("tool_calls") or ():
        use = {"toolUseId": call.get("id"), "name": call["function"]["name"]}
        blocks.append({"toolUse": {**use, "input": arguments_of(call)}})
    return blocks


def _configs(params: dict[str, Any]) -> dict[str, Any]:
    """``inferenceConfig`` and ``toolConfig`` from the chat params (taken out of ``params``)."""
    inference = {INFERENCE[k]: params.pop(k) for k in list(params) if k in INFERENCE}
    if "stop" in params:
        inference["stopSequences"] = stop_list(params.pop("stop"))
    out: dict[str, Any] = {"inferenceConfig": inference} if inference else {}
    if "tools" in params:
        functions, native = function_tools(params.pop("tools"))
        specs = [
            {"name": n, **({"description": d} if d else {}), "inputSchema": {"json": s}}
            for n, d, s in functions
        ]
        out["toolConfig"] = {"tools": [{"toolSpec": s} for s in specs] + native}
        choice = tool_choice(params.pop("tool_choice", None))
        if choice is not None and choice[0] != "none":
            mode, name = choice
            out["toolConfig"]["toolChoice"] = (
                {"tool": {"name": name}} if name else {"any" if mode == "required" else mode: {}}
            )
    return out


class BedrockConverse(HTTPTarget):
    """POST ``{base_url}/model/{model}/converse`` (Amazon Bedrock's Converse API), signed.

    System messages become ``system``, the others ``messages`` of content blocks (a tool call
    a ``toolUse`` block, a tool result a ``toolResult``); ``max_tokens``, ``temperature``,
    ``top_p`` and ``stop`` go into ``inferenceConfig``, chat-form ``tools`` and
    ``tool_choice`` into ``toolConfig``; any other param is sent as it is
    (``additionalModelRequestFields``...). The model (an id or an inference profile) is in
    the URL. ``base_url`` defaults to ``https://bedrock-runtime.{region}.amazonaws.com``.

    Each request is signed with SigV4 by botocore (``pip install 'evalnb[bedrock]'``), with
    the credentials botocore finds (``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``, a
    ``profile``...) and ``region`` (else botocore's: ``AWS_REGION``...); the secret key and
    session token are redacted from everything stored. ``api_key_env`` names a Bedrock API
    key instead, sent as a bearer token and not signed. Every other option is
    :class:`~evalnb.OpenAIChat`'s.

    >>> BedrockConverse(
    ...     "anthropic.claude-3-5-haiku-20241022-v1:0", region="us-east-1"
    ... )  # doctest: +SKIP
    """

    kind = "bedrock"
    shape = "a Bedrock Converse response"
    model_in_route = True

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        base_url: str | None = None,
        profile: str | None = None,
        api_key_env: str | None = None,
        **options: Any,
    ):
        try:
            import botocore.session
        except ImportError:
            raise ArgumentError(
                "BedrockConverse signs its requests with botocore, which is not installed: "
                "pip install 'evalnb[bedrock]'"
            ) from None
        session = botocore.session.Session(profile=profile)
        self.region = region or session.get_config_variable("region")
        if not self.region:
            raise ArgumentError("'region' must name an AWS region (or set AWS_REGION); got None")
        self.profile = profile
        self._credentials = None if api_key_env is not None else session.get_credentials()
        if api_key_env is None and self._credentials is None:
            raise ArgumentError(
                "BedrockConverse found no AWS credentials: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, name a 'profile', or give 'api_key_env'"
            )
        url = base_url or f"https://bedrock-runtime.{self.region}.amazonaws.com"
        super().__init__(url, model, api_key_env=api_key_env, **options)

    def _route(self, model: str | None) -> str:
        return f"/model/{urllib.parse.quote(str(model), safe='')}/converse"

    def _signed(self, url: httpx.URL, headers: dict[str, str], content: bytes) -> dict[str, str]:
        if self._credentials is None:
            return headers
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        frozen = self._credentials.get_frozen_credentials()
        register(frozen.secret_key)
        register(frozen.token)
        signed = AWSRequest(
            "POST", str(url), data=content, headers={"Content-Type": "application/json"}
        )
        SigV4Auth(frozen, "bedrock", self.region).add_auth(signed)
        return {**headers, **dict(signed.headers)}

    def _build(
        self, messages: list[dict[str, Any]], model: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        system, rest = split_system(messages)
        turns = [
            {"role": "user" if m.get("role") == "tool" else m.get("role"), "content": _content(m)}
            for m in rest
        ]
        body: dict[str, Any] = {"messages": merged_turns(turns, "content")}
        if system is not None:
            body["system"] = [{"text": system}]
        return {**body, **_configs(params), **params}

    def _read(self, data: Any, model: str | None) -> dict[str, Any]:
        blocks = data["output"]["message"]["content"]
        usage = data.get("usage") or {}
        return reply(
            "".join(b["text"] for b in blocks if "text" in b),
            (
                ToolCall(
                    b["toolUse"].get("toolUseId"),
                    b["toolUse"]["name"],
                    json.dumps(b["toolUse"].get("input") or {}),
                )
                for b in blocks
                if "toolUse" in b
            ),
            model=model,
            finish=FINISH.get(data.get("stopReason"), data.get("stopReason")),
            prompt=usage.get("inputTokens"),
            completion=usage.get("outputTokens"),
            total=usage.get("totalTokens"),
        )

    def _settings(self) -> dict[str, Any]:
        signing = "bearer" if self._credentials is None else "sigv4"
        return {"region": self.region, "profile": self.profile, "auth": signing}
