"""Experiment files and variant specs: what to run, written down once.

An experiment file is TOML; paths in it are relative to the file::

    cases = "../cases/shop.jsonl"
    repeats = 25

    [target]
    standin = true            # or base_url = "http://127.0.0.1:8080/v1", or command = [...]
    model = "shop-v1"
    type = "openai"           # the protocol: anthropic, responses, gemini, bedrock, azure

    [[variants]]
    name = "v2"
    params = { model = "shop-v2" }
    prefix_file = "../variants/revised.txt"   # or prefix = "...", system / system_file,
                                              # template / template_file, shuffle_choices

    [judge]                   # for 'judge' checks; base_url defaults to the target's server
    model = "judge"

    [defaults]                # applied to every case, as a cases file's own defaults
    checks = [{ type = "word_count", max = 80 }]

    [until]                   # run until decided (evalnb.Decided): a baseline, b one or more
    a = "v1"
    b = "v2"                  # or ["v2", "v3"]; alpha = 0.05, margin = 0.05, check = "all"

``[until]`` may instead race the variants to the best one (evalnb.Best): ``rule = "best"``
with ``variants`` (all when left out), ``eps``, ``delta`` and ``check``. ``repeats`` may be a
table, ``repeats = { rule = "settled", max = 10 }`` (evalnb.UntilSettled: ``alpha``, ``tol``),
drawing repeats of a case until its flakiness verdict is settled.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnb._exceptions import ArgumentError, CasesError
from evalnb._stopping import repeat_rule_from_record, rule_from_record
from evalnb._types import Variant
from evalnb.cases._design import (
    JudgeSpec,
    RunDesign,
    check_order,
    check_seed,
    check_timeout,
    check_whole,
)
from evalnb.cases._files import validate_defaults
from evalnb.cases.suites import PREFIX, resolve

__all__ = ["Experiment", "load_experiment", "parse_value", "parse_variant"]

_TOP = (
    "cases",
    "repeats",
    "concurrency",
    "order",
    "seed",
    "timeout",
    "target",
    "variants",
    "judge",
    "defaults",
    "until",
)
_TARGET = (
    "containment",
    "pass_env",
    "require_trace",
    "standin",
    "base_url",
    "command",
    "type",
    "model",
    "region",
    "api_version",
    "headers",
    "query",
    "api_key_env",
    "params",
    "timeout",
    "max_retries",
)
_VARIANT = (
    "name",
    "prefix",
    "prefix_file",
    "system",
    "system_file",
    "template",
    "template_file",
    "shuffle_choices",
    "shuffle_seed",
    "chat",
    "rendered",
    "params",
    "target",
)
_JUDGE = ("model", "base_url", "api_key_env")
_UNTIL = ("a", "b", "alpha", "margin", "check")
#: The fields of each rule an ``[until]`` table may name with ``rule = ...``.
_RULE_FIELDS = {"decided": _UNTIL, "best": ("variants", "eps", "delta", "check")}
_REPEAT_FIELDS = ("max", "alpha", "tol")


@dataclass
class Experiment:
    """The settings of an experiment file, paths resolved, every value checked.

    ``target`` is the ``[target]`` table (a target is a live object, not part of a
    design); the rest is the run's design: :meth:`design` builds the
    :class:`~evalnb.cases.RunDesign`, with flags over the file. ``judge`` is the ``[judge]``
    table as a :class:`~evalnb.cases.JudgeSpec`, ``defaults`` the ``[defaults]`` table,
    validated, ``until`` the ``[until]`` table (the arguments of ``evalnb.Decided``).
    """

    path: Path
    cases: Path | None = None
    target: dict[str, Any] = field(default_factory=dict)
    variants: list[Variant] = field(default_factory=list)
    repeats: int | dict[str, Any] | None = None
    concurrency: int | None = None
    order: str | None = None
    seed: int | None = None
    timeout: float | None = None
    judge: JudgeSpec | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    until: dict[str, Any] = field(default_factory=dict)

    def design(self, cases: str | os.PathLike[str] | None = None, **flags: Any) -> RunDesign:
        """The run this file describes, ``flags`` (keywords of :meth:`RunDesign.build`,
        ``None`` for a flag not given) over the file's values. ``until`` may be a rule,
        or a mapping merged over the file's ``[until]`` table."""
        values: dict[str, Any] = {
            key: getattr(self, key)
            for key in ("repeats", "concurrency", "order", "seed", "timeout", "judge")
            if getattr(self, key) is not None
        }
        if self.variants:
            values["variants"] = self.variants
        until: Any = flags.pop("until", None)
        if until is None or isinstance(until, Mapping):
            table = {**self.until, **(until or {})}
            until = rule_from_record({"rule": "decided", **table}) if table else None
        repeats = values.get("repeats")
        if isinstance(repeats, Mapping):
            values["repeats"] = repeat_rule_from_record(repeats)
        values.update({k: v for k, v in flags.items() if v is not None})
        source = cases if cases is not None else self.cases
        if source is None:
            raise CasesError(f"{self.path}: no cases: give a cases file, or 'cases' in the file")
        return RunDesign.build(source, defaults=self.defaults or None, until=until, **values)


def _read_text(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CasesError(f"{where}: cannot read {path} ({exc.strerror})") from None


def _variant(raw: Any, where: str, base: Path) -> Variant:
    if not isinstance(raw, dict):
        raise CasesError(f"{where}: must be a table; got {raw!r}")
    for key in raw:
        if key not in _VARIANT:
            raise CasesError(f"{where}.{key}: not a variant field (fields: {', '.join(_VARIANT)})")
    text: dict[str, str | None] = {}
    for part in ("prefix", "system", "template"):
        if part in raw and f"{part}_file" in raw:
            raise CasesError(f"{where}: give '{part}' or '{part}_file', not both")
        if f"{part}_file" in raw:
            text[part] = _read_text(base / raw[f"{part}_file"], f"{where}.{part}_file")
        else:
            text[part] = raw.get(part)
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise CasesError(f"{where}.params: must be a table; got {params!r}")
    # Left unchecked here: Variant says what a name must be, a missing one included.
    name: Any = raw.get("name")
    try:
        return Variant(
            name,
            prefix=text["prefix"],
            system=text["system"],
            params=params,
            template=text["template"],
            shuffle_choices=raw.get("shuffle_choices", False),
            shuffle_seed=raw.get("shuffle_seed", 0),
            chat=raw.get("chat", False),
            rendered=raw.get("rendered", {}),
        )
    except ValueError as exc:
        raise CasesError(f"{where}: {exc}") from None


def _judge(raw: Any, path: Path) -> JudgeSpec:
    if not isinstance(raw, dict):
        raise CasesError(f"{path}: 'judge' must be a table; got {raw!r}")
    for key in raw:
        if key not in _JUDGE:
            raise CasesError(
                f"{path}: 'judge.{key}' is not a judge field (fields: {', '.join(_JUDGE)})"
            )
    if "model" not in raw:
        raise CasesError(f"{path}: 'judge.model' is required (the judge model's name)")
    try:
        return JudgeSpec(**raw)
    except ArgumentError as exc:
        raise CasesError(f"{path}: {exc}") from None


def _until(raw: Any, path: Path) -> dict[str, Any]:
    """The ``[until]`` table: the arguments of ``evalnb.Decided`` (or, with ``rule =
    "best"``, of ``evalnb.Best``), checked by building the rule."""
    if not isinstance(raw, dict):
        raise CasesError(f"{path}: 'until' must be a table; got {raw!r}")
    kind = raw.get("rule", "decided")
    if kind not in _RULE_FIELDS:
        raise CasesError(
            f"{path}: 'until.rule' must be one of {', '.join(map(repr, _RULE_FIELDS))}; "
            f"got {kind!r}"
        )
    fields = _RULE_FIELDS[kind]
    for key in raw:
        if key != "rule" and key not in fields:
            raise CasesError(
                f"{path}: 'until.{key}' is not a field of the {kind!r} rule "
                f"(fields: rule, {', '.join(fields)})"
            )
    if kind == "decided":
        for key in ("a", "b"):
            if key not in raw:
                raise CasesError(f"{path}: 'until.{key}' is required (a variant name)")
    try:
        rule_from_record({"rule": kind, **raw})
    except (ValueError, TypeError) as exc:  # ArgumentError is a ValueError
        raise CasesError(f"{path}: [until]: {exc}") from None
    return dict(raw)


def _repeats(value: Any) -> Any:
    """``repeats``: a whole number, or a repeat rule's table (``rule = "settled"``)."""
    if not isinstance(value, dict):
        return check_whole("repeats", value)
    kind = value.get("rule")
    if kind != "settled":
        raise ArgumentError(f"'repeats.rule' must be 'settled' in a repeats table; got {kind!r}")
    for key in value:
        if key != "rule" and key not in _REPEAT_FIELDS:
            raise ArgumentError(
                f"'repeats.{key}' is not a field of the 'settled' rule "
                f"(fields: rule, {', '.join(_REPEAT_FIELDS)})"
            )
    if "max" not in value:
        raise ArgumentError("'repeats.max' is required (the most repeats a case may draw)")
    try:
        repeat_rule_from_record(value)
    except (ValueError, TypeError) as exc:
        raise ArgumentError(f"[repeats]: {exc}") from None
    return dict(value)


#: The experiment's design keys with their checks (those of RunDesign.build).
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "repeats": _repeats,
    "concurrency": lambda v: check_whole("concurrency", v),
    "order": check_order,
    "seed": check_seed,
    "timeout": check_timeout,
}


def _settings(data: dict[str, Any], path: Path) -> dict[str, Any]:
    out = {}
    for key, check in _CHECKS.items():
        if key in data:
            try:
                out[key] = check(data[key])
            except ArgumentError as exc:
                raise CasesError(f"{path}: {exc}") from None
    return out


def _defaults(raw: Any, path: Path) -> dict[str, Any]:
    """The experiment's defaults, validated; a ``python`` check's module is looked for
    beside the experiment file."""
    if isinstance(raw, dict) and isinstance(raw.get("checks"), list):
        raw = {
            **raw,
            "checks": [
                {**spec, "base": str(path.parent.resolve())}
                if isinstance(spec, dict) and spec.get("type") == "python" and "base" not in spec
                else spec
                for spec in raw["checks"]
            ],
        }
    try:
        return validate_defaults(raw, base=path.parent)
    except ValueError as exc:
        raise CasesError(f"{path}: {exc}") from None


def _cases_path(value: Any, base: Path, path: Path) -> Path:
    if not isinstance(value, str) or not value:
        raise CasesError(f"{path}: 'cases' must be a path (a string); got {value!r}")
    # A packaged suite stays packaged; any other path is relative to the experiment file.
    if value.startswith(PREFIX):
        return resolve(value, ".jsonl")
    return Path(base, value)


def load_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Read an experiment TOML file; errors name the file and the key."""
    path = Path(path)
    try:
        data = tomllib.loads(_read_text(path, str(path)))
    except tomllib.TOMLDecodeError as exc:
        raise CasesError(f"{path}: not valid TOML ({exc})") from None
    for key in data:
        if key not in _TOP:
            raise CasesError(
                f"{path}: '{key}' is not an experiment field (fields: {', '.join(_TOP)})"
            )
    base = path.parent
    target = data.get("target", {})
    if not isinstance(target, dict):
        raise CasesError(f"{path}: 'target' must be a table; got {target!r}")
    for key in target:
        if key not in _TARGET:
            raise CasesError(
                f"{path}: 'target.{key}' is not a target field (fields: {', '.join(_TARGET)})"
            )
    passed = target.get("pass_env", [])
    if not isinstance(passed, list) or not all(isinstance(n, str) and n for n in passed):
        raise CasesError(
            f"{path}: 'target.pass_env' must be an array of variable names; got {passed!r}"
        )
    variants = data.get("variants", [])
    if not isinstance(variants, list):
        raise CasesError(f"{path}: 'variants' must be an array of tables; got {variants!r}")
    # A variant's own target (a provider of an imported comparison) rides in the target's
    # settings, which build the run's target.
    own = {v.get("name"): v["target"] for v in variants if isinstance(v, dict) and "target" in v}
    for name, spec in own.items():
        if not isinstance(spec, dict):
            raise CasesError(
                f"{path}: the target of variant {name!r} must be a table; got {spec!r}"
            )
    if own and target.get("command"):
        raise CasesError(
            f"{path}: variants with their own 'target' ({', '.join(map(repr, own))}) need a "
            "model server as the run's target; 'target.command' names a harness"
        )
    return Experiment(
        path=path,
        cases=_cases_path(data["cases"], base, path) if "cases" in data else None,
        target={**target, "variants": own} if own else dict(target),
        variants=[_variant(v, f"{path}: 'variants[{i}]'", base) for i, v in enumerate(variants)],
        **_settings(data, path),
        judge=_judge(data["judge"], path) if "judge" in data else None,
        defaults=_defaults(data["defaults"], path) if "defaults" in data else {},
        until=_until(data["until"], path) if "until" in data else {},
    )


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _text_or_file(text: str) -> str:
    if text.startswith("@"):
        path = Path(text[1:])
        return _read_text(path, f"--variant @{path}")
    return text


def parse_variant(spec: str) -> Variant:
    """Parse a ``--variant`` value.

    - ``NAME``: a variant that changes nothing (a baseline under that name);
    - ``NAME=@FILE`` or ``NAME=TEXT``: prefix the user message with the file's text;
    - ``NAME:key=value,key=value``: ``prefix``/``system``/``template`` (``@FILE`` allowed)
      and request params (values parsed as JSON when they are JSON, e.g.
      ``temperature=0.2``).
    """
    head, colon, rest = spec.partition(":")
    if colon and "=" not in head:
        name, params = head, {}
        texts: dict[str, str | None] = {"prefix": None, "system": None, "template": None}
        for item in filter(None, rest.split(",")):
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise ArgumentError(
                    f"--variant {spec!r}: expected key=value after ':'; got {item!r}"
                )
            if key in texts:
                texts[key] = _text_or_file(value)
            else:
                params[key] = parse_value(value)
        return Variant(
            name,
            prefix=texts["prefix"],
            system=texts["system"],
            params=params,
            template=texts["template"],
        )
    name, eq, text = spec.partition("=")
    if not eq:
        return Variant(name)
    return Variant(name, prefix=_text_or_file(text))
