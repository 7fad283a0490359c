"""Graders written as code in another tool's suite, and checks on what a sample cost.

- ``python_code``: Python source kept in the spec (promptfoo's ``python`` assertion).
  Without ``function`` the code is promptfoo's inline form: one line is an expression,
  several lines are a function body that ``return``\\ s; with ``function`` the code is a
  module and that function is called. Either way it sees ``output`` (the answer) and
  ``context`` (``vars``, ``prompt``, ``test``), as promptfoo passes them.
- ``latency``: the sample's latency against ``max_ms``.
- ``cost``: the sample's dollars (its usage priced by ``prices``, dollars per million
  tokens for input and output) against ``max_usd``; a model without a price is unscored.

Return convention (promptfoo's): True/False pass or fail; a number is a score, passing
at ``threshold`` when one is given and above 0 otherwise (a score outside [0, 1] is kept
in the detail, not as the check's score); ``{"pass", "score", "reason"}`` is all three.
"""

from __future__ import annotations

import ast
import json
import math
import re
import textwrap
from collections.abc import Mapping
from typing import Any, cast

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb._prices import sample_cost
from evalnb._types import Case, Sample
from evalnb.checks._base import (
    CHECK_TIMEOUT,
    CheckReturn,
    Outcome,
    SpecCheck,
    Unscored,
    register,
)
from evalnb.checks._lexical import _seconds, _text

__all__ = ["CostCheck", "LatencyCheck", "PythonCodeCheck", "graded_outcome", "grader_context"]


def _number(value: Any) -> float:
    if not is_number(value):
        raise ArgumentError("must be a number")
    return float(value)


def _positive(value: Any) -> float:
    if not is_number(value, 0):
        raise ArgumentError("must be a number >= 0")
    return float(value)


def _transforms(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
        raise ArgumentError("must be a JavaScript expression or a list of them")
    return tuple(items)


def grader_context(case: Case | None, sample: Sample) -> dict[str, Any]:
    """What promptfoo passes a code grader as ``context``: the test's ``vars``, the
    ``prompt`` sent, and the ``test`` (its vars and metadata)."""
    variables = dict(case.vars) if case is not None else {}
    metadata = dict(case.metadata) if case is not None else {}
    return {
        "vars": variables,
        "prompt": sample.prompt,
        "test": {"vars": variables, "metadata": metadata},
    }


def graded_outcome(value: Any, threshold: float | None) -> CheckReturn:
    """A code grader's return value read as promptfoo reads it (see the module)."""
    if isinstance(value, bool):
        return Outcome(value, f"returned {value}", score=1.0 if value else 0.0)
    if isinstance(value, int | float):
        score = float(value)
        if not math.isfinite(score):
            return Outcome(False, f"returned {score}, not a finite score")
        passed = score >= threshold if threshold is not None else score > 0
        rule = f">= {threshold:g}" if threshold is not None else "> 0"
        kept = score if 0 <= score <= 1 else None
        return Outcome(passed, f"score {score:g} (passes {rule})", score=kept)
    if isinstance(value, Mapping) and ("pass" in value or "score" in value):
        raw_score = value.get("score")
        given = float(cast(float, raw_score)) if is_number(raw_score) else None
        if "pass" in value:
            passed = bool(value["pass"])
        elif given is not None:
            passed = given >= threshold if threshold is not None else given > 0
        else:
            passed = False
        kept = given if given is not None and 0 <= given <= 1 else None
        reason = str(value.get("reason") or "")
        return Outcome(passed, reason or f"returned pass={passed}, score={raw_score}", score=kept)
    shown = json.dumps(value, default=str)[:200]
    return Outcome(False, f"returned {shown}; expected true/false, a number or {{pass, score}}")


def _inline(code: str) -> str:
    """promptfoo's inline Python as a function body: one line is an expression."""
    stripped = code.strip()
    if "\n" not in stripped and not re.match(r"return\b", stripped):
        return f"return ({stripped})"
    return textwrap.dedent(code)


class CodeCheck(SpecCheck):
    """A grader written as code (Python or JavaScript), promptfoo's return convention."""

    def take_threshold(self) -> None:
        """Graded when the spec names a ``threshold`` (one in [0, 1] is the pass mark)."""
        self.graded = "threshold" in self.values
        threshold = self.values.get("threshold")
        if threshold is not None and 0 <= threshold <= 1:
            self.threshold = threshold

    def label(self) -> str:
        return str(self.values.get("function") or self.values["code"].strip()[:40])


def _defined(tree: ast.Module) -> set[str]:
    """The names a module's top level binds (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            for target in ast.walk(node):
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                    names.add(target.id)
    return names


@register
class PythonCodeCheck(CodeCheck):
    """Python source as a grader: ``{"type": "python_code", "code": "len(output) < 300"}``,
    or a module and its function: ``{"code": "...", "function": "get_assert"}``.

    The source is data until a run or a scoring is told to trust it
    (:mod:`evalnb.checks._trust`): building the check only parses it. Each call runs it in a
    process of its own, bounded in time, memory and reach (:mod:`evalnb.checks._sandbox`);
    ``file`` names the file it came from and ``folder`` the folder it may read."""

    type = "python_code"
    required = {"code": _text}
    optional = {
        "function": _text,
        "threshold": _number,
        "timeout": _seconds,
        "json_output": lambda v: bool(v),
        "file": _text,
        "folder": _text,
    }
    bounded = False
    self_timed = True
    reads_case = True

    def validate(self, where: str) -> None:
        self.timeout = self.values.get("timeout", CHECK_TIMEOUT)
        code = self.values["code"]
        name = self.values.get("function")
        offset = 0
        if name is None:
            offset = 1  # the wrapper's def line
            body = textwrap.indent(_inline(code), "    ")
            code = f"def __evalnb_grader(output, context):\n{body}\n"
            name = "__evalnb_grader"
        try:  # parsed, never run: the code runs only once trusted, out of process
            tree = ast.parse(code, f"<{where}.code>")
        except SyntaxError as exc:
            raise ArgumentError(
                f"'{where}.code' is not valid Python (line {(exc.lineno or 1) - offset}: {exc.msg})"
            ) from None
        if name not in _defined(tree):
            raise ArgumentError(f"'{where}.function' names no function in the code; got {name!r}")
        self.source, self.function_name, self.where = code, name, f"<{where}.code>"
        self.take_threshold()

    def __call__(self, sample: Sample) -> CheckReturn:
        from evalnb.checks._sandbox import run_python
        from evalnb.checks._trust import require_approved

        require_approved(self)
        request = {
            "code": self.source,
            "function": self.function_name,
            "where": self.where,
            "output": sample.answer or "",
            "context": grader_context(self.case, sample),
            "json_output": bool(self.values.get("json_output")),
            "folder": self.values.get("folder") or (str(self.base) if self.base else None),
        }
        reply = run_python(request, self.timeout)
        if not reply.get("ok"):
            return Outcome(False, str(reply.get("error"))[:300])
        return graded_outcome(reply.get("value"), self.values.get("threshold"))


@register
class LatencyCheck(SpecCheck):
    """The sample's latency at most ``max_ms``: ``{"type": "latency", "max_ms": 5000}``."""

    type = "latency"
    required = {"max_ms": _positive}

    def label(self) -> str:
        return f"<= {self.values['max_ms']:g} ms"

    def __call__(self, sample: Sample) -> CheckReturn:
        limit = self.values["max_ms"]
        took = sample.latency_ms
        return Outcome(took <= limit, f"{took:.0f} ms (limit {limit:g} ms)")


def _prices(value: Any) -> dict[str, tuple[float, float]]:
    if not isinstance(value, Mapping):
        raise ArgumentError("must be an object of model: [input, output] dollars per 1M tokens")
    table = {}
    for model, pair in value.items():
        if (
            not isinstance(pair, list | tuple)
            or len(pair) != 2
            or not all(is_number(p, 0) for p in pair)
        ):
            raise ArgumentError(f"must give model {model!r} two prices >= 0 [input, output]")
        table[str(model)] = (float(pair[0]), float(pair[1]))
    return table


def _usage(sample: Sample) -> tuple[str | None, int | None, int | None]:
    """The model and token counts the response reported."""
    try:
        body = json.loads(sample.response or "")
    except (json.JSONDecodeError, TypeError):
        return None, None, None
    if not isinstance(body, dict):
        return None, None, None
    raw_usage = body.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    model = body.get("model")
    return (
        model if isinstance(model, str) else None,
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
    )


@register
class CostCheck(SpecCheck):
    """The sample's cost at most ``max_usd``, its usage priced by ``prices``:
    ``{"type": "cost", "max_usd": 0.002, "prices": {"gpt-4o-mini": [0.15, 0.6]}}``."""

    type = "cost"
    required = {"max_usd": _positive}
    optional = {"prices": _prices}

    def label(self) -> str:
        return f"<= ${self.values['max_usd']:g}"

    def __call__(self, sample: Sample) -> CheckReturn:
        model, prompt, completion = _usage(sample)
        prices = self.values.get("prices", {})
        dollars = sample_cost(prices, model, prompt, completion)
        if dollars is None:
            missing = "no token usage" if prompt is None else f"no price for model {model!r}"
            return Unscored(f"cannot price the sample: {missing} (give 'prices')")
        limit = self.values["max_usd"]
        return Outcome(dollars <= limit, f"${dollars:.6f} (limit ${limit:g})")
