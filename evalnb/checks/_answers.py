"""Checks on what the answer says: JSON contracts (``is_json``, ``json_schema``,
``json_keys``, ``json_values``), answer terms and length budgets; and the canonical form
of an answer used for agreement."""

from __future__ import annotations

import json
import re
from typing import Any

import regex

from evalnb._evidence import canonical_answer, extract_json, extract_json_value
from evalnb._exceptions import ArgumentError
from evalnb._types import Sample
from evalnb.checks._base import SpecCheck, Unscored, register
from evalnb.checks._lexical import REGEX_TIMEOUT, _count, _texts

__all__ = [
    "AnswerTerms",
    "IsJson",
    "JsonKeys",
    "JsonSchema",
    "JsonValues",
    "LengthBudget",
    "canonical_answer",
    "extract_json",
]


def _keys(value: Any) -> tuple[str, ...]:
    return _texts(value)


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise ArgumentError("must be a non-empty object of key: expected value")
    return value


@register
class IsJson(SpecCheck):
    """The answer holds one JSON value of any kind: ``{"type": "is_json"}``.

    Read by :func:`~evalnb._evidence.extract_json_value`: the whole answer first, else from
    the first ``{`` or ``[`` to the last ``}`` or ``]`` (prose or a code fence around it is
    allowed, as for ``json_keys``).
    """

    type = "is_json"

    def __call__(self, sample: Sample) -> str | None:
        _, problem = extract_json_value(sample.answer or "")
        return problem or None


def _schema(value: Any) -> Any:
    if not isinstance(value, dict | bool):
        raise ArgumentError("must be a JSON Schema (an object)")
    from jsonschema import SchemaError, validators  # type: ignore[import-untyped]

    try:
        validators.validator_for(value).check_schema(value)
    except SchemaError as exc:
        raise ArgumentError(f"must be a valid JSON Schema ({exc.message})") from None
    return value


def _bounded_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

    if not validator.is_type(instance, "string"):
        return
    try:
        found = regex.search(pattern, instance, timeout=REGEX_TIMEOUT)
    except TimeoutError:
        yield ValidationError(f"gave up after {REGEX_TIMEOUT:g} s: pattern {pattern!r} is too slow")
        return
    if not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@register
class JsonSchema(SpecCheck):
    """The JSON value in the answer (read as for ``is_json``) is valid against ``schema``,
    by the ``jsonschema`` package (the schema's own ``$schema`` draft, else the latest):
    ``{"type": "json_schema", "schema": {"type": "object", "required": ["total"]}}``.
    The detail names the first problem and where it is (``$.total: 'x' is not of type
    'integer'``)."""

    type = "json_schema"
    required = {"schema": _schema}

    def validate(self, where: str) -> None:
        from jsonschema import validators

        schema = self.values["schema"]
        draft = validators.validator_for(schema)
        # "pattern" searched under the regex check's time budget: a catastrophic pattern
        # fails the check, saying so, instead of holding the run.
        bounded = validators.extend(draft, {"pattern": _bounded_pattern})
        self.validator = bounded(schema)

    def __call__(self, sample: Sample) -> str | None:
        from jsonschema.exceptions import best_match

        value, problem = extract_json_value(sample.answer or "")
        if problem:
            return problem
        error = best_match(self.validator.iter_errors(value))
        if error is None:
            return None
        return f"{error.json_path}: {error.message}"


@register
class JsonKeys(SpecCheck):
    """The answer holds a JSON object with every key: ``{"type": "json_keys", "keys": [...]}``."""

    type = "json_keys"
    required = {"keys": _keys}

    def label(self) -> str:
        return ",".join(self.values["keys"])

    def __call__(self, sample: Sample) -> str | None:
        value, problem = extract_json(sample.answer or "")
        if value is None:
            return problem
        missing = [k for k in self.values["keys"] if k not in value]
        return "missing keys: " + ", ".join(missing) if missing else None


@register
class JsonValues(SpecCheck):
    """Frozen expected values for keys with an objective answer.

    ``{"type": "json_values", "values": {"total_cents": 1950}}``: each key must be present
    with exactly that JSON value (``19.5`` is not ``1950``; ``1950.0`` equals ``1950``).
    """

    type = "json_values"
    required = {"values": _mapping}

    def label(self) -> str:
        return ",".join(f"{k}={json.dumps(v)}" for k, v in self.values["values"].items())

    def __call__(self, sample: Sample) -> str | None:
        value, problem = extract_json(sample.answer or "")
        if value is None:
            return problem
        wrong = []
        for key, expected in self.values["values"].items():
            if key not in value:
                wrong.append(f"{key} missing")
            elif value[key] != expected or isinstance(value[key], bool) != isinstance(
                expected, bool
            ):
                wrong.append(f"{key}={json.dumps(value[key])}, expected {json.dumps(expected)}")
        return "; ".join(wrong) if wrong else None


@register
class LengthBudget(SpecCheck):
    """The answer fits a budget: ``max_chars``, or ``max_tokens`` (completion tokens).

    Without reported usage, ``max_tokens`` is judged as 4 characters a token (the
    rule of the n-sample agreement gate) and the detail says so.
    """

    type = "length_budget"
    optional = {"max_chars": _count, "max_tokens": _count}

    def validate(self, where: str) -> None:
        if len(self.values) != 1:
            raise ArgumentError(f"'{where}' needs exactly one of 'max_chars' or 'max_tokens'")

    def label(self) -> str:
        ((key, value),) = self.values.items()
        return f"{key}={value}"

    def __call__(self, sample: Sample) -> str | None:
        chars = len(sample.answer or "")
        if "max_chars" in self.values:
            limit = self.values["max_chars"]
            return f"{chars} characters; budget {limit}" if chars > limit else None
        limit = self.values["max_tokens"]
        if sample.completion_tokens is not None:
            used = sample.completion_tokens
            return f"{used} completion tokens; budget {limit}" if used > limit else None
        if chars > 4 * limit:
            return f"{chars} characters > 4 x {limit} tokens (no usage reported)"
        return None


@register
class AnswerTerms(SpecCheck):
    """Every term appears as a whole word, case-insensitively.

    ``GO`` matches ``Go``; ``ongoing`` does not. An empty list means the case has no
    terms: the check is unscored, not passed. Lexical: "does not use Go" passes.
    """

    type = "answer_terms"
    required = {"terms": lambda v: v}

    def validate(self, where: str) -> None:
        terms = self.values["terms"]
        if not isinstance(terms, list) or not all(isinstance(t, str) and t.strip() for t in terms):
            raise ArgumentError(
                f"'{where}.terms' must be a list of non-empty strings (empty: unscored); "
                f"got {terms!r}"
            )
        self.applies = bool(terms)
        self.patterns = [
            (t, re.compile(rf"(?<!\w){re.escape(t)}(?!\w)", re.IGNORECASE)) for t in terms
        ]

    def label(self) -> str:
        return "|".join(self.values["terms"]) or "none"

    def __call__(self, sample: Sample) -> str | Unscored | None:
        if not self.patterns:
            return Unscored("the case has no answer terms")
        missing = [t for t, pattern in self.patterns if not pattern.search(sample.answer or "")]
        return "missing terms: " + ", ".join(repr(t) for t in missing) if missing else None
