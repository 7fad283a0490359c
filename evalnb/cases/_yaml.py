"""One bounded YAML reader for every YAML file evalnb reads: cases files, promptfoo configs,
lm-eval tasks and openai/evals registry entries.

PyYAML's safe loading (libyaml's where PyYAML has it) builds a document's node graph first;
:func:`read_yaml` counts the nodes that graph stands for, each alias counted as the nodes it
repeats (a few aliases of aliases stand for billions: a "billion laughs"), and builds values
only within the caller's limit. An alias inside the node it names (recursive YAML) and a
document that is not YAML are each one located :class:`~evalnb.CasesError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalnb._exceptions import CasesError

__all__ = ["YamlDocument", "expanded_nodes", "read_yaml", "safe_loader"]


def safe_loader() -> Any:
    """PyYAML's safe loader class, libyaml's where PyYAML has it: a base for a loader that
    adds constructors or resolvers of its own."""
    import yaml  # type: ignore[import-untyped]

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class YamlDocument:
    """What :func:`read_yaml` read: the node graph (``root``, None for an empty document),
    the nodes it expands to, and the values (None when past the limit)."""

    root: Any
    nodes: int
    data: Any = None


def read_yaml(
    text: str,
    where: str,
    *,
    limit: int,
    loader: Any = None,
    refusal: str | None = None,
) -> YamlDocument:
    """The one YAML document in ``text`` (``where`` names it in an error), read with
    ``loader`` (default :func:`safe_loader`). Past ``limit`` expanded nodes no value is
    built: with ``refusal`` that is the :class:`~evalnb.CasesError` ``"{where}: {refusal}"``,
    without it a document whose ``data`` is None (the caller says why)."""
    import yaml

    reader = (loader or safe_loader())(text)
    try:
        root = reader.get_single_node()
        if root is None:
            return YamlDocument(None, 0)
        # Without an "&" there is no anchor, so no alias: the nodes are a tree.
        nodes = expanded_nodes(root, limit, where, aliases="&" in text)
        if nodes > limit:
            if refusal is not None:
                raise CasesError(f"{where}: {refusal}")
            return YamlDocument(root, nodes)
        return YamlDocument(root, nodes, reader.construct_document(root))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CasesError(f"{where}{line}: not valid YAML ({problem})") from None
    except (ValueError, OverflowError) as exc:  # a timestamp such as 2024-13-45
        raise CasesError(f"{where}: not valid YAML ({exc})") from None
    finally:
        reader.dispose()


def expanded_nodes(root: Any, limit: int, where: str, *, aliases: bool = True) -> int:
    """How many nodes the YAML node graph ``root`` stands for, each alias counted as the
    nodes it repeats; stops past ``limit``. An alias inside the node it names (recursive
    YAML) is a :class:`~evalnb.CasesError` placed by ``where`` (the file) and its line.
    ``aliases=False`` (a document without an anchor) counts the tree ten times faster."""
    if not aliases:
        count, nodes = 0, [root]
        while nodes:
            count += 1
            nodes += _children(nodes.pop())
        return count
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in children)
            sizes[key] = size
            if size > limit:
                return size
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise CasesError(
                f"{where}:{node.start_mark.line + 1}: an alias refers to a node that holds it; "
                "recursive YAML is not read"
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack += [(child, False) for child in children if id(child) not in sizes]
    return sizes[id(root)]


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []
    out: list[Any] = []
    for item in value:
        if isinstance(item, tuple):
            out += item
        else:
            out.append(item)
    return out
