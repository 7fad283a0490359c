"""A run's design: what a run is asked to do, as one typed, frozen value.

Built once, from keywords (:func:`evalnb.run` builds one), from an experiment file (with
command-line flags over it), or from a run's manifest, and validated once, as it is built.
The session's phases take the design; the manifest stores it (:meth:`RunDesign.to_manifest`)
and a resume rebuilds it (:meth:`RunDesign.from_manifest`) and compares, so no field can be
forgotten on the way: there is one type.

Not in the design: the target (a live object the manifest describes), where the run is
written, and how it is shown (progress, flushes).

>>> design = RunDesign.build("data/cases/shop.jsonl", variants=["v1", "v2"], repeats=5)
>>> design.repeats
5
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnb._exceptions import ArgumentError, CasesError, StoreError
from evalnb._numbers import is_whole
from evalnb._prices import Prices, price_table
from evalnb._stopping import RepeatRule, StoppingRule, repeat_rule_from_record, rule_from_record
from evalnb._types import Case, Variant
from evalnb.cases._files import file_sha256, load_cases
from evalnb.checks import Check, CheckSpec, build_check, build_checks, built_cases

__all__ = [
    "IMPORTED",
    "ORDERS",
    "JudgeSpec",
    "RunDesign",
    "cases_from_manifest",
    "check_order",
    "check_seed",
    "check_timeout",
    "check_whole",
]

ORDERS = ("alternate", "shuffle")

#: The record an import writes beside a suite; a run of that suite keeps a copy.
IMPORTED = "imported.json"


@dataclass(frozen=True)
class JudgeSpec:
    """The model that answers ``judge`` checks: its name, and its OpenAI-compatible URL and
    key variable when they are not the target's."""

    model: str
    base_url: str | None = None
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        for name in ("model", "base_url", "api_key_env"):
            value = getattr(self, name)
            if (value is not None or name == "model") and (not isinstance(value, str) or not value):
                raise ArgumentError(f"'judge.{name}' must be a non-empty string; got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True, eq=False)
class RunDesign:
    """What a run does: cases x variants x repeats in an order, checked, within limits.

    Build one with :meth:`build` (the keywords of ``evalnb.run``), from an experiment
    file (:meth:`evalnb.cases.Experiment.design`) or from a manifest
    (:meth:`from_manifest`); every field is validated there. ``cases_file`` is the cases
    file's provenance (path, SHA-256, defaults, the import record), ``None`` for cases
    given as objects.
    """

    cases: tuple[Case, ...]
    variants: tuple[Variant, ...] = (Variant("baseline"),)
    repeats: int | RepeatRule = 1
    order: str = "alternate"
    seed: int = 0
    checks: tuple[Check, ...] = ()
    defaults: Mapping[str, Any] | None = None
    judge: JudgeSpec | None = None
    until: StoppingRule | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    prices: Prices | None = None
    concurrency: int = 8
    timeout: float | None = None
    cache: str | None = None
    cases_file: Mapping[str, Any] | None = None

    @classmethod
    def build(
        cls,
        cases: Sequence[Case] | str | os.PathLike[str],
        *,
        variants: Iterable[Variant | str] | None = None,
        repeats: int | RepeatRule = 1,
        order: str = "alternate",
        seed: int = 0,
        checks: Iterable[CheckSpec] = (),
        defaults: Mapping[str, Any] | None = None,
        judge: JudgeSpec | Mapping[str, Any] | None = None,
        until: StoppingRule | None = None,
        max_cost: float | None = None,
        max_tokens: int | None = None,
        prices: Prices | str | os.PathLike[str] | None = None,
        concurrency: int = 8,
        timeout: float | None = None,
        cache: str | os.PathLike[str] | None = None,
    ) -> RunDesign:
        """The design these keywords describe, every one checked: a mistake is said
        before anything is written (``ArgumentError``/``CasesError`` naming the field)."""
        built, cases_file = _load_cases(cases, defaults)
        return cls(
            cases=tuple(built),
            variants=tuple(_variants(variants)),
            repeats=repeats if isinstance(repeats, RepeatRule) else check_whole("repeats", repeats),
            order=check_order(order),
            seed=check_seed(seed),
            checks=tuple(build_checks(checks)),
            defaults=dict(defaults) if defaults else None,
            judge=JudgeSpec(**judge) if isinstance(judge, Mapping) else judge,
            until=until,
            max_cost=_max_cost(max_cost),
            max_tokens=None if max_tokens is None else check_whole("max_tokens", max_tokens),
            prices=None if prices is None else price_table(prices),
            concurrency=check_whole("concurrency", concurrency),
            timeout=check_timeout(timeout),
            cache=None if cache is None else str(cache),
            cases_file=cases_file,
        )

    @property
    def max_repeats(self) -> int:
        """The repeats planned per case and variant: ``repeats``, or its rule's ``max``."""
        return self.repeats.max if isinstance(self.repeats, RepeatRule) else self.repeats

    @property
    def repeat_rule(self) -> RepeatRule | None:
        """The rule that settles each case's repeats (``evalnb.UntilSettled``), if any."""
        return self.repeats if isinstance(self.repeats, RepeatRule) else None

    def __post_init__(self) -> None:
        if self.repeat_rule is not None and self.until is not None:
            raise ArgumentError(
                "'repeats' as a rule and 'until' both stop a run early; give one of them"
            )
        if self.until is not None and not isinstance(self.until, StoppingRule):
            raise TypeError(
                "'until' must be a stopping rule such as evalnb.Decided(a=..., b=...); "
                f"got {self.until!r}"
            )
        if self.max_cost is not None and self.prices is None:
            raise ArgumentError(
                "'max_cost' needs 'prices' (a price table: TOML file or mapping of model to "
                "(input, output) dollars per million tokens)"
            )
        _check_messages(self.cases, self.variants)

    def __eq__(self, other: object) -> bool:
        # Two designs are the same when the manifest records them the same: checks built
        # from one spec are equal, whatever objects hold them.
        if not isinstance(other, RunDesign):
            return NotImplemented
        return self.to_manifest() == other.to_manifest()

    __hash__ = None  # type: ignore[assignment]  # a design holds dicts

    def to_manifest(self) -> dict[str, Any]:
        """The design as the manifest's keys (``docs/schema.md``): the JSON on disk."""
        out: dict[str, Any] = {
            "cases_file": dict(self.cases_file) if self.cases_file is not None else None,
            "cases": [c.to_dict() for c in self.cases],
            "extra_checks": [c.spec for c in self.checks],
            "variants": [v.to_dict() for v in self.variants],
            "repeats": self.max_repeats,
            "concurrency": self.concurrency,
            "order": {"scheme": self.order, "seed": self.seed},
            "timeout": self.timeout,
        }
        if self.judge is not None:
            out["judge"] = {"spec": self.judge.to_dict()}
        if self.until is not None:
            out["until"] = {"rule": self.until.describe()}
        if self.repeat_rule is not None:
            out["repeats_rule"] = self.repeat_rule.describe()
        if self.max_cost is not None or self.max_tokens is not None or self.prices:
            out["budget"] = {
                "max_cost": self.max_cost,
                "max_tokens": self.max_tokens,
                "prices": {m: list(p) for m, p in self.prices.items()} if self.prices else None,
            }
        if self.cache is not None:
            out["cache"] = {"path": self.cache}
        recorded: dict[str, Any] = json.loads(json.dumps(out, default=str))
        return recorded

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], where: str = "manifest.json") -> RunDesign:
        """The design a manifest records (as :meth:`to_manifest` wrote it); a run's
        Python checks are rebuilt from their specs. ``where`` names the file in errors."""
        try:
            cases, extra = cases_from_manifest(manifest, where, given=set(), cases=True)
            order = manifest.get("order") or {}
            judge = (manifest.get("judge") or {}).get("spec")
            until = (manifest.get("until") or {}).get("rule")
            budget = manifest.get("budget") or {}
            prices = budget.get("prices")
            return cls(
                cases=tuple(cases),
                variants=tuple(_variant_from(v) for v in manifest["variants"]),
                repeats=(
                    repeat_rule_from_record(manifest["repeats_rule"])
                    if manifest.get("repeats_rule")
                    else manifest["repeats"]
                ),
                order=order.get("scheme", "alternate"),
                seed=order.get("seed", 0),
                checks=tuple(extra),
                defaults=(manifest.get("cases_file") or {}).get("defaults"),
                judge=JudgeSpec(**judge) if judge else None,
                until=rule_from_record(until) if until else None,
                max_cost=budget.get("max_cost"),
                max_tokens=budget.get("max_tokens"),
                prices=price_table({m: tuple(p) for m, p in prices.items()}) if prices else None,
                concurrency=manifest.get("concurrency", 8),
                timeout=manifest.get("timeout"),
                cache=(manifest.get("cache") or {}).get("path"),
                cases_file=manifest.get("cases_file"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"{where}: not a run design this evalnb can read ({exc})") from None

    def same_run(self, manifest: Mapping[str, Any], where: str) -> None:
        """Refuse to resume the run a ``manifest`` records with this design when what
        makes its samples differs: cases, variants, repeats, order."""
        ours = self.to_manifest()
        keys = {
            "cases": ("cases",),
            "variants": ("variants",),
            "repeats": ("repeats",),
            "repeats_rule": ("repeats_rule",),
            "order.scheme": ("order", "scheme"),
            "order.seed": ("order", "seed"),
        }
        for key, path in keys.items():
            if _dig(ours, path) != _dig(manifest, path):
                raise StoreError(
                    f"{where}: '{key}' differs from this resume's; resume with exactly the "
                    "cases, variants, repeats and order of the original run"
                )


def _dig(data: Mapping[str, Any], path: Sequence[str]) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, Mapping) else None  # type: ignore[assignment]
    return data


def _variant_from(item: Mapping[str, Any]) -> Variant:
    return Variant(
        item["name"],
        prefix=item.get("prefix"),
        system=item.get("system"),
        params=item.get("params") or {},
        template=item.get("template"),
        shuffle_choices=item.get("shuffle_choices", False),
        shuffle_seed=item.get("shuffle_seed", 0),
        chat=item.get("chat", False),
        rendered=item.get("rendered") or {},
    )


def _rebuilt(
    spec: dict[str, Any], where: str, case: Case | None, given: set[str], lost: list[str]
) -> Check | None:
    """A check rebuilt from its recorded spec; None when a check of its name is ``given``
    again or it cannot be rebuilt (then ``lost`` says which and why)."""
    name = spec.get("name") or spec.get("type")
    if name in given:
        return None
    try:
        return build_check(spec, where=where, case=case)
    except (ValueError, TypeError) as exc:
        owner = f"of case {case.id!r}" if case is not None else "given to every case"
        lost.append(f"{name!r} {owner} ({spec.get('function', spec.get('type'))}: {exc})")
        return None


def cases_from_manifest(
    manifest: Mapping[str, Any], where: str, given: set[str], *, cases: bool
) -> tuple[list[Case], list[Check]]:
    """The manifest's cases (when ``cases``) and its checks given to every case, rebuilt.

    A check that cannot be rebuilt (a callable given at run time, a module no longer
    importable) is an error naming it, unless a check of that name is ``given`` again (it
    then takes the check's place): a rescoring never drops a check silently."""
    lost: list[str] = []
    rebuilt = []
    for item in manifest["cases"] if cases else ():
        case = Case(**{**item, "checks": ()})
        checks = [
            _rebuilt(spec, f"checks[{i}]", case, given, lost)
            for i, spec in enumerate(item["checks"])
        ]
        rebuilt.append(Case(**{**item, "checks": [c for c in checks if c is not None]}))
    extra = [
        _rebuilt(spec, f"extra_checks[{i}]", None, given, lost)
        for i, spec in enumerate(manifest.get("extra_checks") or ())
    ]
    if lost:
        more = f" and {len(lost) - 1} more" if len(lost) > 1 else ""
        raise CasesError(
            f"{where}: the run has Python checks that cannot be rebuilt: "
            f"{lost[0]}{more}; pass them again (checks=, --check, or cases=/--cases) to score"
        )
    return rebuilt, [c for c in extra if c is not None]


def check_whole(name: str, value: Any) -> int:
    if not is_whole(value, 1):
        raise ArgumentError(f"{name!r} must be a whole number >= 1; got {value!r}")
    return int(value)


def check_seed(value: Any) -> int:
    if not is_whole(value, 0):
        raise ArgumentError(f"'seed' must be a whole number >= 0; got {value!r}")
    return int(value)


def check_order(value: Any) -> str:
    if value not in ORDERS:
        raise ArgumentError(f"'order' must be one of {ORDERS}; got {value!r}")
    return str(value)


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ArgumentError(f"{name!r} must be a number > 0; got {value!r}")
    return float(value)


def check_timeout(value: Any) -> float | None:
    return _number("timeout", value)


def _max_cost(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return _number("max_cost", value)
    except ArgumentError:
        raise ArgumentError(f"'max_cost' must be a number of dollars > 0; got {value!r}") from None


def _load_cases(
    cases: Sequence[Case] | str | os.PathLike[str], defaults: Mapping[str, Any] | None
) -> tuple[list[Case], dict[str, Any] | None]:
    """The built cases, and the cases file's provenance when they come from one."""
    cases_file: dict[str, Any] | None = None
    if isinstance(cases, str | os.PathLike):
        # Read first: a missing or bad file is a located error, not a failed hash.
        loaded = load_cases(cases, defaults=defaults)
        cases_file = {"path": str(cases), "sha256": file_sha256(cases)}
        if defaults:
            cases_file["defaults"] = dict(defaults)
        imported = Path(cases).parent / IMPORTED
        if imported.is_file():  # an imported suite: what came in and what did not
            cases_file["imported"] = {"path": str(imported), "sha256": file_sha256(imported)}
        cases = loaded
    elif defaults:
        raise ArgumentError(
            "'defaults' apply to a cases file as it is read; with Case objects, put the "
            "checks and fields in the cases"
        )
    elif isinstance(cases, bytes) or not isinstance(cases, Iterable):
        raise TypeError(
            f"'cases' must be a cases file's path or Case objects; got {type(cases).__name__}"
        )
    built = built_cases(cases)
    if not built:
        raise ArgumentError("'cases' must hold at least one case; got none")
    ids = [c.id for c in built]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise ArgumentError(f"'cases' must have unique ids; got {repeated!r} more than once")
    return built, cases_file


def _variants(variants: Iterable[Variant | str] | None) -> list[Variant]:
    if variants is None:
        return [Variant("baseline")]
    out = [Variant(v) if isinstance(v, str) else v for v in variants]
    if not out:
        raise ArgumentError("'variants' must name at least one variant; got an empty list")
    names = [v.name for v in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ArgumentError(f"'variants' must have unique names; got {duplicates!r} more than once")
    for v in out:
        if not isinstance(v, Variant):
            raise TypeError(f"'variants' must hold Variant objects or names; got {v!r}")
    return out


def _check_messages(cases: Sequence[Case], variants: Sequence[Variant]) -> None:
    """Refuse a variant that cannot apply to a case (an undefined template variable, a
    prefix with no user message) before anything runs."""
    for case in cases:
        for variant in variants:
            try:
                variant.messages_for(case)
            except ValueError as exc:
                raise ArgumentError(f"case {case.id!r}, variant {variant.name!r}: {exc}") from None
