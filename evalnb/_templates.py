"""Jinja2 templates rendered in a bounded sandbox: a template from someone else's suite can
neither escape nor take the machine.

Jinja2's :class:`~jinja2.sandbox.SandboxedEnvironment` keeps a template from Python's
internals; here it is also bounded:

- output: at most :data:`MAX_OUTPUT` characters, for the rendered text and for every string
  or list an operator (``*``, ``+``, ``~``, ``%``) or a sizing filter or method (``center``,
  ``indent``, ``replace``, ``format``...) would make, refused before it is made;
- numbers: ``**`` and ``*`` on integers refused past :data:`MAX_BITS` bits (and never folded
  at compile time, where ``{{ 9 ** (9 ** 9) }}`` would hang);
- loops: at most :data:`MAX_ITERATIONS` steps of ``range`` in one rendering;
- time: :data:`RENDER_SECONDS` seconds of wall clock, after which the rendering thread is
  interrupted; :func:`interrupt_renders` (Ctrl-C or SIGTERM during a run) ends them at once.

A template over a bound is a ``ValueError`` in one line naming the bound.
"""

from __future__ import annotations

import ctypes
import functools
import math
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from evalnb._exceptions import ArgumentError

__all__ = [
    "MAX_BITS",
    "MAX_ITERATIONS",
    "MAX_OUTPUT",
    "RENDER_SECONDS",
    "check_template",
    "interrupt_renders",
    "render_template",
]

#: The most characters a rendering, or any string or list made while rendering, may hold.
MAX_OUTPUT = 1_000_000
#: The most bits an integer made by ``**`` or ``*`` may have.
MAX_BITS = 4096
#: The most ``range`` steps one rendering may take, all loops together.
MAX_ITERATIONS = 1_000_000
#: The most seconds one rendering may take.
RENDER_SECONDS = 4.0

#: A ``%`` format whose width or precision is ``*`` or has more than 5 digits.
_WIDE_FORMAT = re.compile(r"%[-#0 +]*(\*|\d{6,})|\.(\*|\d{6,})")


class _Namespace(dict[str, Any]):
    """A mapping a template reaches by a name (``vars``), so that a missing key is
    reported as ``'vars.x' is undefined`` rather than as a dict's missing attribute."""

    def __init__(self, name: str, values: Mapping[str, Any]):
        super().__init__(values)
        self.evalnb_name = name


class _Over(Exception):
    """A bound was reached; the message says which."""


class _Stopped(Exception):
    """Raised inside a rendering thread whose time ran out."""


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple) else 0


def _refuse_size(size: float, what: str) -> None:
    if size > MAX_OUTPUT:
        raise _Over(f"{what} would make {size:.3g} characters (the limit is {MAX_OUTPUT:,})")


def _binop(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would pass a bound, before it is computed."""
    ints = isinstance(left, int) and isinstance(right, int)
    if operator == "**" and ints and right > 0 and abs(left) > 1:
        if right * math.log2(abs(left)) > MAX_BITS:
            raise _Over(f"{left} ** {right} is past the {MAX_BITS}-bit limit on numbers")
    elif operator == "*" and ints:
        if left.bit_length() + right.bit_length() > MAX_BITS:
            raise _Over(f"a product past the {MAX_BITS}-bit limit on numbers")
    elif operator == "*":
        count = right if isinstance(left, str | list | tuple) else left
        if isinstance(count, int):
            _refuse_size(max(_size(left), _size(right)) * count, "a repetition")
    elif operator == "+":
        _refuse_size(_size(left) + _size(right), "a concatenation")
    elif operator == "%" and isinstance(left, str) and _WIDE_FORMAT.search(left):
        raise _Over("a '%' format with a width or precision past 5 digits")


def _replaced(text: str, old: str, new: str, count: int = -1) -> float:
    found = text.count(old) if old else len(text) + 1
    if count >= 0:
        found = min(found, count)
    return len(text) + found * max(0, len(new) - len(old))


def _method(obj: Any, args: tuple[Any, ...]) -> None:
    """Refuse a ``str`` method call whose result would pass :data:`MAX_OUTPUT`."""
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    if not isinstance(owner, str):
        return
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str):
        _refuse_size(_replaced(owner, args[0], str(args[1]), *args[2:3]), "replace")
    elif name in ("center", "ljust", "rjust", "zfill") and args and isinstance(args[0], int):
        _refuse_size(args[0], name)
    elif name == "expandtabs":
        _refuse_size(len(owner) * (args[0] if args and isinstance(args[0], int) else 8), name)
    elif name in ("format", "format_map"):
        _refuse_size(len(owner) + sum(_size(a) for a in args), name)


@functools.cache
def _environment() -> Any:
    # Imported here: only cases with templates or choices pay for Jinja2.
    from jinja2 import StrictUndefined
    from jinja2.compiler import CodeGenerator
    from jinja2.filters import FILTERS
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment
    from jinja2.utils import missing

    class Undefined(StrictUndefined):
        @property
        def _undefined_message(self) -> str:
            owner = self._undefined_obj
            if isinstance(owner, _Namespace):
                return f"variable '{owner.evalnb_name}.{self._undefined_name}' is undefined"
            if self._undefined_hint is None and owner is missing:
                return f"variable {self._undefined_name!r} is undefined"
            return str(super()._undefined_message)

    class Generator(CodeGenerator):
        def visit_Concat(self, node: Any, frame: Any) -> None:
            # ``a ~ b``, sized before it is joined (Jinja2 joins with str_join).
            self.write("environment.joined((")
            for part in node.nodes:
                self.visit(part, frame)
                self.write(", ")
            self.write("))")

    class Bounded(ImmutableSandboxedEnvironment):
        # Immutable: no list.append or dict.update to grow memory a step at a time.
        # Intercepted operators are never folded at compile time either.
        intercepted_binops = frozenset(["**", "*", "+", "%"])
        code_generator_class = Generator

        @staticmethod
        def joined(parts: tuple[Any, ...]) -> str:
            texts = [p if isinstance(p, str) else str(p) for p in parts]
            _refuse_size(sum(len(t) for t in texts), "a '~' join")
            return "".join(texts)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            _method(__obj, args)
            result = SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs)
            _refuse_size(_size(result), "a call")
            return result

    env = Bounded(undefined=Undefined, keep_trailing_newline=True, autoescape=False)
    env.globals["range"] = _counted_range
    env.filters.update(_bounded_filters(FILTERS))
    return env


def _bounded_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The filters that size their output from an argument, checked first."""

    def sized(name: str, size: Any) -> Any:
        original = filters[name]

        @functools.wraps(original)
        def check(*args: Any, **kwargs: Any) -> Any:
            _refuse_size(size(*args, **kwargs), f"the {name} filter")
            return original(*args, **kwargs)

        return check

    def text(value: Any) -> str:
        return value if isinstance(value, str) else str(value)[: MAX_OUTPUT + 1]

    def whole(value: Any, default: int) -> int:
        return value if isinstance(value, int) else default

    return {
        "center": sized("center", lambda v, width=80: whole(width, 80)),
        "indent": sized(
            "indent",
            lambda v, width=4, *a, **k: len(text(v)) * (1 + _size(width) + whole(width, 0)),
        ),
        "replace": sized(
            "replace",
            lambda e, v, old, new, count=None: _replaced(
                text(v), str(old), str(new), whole(count, -1)
            ),
        ),
        "wordwrap": sized("wordwrap", lambda e, v, *a, **k: 2 * len(text(v))),
        "format": sized(
            "format",
            lambda v, *a, **k: MAX_OUTPUT + 1 if _WIDE_FORMAT.search(text(v)) else 0,
        ),
    }


_counter = threading.local()


def _counted_range(*args: Any) -> Any:
    """``range`` whose steps count against :data:`MAX_ITERATIONS` for the rendering."""
    from jinja2.sandbox import MAX_RANGE, safe_range

    try:
        values = safe_range(*args)
    except OverflowError:
        raise _Over(f"a range of more than {MAX_RANGE:,} numbers") from None
    for value in values:
        _counter.steps = getattr(_counter, "steps", 0) + 1
        if _counter.steps > MAX_ITERATIONS:
            raise _Over(f"the loops took over {MAX_ITERATIONS:,} steps")
        yield value


@functools.lru_cache(maxsize=512)
def _compiled(source: str) -> Any:
    from jinja2 import TemplateSyntaxError

    try:
        return _environment().from_string(source)
    except TemplateSyntaxError as exc:
        raise ArgumentError(
            f"is not a valid template ({exc.message} at line {exc.lineno})"
        ) from None


def check_template(source: str) -> None:
    """A ``ValueError`` when ``source`` is not a valid template (``is not a valid template
    (unexpected '}' at line 1)``)."""
    _compiled(source)


def render_template(source: str, context: Mapping[str, Any]) -> str:
    """Render Jinja2 ``source`` in a bounded sandbox (see the module); any undefined
    variable is an error.

    Errors are ``ValueError`` with a short message the caller prefixes with the field:
    ``variable 'question' is undefined``, ``variable 'vars.city' is undefined``,
    ``is not a valid template (unexpected '}' at line 1)``, ``took over 4 s to render``.

    >>> render_template("Hello {{ name }}", {"name": "Ada"})
    'Hello Ada'
    """
    from jinja2 import TemplateError

    template = _compiled(source)
    _counter.steps = 0
    try:
        with _Deadline():
            parts, size = [], 0
            for part in template.generate(context):
                size += len(part)
                _refuse_size(size, "the rendered text")
                parts.append(part)
            return "".join(parts)
    except TemplateError as exc:
        raise ArgumentError(" ".join(str(exc.message).split())) from None
    except _Over as exc:
        raise ArgumentError(f"is refused: {exc}") from None
    except _Stopped:
        raise ArgumentError(f"took over {RENDER_SECONDS:g} s to render (the limit)") from None
    except (OverflowError, ArithmeticError, RecursionError, MemoryError) as exc:
        raise ArgumentError(f"cannot be rendered: {type(exc).__name__}: {exc}") from None


# -- the wall clock ---------------------------------------------------------------------

_lock = threading.Lock()
#: Rendering threads by id, each with its deadline.
_active: dict[int, float] = {}
_monitor: threading.Thread | None = None


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    """Raise ``exception`` in the thread at its next bytecode (None: withdraw it)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception else None
    )


def _watch() -> None:
    while True:
        time.sleep(0.05)
        now = time.monotonic()
        with _lock:
            for thread_id, deadline in list(_active.items()):
                if now > deadline:
                    del _active[thread_id]
                    _raise_in(thread_id, _Stopped)


class _Deadline:
    """The rendering thread is stopped once :data:`RENDER_SECONDS` have passed."""

    def __enter__(self) -> None:
        global _monitor
        self.thread = threading.get_ident()
        with _lock:
            _active[self.thread] = time.monotonic() + RENDER_SECONDS
            if _monitor is None:
                _monitor = threading.Thread(target=_watch, name="evalnb-templates", daemon=True)
                _monitor.start()

    def __exit__(self, *exc: object) -> None:
        with _lock:
            fired = _active.pop(self.thread, None) is None
            if fired and exc[0] is None:  # it finished as its time ran out: withdraw it
                _raise_in(self.thread, None)


def interrupt_renders() -> None:
    """End every rendering in progress now with ``KeyboardInterrupt`` (a run was
    interrupted while a template rendered)."""
    with _lock:
        for thread_id in list(_active):
            del _active[thread_id]
            _raise_in(thread_id, KeyboardInterrupt)
