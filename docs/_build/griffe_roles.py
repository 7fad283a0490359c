"""A Griffe extension for the API reference: reST habits in docstrings become Markdown.

evalnb's docstrings name other objects the Sphinx way (``:func:`evalnb.compare```,
``:class:`~evalnb.OpenAIChat```) and show examples as bare doctest lines (``>>> ...``).
MkDocs reads Markdown, where ``>>>`` is a quote three deep, so:

- each role becomes a code span, and a link into the reference when it names a public name
  of ``evalnb`` (which the reference documents, so the link always resolves);
- each run of doctest lines becomes a ``pycon`` code block, its ``# doctest:`` flags dropped;
- a ``Returns:`` section, prose and a list of columns rather than ``type: description``,
  becomes a paragraph headed **Returns:** (Griffe would take its first line, up to the
  colon, for the type).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import griffe

_STUB = Path(__file__).resolve().parents[2] / "evalnb" / "__init__.pyi"
PUBLIC = frozenset(re.findall(r"^from \S+ import \w+ as (\w+)$", _STUB.read_text(), re.M))
ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|exc|obj):`(~?)([\w.]+)`")
DOCTEST_FLAGS = re.compile(r"\s*# doctest:.*$")


def _markdown(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    shown = target.rsplit(".", 1)[-1] if tilde else target
    name = target.removeprefix("evalnb.")
    if name in PUBLIC:
        return f"[`{shown}`][evalnb.{name}]"
    return f"`{shown}`"


def fence_doctests(text: str) -> str:
    """Wrap each run of ``>>>`` lines (with their ``...`` lines and output) in a fence."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.lstrip().startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        block = []
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            block.append(DOCTEST_FLAGS.sub("", lines[i][len(indent) :]))
            i += 1
        if out and out[-1].strip():
            out.append("")
        out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out)


def returns_as_prose(text: str) -> str:
    """Turn a top-level ``Returns:`` section into a plain paragraph and its dedented body."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i] != "Returns:":
            out.append(lines[i])
            i += 1
            continue
        i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
            body.append(lines[i])
            i += 1
        out += ["**Returns:**", "", *textwrap.dedent("\n".join(body)).strip("\n").split("\n")]
        if i < len(lines):
            out.append("")
    return "\n".join(out)


class SphinxRoles(griffe.Extension):
    """Rewrites the docstring of every object Griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        value = obj.docstring.value
        if ":" in value:
            value = ROLE.sub(_markdown, value)
        if ">>>" in value:
            value = fence_doctests(value)
        if "Returns:" in value:
            value = returns_as_prose(value)
        obj.docstring.value = value
