"""The code a promptfoo assertion carries: what promptfoo's ``runAssertion`` would run as
JavaScript (or hand to Python or Ruby) inside the grading worker.

A ``promptfoo`` check whose assertion holds any of these is suite code under the trust rule
(:mod:`evalnb.checks._trust`), as a ``python_code`` check is:

- the value of a ``javascript``, ``python`` or ``ruby`` assertion (``not-`` ones too);
- a ``transform`` or ``contextTransform`` (and an ``options.transform`` / ``postprocess``);
- a value that names a module (``package:name:function``) or a code file
  (``file://x.js``, ``.py``, ``.rb``), and a ``rubricPrompt`` that names a JavaScript file;
- a template that calls something (a ``(`` inside ``{{ }}`` or ``{% %}``): promptfoo
  renders values with Nunjucks, whose expressions reach JavaScript's constructors;
- each of the above inside an ``assert-set``.

Plain templates (``{{ topic }}``, ``{{ answer | lower }}``) are data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["assertion_code", "code_kinds", "for_worker", "template_hazard"]

#: Assertion types whose value is a program.
SCRIPTS = ("javascript", "python", "ruby")
#: The extensions of files promptfoo loads as code.
CODE_FILES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".jsx", ".tsx", ".py", ".rb")
#: Fields whose value promptfoo runs as a JavaScript function.
TRANSFORMS = ("transform", "contextTransform")


#: Words a ``(`` may follow in a template without calling anything: ``{% if (a) %}``.
_KEYWORDS = frozenset({"if", "elif", "elseif", "in", "and", "or", "not", "is", "for", "set"})


def _called(block: str, at: int) -> bool:
    """Whether the ``(`` at ``block[at]`` calls something: it follows a name (not a keyword,
    not a built-in filter after ``|``: ``x | join(", ")``), or a ``)``, ``]`` or quote
    (``f()()``, ``x['k']()``); a ``(`` that groups (``(x | load).tone``) calls nothing."""
    i = at - 1
    while i >= 0 and block[i].isspace():
        i -= 1
    if i < 0:
        return False
    if block[i] in ")]'\"":
        return True
    if not (block[i].isalnum() or block[i] in "_$"):
        return False
    end = i + 1
    while i >= 0 and (block[i].isalnum() or block[i] in "_$"):
        i -= 1
    if block[i + 1 : end] in _KEYWORDS:
        return False
    while i >= 0 and block[i].isspace():
        i -= 1
    return not (i >= 0 and block[i] == "|")


def _calls(text: str) -> bool:
    """Whether a ``{{ }}`` or ``{% %}`` block of ``text`` calls a function or method (a
    filter of promptfoo's own, with or without arguments, is not a call of the suite's)."""
    for opening, closing in (("{{", "}}"), ("{%", "%}")):
        start = text.find(opening)
        while start != -1:
            end = text.find(closing, start + 2)
            if end == -1:
                break
            block = text[start + 2 : end]
            at = block.find("(")
            while at != -1:
                if _called(block, at):
                    return True
                at = block.find("(", at + 1)
            start = text.find(opening, end + 2)
    return False


_LOOP_TAG = re.compile(r"\{%-?\s*(end)?for\b")


def template_hazard(text: str) -> str | None:
    """What in the template ``text`` promptfoo's Nunjucks would run beyond rendering data
    (None: nothing): a call (``{{ x.constructor.constructor('...')() }}`` is JavaScript
    there), or a loop inside a loop (its work grows as a power of the data, with none of
    the bounds evalnb's own templates render under)."""
    if _calls(text):
        return "calls a function in a template (promptfoo's Nunjucks runs it as JavaScript)"
    depth = 0
    for tag in _LOOP_TAG.finditer(text):
        depth = depth - 1 if tag.group(1) else depth + 1
        if depth >= 2:
            return "nests a loop in a loop (promptfoo renders it with no bound on its work)"
    return None


def _names_code(value: Any) -> bool:
    """``package:...`` or a ``file://`` reference to a code file (``:function`` allowed)."""
    if not isinstance(value, str):
        return False
    if value.startswith("package:"):
        return True
    if not value.startswith("file://"):
        return False
    path = value[len("file://") :]
    head, colon, tail = path.rpartition(":")
    if colon and "/" not in tail and head:
        path = head
    return path.lower().endswith(CODE_FILES)


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def _pieces(assertion: Any, where: str) -> Iterator[tuple[str, str, str]]:
    """``(where, kind, code)`` for each piece of code in ``assertion``; ``kind`` is the
    assertion type or the field that holds it."""
    if not isinstance(assertion, Mapping):
        return
    kind = str(assertion.get("type", ""))
    base = kind.removeprefix("not-")
    value = assertion.get("value")
    if base in SCRIPTS and value is not None:
        yield f"{where}value", base, value if isinstance(value, str) else json.dumps(value)
    elif _names_code(value):
        yield (
            f"{where}value",
            "module" if str(value).startswith("package:") else "code file",
            str(value),
        )
    for field in TRANSFORMS:
        if assertion.get(field) is not None:
            yield f"{where}{field}", field, str(assertion[field])
    options = assertion.get("options")
    if isinstance(options, Mapping):
        for field in ("transform", "postprocess"):
            if options.get(field) is not None:
                yield f"{where}options.{field}", "transform", str(options[field])
    if _names_code(assertion.get("rubricPrompt")):
        yield f"{where}rubricPrompt", "rubricPrompt file", str(assertion["rubricPrompt"])
    taken = {f"{where}value"} if base in SCRIPTS else set()
    for key, item in assertion.items():
        if key == "assert" or f"{where}{key}" in taken:
            continue
        for at, text in _strings(item, f"{where}{key}"):
            if _calls(text):
                yield at, "template", text
    nested = assertion.get("assert")
    if isinstance(nested, list):
        for i, item in enumerate(nested):
            yield from _pieces(item, f"{where}assert[{i}].")


def assertion_code(assertion: Any) -> str | None:
    """The code ``assertion`` carries, as one text whose SHA-256 is its approval (None:
    it carries none). An edited piece of code, or one moved to another field, is new."""
    pieces = sorted({(where, code) for where, _, code in _pieces(assertion, "")})
    return json.dumps(pieces, ensure_ascii=False) if pieces else None


def code_kinds(assertion: Any) -> list[str]:
    """What carries code in ``assertion`` (``javascript``, ``transform``, ``template``...)."""
    return sorted({kind for _, kind, _ in _pieces(assertion, "")})


def for_worker(assertion: Any) -> Any:
    """``assertion`` without its ``provider`` (nor those of an assert-set's assertions): the
    run's judge grades, and no provider the suite names (a file, a command) is loaded."""
    if not isinstance(assertion, Mapping):
        return assertion
    out = {k: v for k, v in assertion.items() if k != "provider"}
    if isinstance(out.get("assert"), list):
        out["assert"] = [for_worker(item) for item in out["assert"]]
    return out
