"""Targets turn a request into a completion; each has one method, ``complete``.

A target may also offer ``describe()`` (an awaitable returning JSON-ready facts for
the manifest, secrets removed) and be an async context manager that opens and closes
its resources; the runner uses both when present. A failure the target understands
raises :class:`~evalnb.TargetError` with the sample status to record.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from evalnb._types import Completion, Request
from evalnb.targets.command import Command
from evalnb.targets.function import Function
from evalnb.targets.openai import OpenAIChat

__all__ = ["Command", "Function", "OpenAIChat", "Target"]


@runtime_checkable
class Target(Protocol):
    """Anything with ``async complete(request) -> Completion``."""

    async def complete(self, request: Request) -> Completion: ...
