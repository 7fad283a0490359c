"""promptfoo's code, similarity and cost graders as evalnb checks.

- ``python`` (inline, or ``file://grader.py`` / ``file://grader.py:fn``, default
  ``get_assert``) becomes a ``python_code`` check holding the source;
- ``javascript`` (inline, or ``file://grader.js`` / ``:fn``) a ``javascript`` check run
  by Node.js; ``options.transform`` and an assertion's ``transform`` go with it;
- ``similar`` a ``similar`` check (embeddings; its ``threshold``, default 0.75);
- ``latency`` (``threshold`` in ms) and ``cost`` (``threshold`` in dollars) the checks
  of those names;
- a lexical assertion with a transform becomes a ``javascript`` check doing the same test
  on the transformed output (approximated: promptfoo compares the output's text form).

Each function returns ``(spec, how)``: the check and, when it is an approximation, how.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalnb._exceptions import ArgumentError

__all__ = ["CODE", "GRADERS", "code_reference", "grader_spec", "transformed_spec"]

#: Assertion types this module maps, and what each becomes.
GRADERS = {
    "python": "python_code (promptfoo's output and context passed)",
    "javascript": "javascript (run by Node.js; output and context passed)",
    "similar": "similar (embedding cosine >= threshold, default 0.75)",
    "latency": "latency (max_ms = threshold)",
    "cost": "cost (max_usd = threshold; priced from a price table)",
}

#: Types whose value is code, read from ``file://`` with an optional ``:function``.
CODE = {"python": (".py", "get_assert"), "javascript": (".js", "default")}

_JSON_PARSE = re.compile(r"^\s*JSON\.parse\(\s*output\s*\)\s*;?\s*$")


def code_reference(ref: str, kind: str) -> tuple[str, str | None]:
    """``file://x.py:fn`` as ``("file://x.py", "fn")``; no function named: None."""
    suffix = CODE[kind][0]
    head, colon, tail = ref.rpartition(":")
    if colon and head.endswith(suffix) and re.fullmatch(r"[A-Za-z_$][\w$]*", tail):
        return head, tail
    return ref, None


def _threshold(raw: dict[str, Any]) -> float | None:
    value = raw.get("threshold")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentError(f"'threshold' must be a number; got {value!r}")
    return float(value)


def grader_spec(
    kind: str,
    raw: dict[str, Any],
    value: Any,
    function: str | None,
    transforms: list[str],
) -> tuple[dict[str, Any], str | None]:
    """The check for a ``python``/``javascript``/``similar``/``latency``/``cost``
    assertion whose (file-resolved) value is ``value``."""
    threshold = _threshold(raw)
    spec: dict[str, Any]
    how = None
    if kind in CODE:
        if not isinstance(value, str) or not value.strip():
            raise ArgumentError(f"'value' must be {kind} code; got {value!r}")
        spec = {"type": "python_code" if kind == "python" else "javascript", "code": value}
        if function is not None:
            spec["function"] = function
        if threshold is not None:
            spec["threshold"] = threshold
        if transforms and kind == "javascript":
            spec["transform"] = transforms
        elif transforms:
            if not all(_JSON_PARSE.match(t) for t in transforms):
                raise ArgumentError(
                    f"a transform {transforms[0]!r} before a python grader: evalnb applies only "
                    "JSON.parse(output) there"
                )
            spec["json_output"] = True
        return spec, how
    if kind == "similar":
        texts = value if isinstance(value, list) else [value]
        if not texts or not all(isinstance(t, str | int | float) and str(t) for t in texts):
            raise ArgumentError(f"'value' must be text or a list of texts; got {value!r}")
        spec = {"type": "similar", "value": [str(t) for t in texts]}
        if threshold is not None:
            spec["threshold"] = threshold
        if raw.get("provider") is not None:
            how = "its own embedding provider is not used: the run's embeddings server is"
        return spec, how
    if threshold is None or threshold < 0:
        raise ArgumentError(f"a {kind} assertion needs a 'threshold' >= 0; got {threshold!r}")
    if kind == "latency":
        return {"type": "latency", "max_ms": threshold}, how
    how = "evalnb prices the answer's token usage from a price table ('prices' in the check)"
    return {"type": "cost", "max_usd": threshold}, how


def _js(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


#: Lexical assertions as JavaScript over ``s`` (the output's text) and ``v`` (the value).
_LEXICAL: dict[str, Callable[[str], str]] = {
    "equals": lambda v: f"s === {v}",
    "contains": lambda v: f"s.includes({v})",
    "icontains": lambda v: f"s.toLowerCase().includes(String({v}).toLowerCase())",
    "contains-any": lambda v: f"{v}.some((x) => s.includes(x))",
    "icontains-any": lambda v: f"{v}.some((x) => s.toLowerCase().includes(x.toLowerCase()))",
    "contains-all": lambda v: f"{v}.every((x) => s.includes(x))",
    "icontains-all": lambda v: f"{v}.every((x) => s.toLowerCase().includes(x.toLowerCase()))",
    "starts-with": lambda v: f"s.startsWith({v})",
    "regex": lambda v: f"new RegExp({v}).test(s)",
}


def transformed_spec(
    kind: str, value: Any, transforms: list[str]
) -> tuple[dict[str, Any], str] | None:
    """A lexical assertion after a transform, as a ``javascript`` check; None when the
    type has no such form (the caller refuses it, naming the transform)."""
    negate = kind.startswith("not-")
    base = kind.removeprefix("not-")
    if base not in _LEXICAL:
        return None
    if base.endswith(("-any", "-all")):
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            raise ArgumentError(f"'value' must be a list or comma-separated text; got {value!r}")
        literal = _js([str(v).strip() for v in items])
    else:
        if not isinstance(value, str | int | float) or value == "":
            raise ArgumentError(f"'value' must be non-empty text; got {value!r}")
        literal = _js(str(value))
    test = _LEXICAL[base](literal)
    code = (
        "const s = typeof output === 'string' ? output : JSON.stringify(output);\n"
        f"return {'!' if negate else ''}({test});"
    )
    how = (
        f"run in Node.js after the transform {transforms[-1]!r}; a transformed value that "
        "is not text is compared as its JSON text"
    )
    return {"type": "javascript", "code": code, "transform": transforms}, how


def code_file_suffix_ok(kind: str, path: Path) -> bool:
    """Whether ``path`` is the kind of file a ``kind`` grader reads."""
    return path.suffix == CODE[kind][0]
