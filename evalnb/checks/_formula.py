"""A multi grader's ``calculate_output``: a small arithmetic formula over named scores.

``(name + email) / 2``, ``0.5 * function_name + 0.5 * arguments``, ``min(a, b) ^ 2``: the
formula is parsed with Python's :mod:`ast` and only these nodes are allowed (anything else
is refused, naming it; nothing is ever handed to ``eval``): numbers, the names given, unary
``+``/``-``, binary ``+ - * /`` and ``^`` (power, as OpenAI's graders write it, bound as
tightly as Python's ``**``, which is taken too),
and calls of :data:`FUNCTIONS` (OpenAI's list: ``min max abs floor ceil exp sqrt log``).
A formula longer than :data:`MAX_LENGTH` characters is refused; a result that is not a
finite number (a division by zero, a power too large) is an error naming the formula.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["FUNCTIONS", "MAX_LENGTH", "Formula"]

#: The functions a formula may call.
FUNCTIONS: Mapping[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
#: The longest formula read.
MAX_LENGTH = 2000

_BINARY: Mapping[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: math.pow,
}
_SIGNS: Mapping[type[ast.unaryop], Callable[[float], float]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


class Formula:
    """A parsed formula over ``names``; ``Formula(text, names)`` raises ``ValueError`` in
    one line naming what is not allowed."""

    def __init__(self, text: str, names: Sequence[str]):
        if not isinstance(text, str) or not text.strip():
            raise ValueError("the formula is empty")
        if len(text) > MAX_LENGTH:
            raise ValueError(f"the formula is longer than {MAX_LENGTH} characters")
        try:
            # ^ is a power here, bound tighter than * and -, as Python's ** is.
            tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"the formula {text!r} does not parse ({exc.msg})") from None
        self.text = text
        self.names = frozenset(names)
        self._check(tree.body)
        self.tree = tree.body

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise ValueError(f"the formula {self.text!r} holds {node.value!r}, not a number")
        elif isinstance(node, ast.Name):
            if node.id not in self.names:
                known = ", ".join(sorted(self.names)) or "none"
                raise ValueError(
                    f"the formula {self.text!r} names {node.id!r}, which is no grader "
                    f"(graders: {known})"
                )
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            self._check(node.left)
            self._check(node.right)
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _SIGNS:
            self._check(node.operand)
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name not in FUNCTIONS or node.keywords or not node.args:
                raise ValueError(
                    f"the formula {self.text!r} calls {ast.unparse(node.func)!r}; a formula "
                    f"may call {', '.join(FUNCTIONS)} with numbers"
                )
            for arg in node.args:
                self._check(arg)
        else:
            raise ValueError(
                f"the formula {self.text!r} holds {ast.unparse(node)!r}: a formula takes "
                "numbers, grader names, + - * / ^ and the functions "
                f"{', '.join(FUNCTIONS)}"
            )

    def __call__(self, values: Mapping[str, float]) -> float:
        """The formula's value for the named scores; ``ValueError`` when it is not a
        finite number."""
        try:
            result = float(self._value(self.tree, values))
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise ValueError(f"the formula {self.text!r} has no value here ({exc})") from None
        if not math.isfinite(result):
            raise ValueError(f"the formula {self.text!r} gives {result}, not a finite number")
        return result

    def _value(self, node: ast.AST, values: Mapping[str, float]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self._value(node.left, values), self._value(node.right, values)
            return _BINARY[type(node.op)](float(left), float(right))
        if isinstance(node, ast.UnaryOp):
            return _SIGNS[type(node.op)](self._value(node.operand, values))
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*(self._value(a, values) for a in node.args))
