"""Variables named like the fields evalnb's templates keep for themselves.

A promptfoo var or an OpenAI Evals item field may be called ``prompt``, ``context`` or
``target``: in evalnb's templates those names mean the case's own prompt, context and target
(:data:`~evalnb._types.RESERVED_VARS`). An importer keeps such a variable under a new name
(:func:`renames`: ``prompt`` becomes ``var_prompt``), rewrites the templates that name it
(:func:`renamed_template`) and says so in one line of the import report, so that the suite
means what it meant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from evalnb._types import RESERVED_VARS

_OPENING = re.compile(r"\{\{|\{%")

__all__ = [
    "keep_apart",
    "renamed_code",
    "renamed_keys",
    "renamed_template",
    "renamed_texts",
    "renames",
    "report",
]


def renames(names: Iterable[str], prefix: str) -> dict[str, str]:
    """``{old: new}`` for each reserved name among ``names``: ``prefix_old``, with more
    underscores while the new name is taken."""
    taken = set(names)
    out = {}
    for name in sorted(taken & set(RESERVED_VARS)):
        new = f"{prefix}_{name}"
        while new in taken:
            new = f"{prefix}_{new}"
        taken.add(new)
        out[name] = new
    return out


def renamed_keys(values: Mapping[str, Any], renamed: Mapping[str, str]) -> dict[str, Any]:
    """``values`` with each renamed key under its new name, in the same order."""
    return {renamed.get(key, key): value for key, value in values.items()}


def renamed_template(text: str, renamed: Mapping[str, str]) -> str:
    """``text`` with each renamed variable named anew inside its ``{{ }}`` and ``{% %}``
    blocks (not an attribute such as ``x.prompt``, nor a quoted ``'prompt'``)."""
    if not renamed or ("{{" not in text and "{%" not in text):
        return text
    names = "|".join(re.escape(name) for name in sorted(renamed, key=len, reverse=True))
    word = re.compile(rf"(?<![\w.'\"])({names})(?![\w'\"])|(?<=\bvars\.)({names})(?!\w)")

    out, at = [], 0
    for opening in _OPENING.finditer(text):  # each {{ }} / {% %} block, in linear time
        start = opening.start()
        if start < at:
            continue
        end = text.find("}}" if opening[0] == "{{" else "%}", start + 2)
        if end == -1:
            break
        out += [text[at:start], word.sub(lambda m: renamed[m[1] or m[2]], text[start : end + 2])]
        at = end + 2
    return "".join([*out, text[at:]])


def renamed_code(code: str, renamed: Mapping[str, str]) -> str:
    """A grader's code with ``vars.old``, ``vars['old']``, ``['vars']['old']`` and
    ``vars.get('old'`` naming the new variable (how graders read a var from ``context``)."""
    if not renamed:
        return code
    names = "|".join(re.escape(name) for name in sorted(renamed, key=len, reverse=True))
    holder = r"(?:\bvars|\[\s*['\"]vars['\"]\s*\])"
    key = r"(?:\.\s*|\[\s*['\"]|\.get\(\s*['\"])"
    access = re.compile(rf"({holder}\s*{key})({names})(?![\w])")
    return access.sub(lambda m: m[1] + renamed[m[2]], code)


def keep_apart(
    cases: list[dict[str, Any]], defaults: dict[str, Any], variants: list[dict[str, Any]]
) -> dict[str, str]:
    """Rename every reserved var of an imported suite (its cases' and defaults' ``vars``) to
    ``var_NAME``, in place: the variants' templates and the checks' templates and code name
    the new variable; a ``promptfoo`` check keeps ``var_names`` so that promptfoo sees the
    var under its own name. Returns the renames (empty: nothing was renamed)."""
    groups = [c for c in cases if isinstance(c, dict)] + [defaults]
    names = {key for group in groups for key in group.get("vars") or {}}
    renamed = renames(names, "var")
    if not renamed:
        return renamed
    back = {new: old for old, new in renamed.items()}
    for group in groups:
        if group.get("vars"):
            group["vars"] = renamed_keys(group["vars"], renamed)
        if group.get("checks"):
            group["checks"] = [_check(spec, renamed, back) for spec in group["checks"]]
    for i, variant in enumerate(variants):
        variants[i] = {
            k: v if k == "name" else renamed_texts(v, renamed) for k, v in variant.items()
        }
    return renamed


def _check(spec: Any, renamed: Mapping[str, str], back: Mapping[str, str]) -> Any:
    if not isinstance(spec, dict):
        return spec
    if spec.get("type") == "promptfoo":
        return {**spec, "var_names": dict(back)}
    out = renamed_texts({k: v for k, v in spec.items() if k != "code"}, renamed)
    if isinstance(spec.get("code"), str):
        out["code"] = renamed_code(spec["code"], renamed)
    return out


def renamed_texts(value: Any, renamed: Mapping[str, str]) -> Any:
    """``value`` (text, a list or an object) with every template in it rewritten."""
    if isinstance(value, str):
        return renamed_template(value, renamed)
    if isinstance(value, Mapping):
        return {key: renamed_texts(item, renamed) for key, item in value.items()}
    if isinstance(value, list):
        return [renamed_texts(item, renamed) for item in value]
    return value


def report(renamed: Mapping[str, str], what: str, rewritten: bool = True) -> str:
    """The one line of the import report: what was renamed, and why."""
    pairs = ", ".join(f"{old!r} as {new!r}" for old, new in renamed.items())
    these = "these names" if len(renamed) > 1 else "this name"
    tail = " and the templates that name it were rewritten" if rewritten else ""
    return (
        f"{pairs}: evalnb's templates keep {these} for the case's own fields, so the {what} "
        f"is stored under the new name{tail}"
    )
