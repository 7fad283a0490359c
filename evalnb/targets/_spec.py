"""The HTTP target an experiment's ``[target]`` table (or ``evalnb run``'s flags) names.

``type`` (``--target``) picks the protocol; ``base_url`` (``--base-url``) or the stand-in
(``--standin``, which speaks every protocol) the server; ``model``, ``api_key_env``,
``params``, ``timeout`` and ``max_retries`` are every target's; ``region`` is Bedrock's,
``api_version`` Azure's, ``headers`` and ``query`` go with every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb.targets._anthropic import AnthropicMessages
from evalnb.targets._azure import AzureOpenAIChat
from evalnb.targets._bedrock import BedrockConverse
from evalnb.targets._gemini import GeminiGenerateContent
from evalnb.targets._http import HTTPTarget
from evalnb.targets._openai import OpenAIChat
from evalnb.targets._responses import OpenAIResponses
from evalnb.targets._routed import ByVariant

__all__ = ["TARGET_TYPES", "http_target"]

#: Each ``type`` (``--target``) and the target it makes.
TARGET_TYPES: dict[str, type[HTTPTarget]] = {
    "openai": OpenAIChat,
    "anthropic": AnthropicMessages,
    "responses": OpenAIResponses,
    "gemini": GeminiGenerateContent,
    "bedrock": BedrockConverse,
    "azure": AzureOpenAIChat,
}

#: The address of each protocol when no ``base_url`` is given (None: one must be).
_DEFAULT_URL = {
    "anthropic": "https://api.anthropic.com/v1",
    "responses": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta",
}
#: What a variant's own target table may hold.
_VARIANT_KEYS = (
    "type",
    "base_url",
    "model",
    "api_key_env",
    "params",
    "timeout",
    "max_retries",
    "region",
    "api_version",
    "headers",
    "query",
)
#: Where the stand-in serves each protocol, under its root.
_STANDIN_PATH = {"gemini": "/v1beta", "bedrock": "", "azure": ""}


def http_target(spec: Mapping[str, Any], server: str | None) -> HTTPTarget | ByVariant:
    """The target ``spec`` describes, on ``server`` (the stand-in's ``/v1`` URL when
    ``spec["standin"]``); errors name the field, what it must be and what it was.

    ``spec["variants"]`` maps variant names to their own target tables (each on its own
    ``base_url``, else its vendor's): the run's target is then a :class:`ByVariant`, whose
    default is the run's own target when one is named.
    """
    own = spec.get("variants")
    if own:
        rest = {k: v for k, v in spec.items() if k != "variants"}
        named = server is not None or (rest.get("type") or "openai") != "openai"
        for name, table in own.items():
            unknown = sorted(set(table) - set(_VARIANT_KEYS))
            if unknown:
                raise ArgumentError(
                    f"'variants[{name!r}].target' keys must be among {', '.join(_VARIANT_KEYS)}; "
                    f"got {unknown!r}"
                )
        targets = {
            name: _one({**table, "standin": False}, table.get("base_url"), f"variants[{name!r}].")
            for name, table in own.items()
        }
        return ByVariant(targets, _one(rest, server) if named else None)
    return _one(spec, server)


def _one(spec: Mapping[str, Any], server: str | None, where: str = "") -> HTTPTarget:
    kind = spec.get("type") or "openai"
    if kind not in TARGET_TYPES:
        names = ", ".join(repr(t) for t in TARGET_TYPES)
        raise ArgumentError(f"'target.{where}type' (--target) must be one of {names}; got {kind!r}")
    if server is not None and spec.get("standin") and kind in _STANDIN_PATH:
        server = server.removesuffix("/v1") + _STANDIN_PATH[kind]
    server = server or _DEFAULT_URL.get(kind)
    if server is None and kind != "bedrock":
        raise ArgumentError(
            "choose a target: --standin, --base-url URL or --command 'ARGV'"
            if kind == "openai"
            else f"--target {kind} needs the server's URL: --base-url URL (or --standin)"
        )
    model = spec.get("model")
    if kind != "openai" and not model:
        raise ArgumentError(f"--target {kind} needs the model: --model NAME; got {model!r}")
    options: dict[str, Any] = {
        k: spec[k]
        for k in ("timeout", "max_retries", "headers", "query")
        if spec.get(k) is not None
    }
    options.update(api_key_env=spec.get("api_key_env"), params=spec.get("params") or {})
    if kind == "bedrock":
        # The stand-in checks the signature's form, not its region: any region will do.
        region = spec.get("region") or ("us-east-1" if spec.get("standin") else None)
        return BedrockConverse(str(model), region=region, base_url=server, **options)
    url = str(server)
    if kind == "azure":
        version = {"api_version": spec["api_version"]} if spec.get("api_version") else {}
        return AzureOpenAIChat(url, str(model), **version, **options)
    if kind == "anthropic":
        return AnthropicMessages(str(model), base_url=url, **options)
    if kind == "gemini":
        return GeminiGenerateContent(str(model), base_url=url, **options)
    return TARGET_TYPES[kind](url, model, **options)
