"""One target per variant: a comparison of providers (an imported promptfoo config)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._types import Completion, Request

__all__ = ["ByVariant"]


class ByVariant:
    """Send each request to its variant's target in ``targets``, or to ``default``.

    The variants of one run then reach different models, each through its own protocol
    (Anthropic's beside OpenAI's): the comparison is of the providers, which the manifest
    records one by one under ``variants``.

    >>> ByVariant(
    ...     {"claude": AnthropicMessages("claude-sonnet-4-5", api_key_env="ANTHROPIC_API_KEY")},
    ...     default=OpenAIChat("http://127.0.0.1:8080/v1", "gemma"),
    ... )  # doctest: +SKIP
    """

    def __init__(self, targets: Mapping[str, Any], default: Any = None):
        if not isinstance(targets, Mapping) or not targets:
            raise ArgumentError(f"'targets' must map variant names to targets; got {targets!r}")
        for name, target in {**targets, "default": default}.items():
            if target is not None and not callable(getattr(target, "complete", None)):
                raise ArgumentError(
                    f"'targets[{name!r}]' must have an async complete(request); "
                    f"got {type(target).__name__}"
                )
        self.targets = dict(targets)
        self.default = default
        self._stack: contextlib.AsyncExitStack | None = None

    async def complete(self, request: Request) -> Completion:
        target = self.targets.get(request.variant.name, self.default)
        if target is None:
            known = ", ".join(repr(n) for n in self.targets)
            raise ArgumentError(
                f"variant {request.variant.name!r} has no target (targets: {known}) and "
                "there is no default: give the run a target (--standin, --base-url ...)"
            )
        completion: Completion = await target.complete(request)
        return completion

    def _all(self) -> list[Any]:
        return [t for t in (*self.targets.values(), self.default) if t is not None]

    async def __aenter__(self) -> ByVariant:
        self._stack = contextlib.AsyncExitStack()
        for target in self._all():
            if hasattr(target, "__aenter__"):
                await self._stack.enter_async_context(target)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None

    async def describe(self) -> dict[str, Any]:
        """Each variant's target as it describes itself, and the default's."""

        async def one(target: Any) -> Any:
            if target is None:
                return None
            describe = getattr(target, "describe", None)
            return await describe() if describe else {"type": type(target).__name__}

        variants = {name: await one(t) for name, t in self.targets.items()}
        return {"type": "by-variant", "variants": variants, "default": await one(self.default)}
