"""A Python callable as a target."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from evalnb._exceptions import TargetError
from evalnb._types import Completion, Request

__all__ = ["Function"]


class Function:
    """Wrap ``fn(request)`` (sync or async) returning text or a :class:`Completion`.

    A sync callable runs in a worker thread so that it never blocks the other samples;
    pass ``threaded=False`` for a function that returns at once.

    >>> target = Function(lambda request: request.prompt.upper())
    """

    def __init__(
        self, fn: Callable[[Request], Any], *, threaded: bool = True, name: str | None = None
    ):
        if not callable(fn):
            raise TypeError(f"'fn' must be callable; got {fn!r}")
        self.fn = fn
        self.threaded = threaded
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  (an async __call__ counts)
        )

    async def complete(self, request: Request) -> Completion:
        if self._is_async:
            result = await self.fn(request)
        elif self.threaded:
            result = await asyncio.to_thread(self.fn, request)
        else:
            result = self.fn(request)
        if isinstance(result, Completion):
            return result
        if isinstance(result, str):
            return Completion(text=result)
        raise TargetError(
            f"function target {self.name!r} must return str or Completion; "
            f"got {type(result).__name__}"
        )

    async def describe(self) -> dict[str, Any]:
        module = getattr(self.fn, "__module__", None)
        return {"type": "function", "function": f"{module}.{self.name}", "async": self._is_async}
