"""Targets turn a request into a completion; each has one method, ``complete``.

A target may also offer ``describe()`` (an awaitable returning JSON-ready facts for
the manifest, secrets removed) and be an async context manager that opens and closes
its resources; the runner uses both when present. A failure the target understands
raises :class:`~evalnb.TargetError` with the sample status to record.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from evalnb._types import Completion, Request
from evalnb.targets._anthropic import AnthropicMessages
from evalnb.targets._azure import AzureOpenAIChat
from evalnb.targets._bedrock import BedrockConverse
from evalnb.targets._cache import ResponseCache
from evalnb.targets._command import Command
from evalnb.targets._containment import Containment
from evalnb.targets._embeddings import OpenAIEmbeddings
from evalnb.targets._function import Function
from evalnb.targets._gemini import GeminiGenerateContent
from evalnb.targets._openai import OpenAIChat
from evalnb.targets._responses import OpenAIResponses
from evalnb.targets._routed import ByVariant
from evalnb.targets._spec import TARGET_TYPES, http_target

__all__ = [
    "TARGET_TYPES",
    "AnthropicMessages",
    "AzureOpenAIChat",
    "BedrockConverse",
    "ByVariant",
    "Command",
    "Containment",
    "CountingTarget",
    "Function",
    "GeminiGenerateContent",
    "OpenAIChat",
    "OpenAIEmbeddings",
    "OpenAIResponses",
    "ResponseCache",
    "Target",
    "http_target",
]


@runtime_checkable
class Target(Protocol):
    """Anything with ``async complete(request) -> Completion``."""

    async def complete(self, request: Request) -> Completion: ...


class CountingTarget:
    """``target`` counting the calls made to it (the judge's, for the manifest)."""

    def __init__(self, target: Target):
        self.target = target
        self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        return await self.target.complete(request)
