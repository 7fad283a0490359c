"""Gating: an explicit policy over a run, every rule listed with the numbers behind it.

The runner's exit code says whether the experiment ran; the gate says whether the
results meet a policy. ``evalnb gate`` exits 1 when any rule fails, 0 when all pass,
and 2 for a usage error (bad flags, an unreadable run, a rule that cannot be checked).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis import _display as display
from evalnb.analysis._agreement import agreement
from evalnb.analysis._compare import A_BETTER, compare
from evalnb.analysis._flaky import FLAKY, flakiness
from evalnb.analysis._format import interval_text, signed, text_table
from evalnb.analysis._frames import Run
from evalnb.analysis._rates import rates
from evalnb.analysis._runs import WORSE, compare_runs
from evalnb.analysis._suite import suite_rate

__all__ = ["GatePolicy", "format_gate", "gate"]

RESULT_COLUMNS = ["rule", "variant", "check", "value", "op", "threshold", "passed", "detail"]


@dataclass(frozen=True)
class GatePolicy:
    """What a run must show to pass. Leave a rule at its default to skip it.

    - ``min_rate``: the suite rate (mean of per-case rates) of every variant >= this;
    - ``min_case_rate``: every case's pass rate >= this (1.0: every draw passes);
    - ``every_case_passes``: every case passes at least once;
    - ``agreement``: True for every case to meet its ``agreement_min`` (case
      metadata), or a number to require of every case; the estimate compared is the
      modal share (:func:`evalnb.agreement`'s ``agreement``), which reads high with few
      draws, and the detail gives the unbiased pairwise agreement beside it;
    - ``no_worse_than``: a variant the others are compared with (paired, across
      cases); a rule fails when the comparison says that variant is better;
    - ``baseline``: an earlier run directory of the same cases; a rule per variant fails
      when :func:`evalnb.compare_runs` says this run is "worse" (by more than ``margin``);
    - ``margin``: the drop from the baseline that is tolerated (default 0);
    - ``variants``: the variants the rules apply to (default: all);
    - ``check``: the check the rates use (default ``"all"``, every check passed);
    - ``split``: only cases of this split (``"dev"`` or ``"heldout"``);
    - ``require_complete``: the run itself must have status ``complete``;
    - ``level``: confidence level of intervals and of the comparison;
    - ``no_flaky``: no case may be flaky (pass on some repeats and fail on others, see
      :func:`evalnb.flakiness`).
    """

    min_rate: float | None = None
    min_case_rate: float | None = None
    every_case_passes: bool = False
    agreement: bool | float | None = None
    no_worse_than: str | None = None
    baseline: str | None = None
    margin: float = 0.0
    variants: tuple[str, ...] | None = None
    check: str = "all"
    split: str | None = None
    require_complete: bool = True
    level: float = 0.95
    no_flaky: bool = False

    def __post_init__(self) -> None:
        for name in ("min_rate", "min_case_rate", "margin"):
            value = getattr(self, name)
            if value is not None:
                _args.fraction(name, value)
        agreement_min = self.agreement
        if not (agreement_min is None or isinstance(agreement_min, bool)):
            _args.fraction("agreement", agreement_min)
        for name in ("every_case_passes", "require_complete", "no_flaky"):
            if not isinstance(getattr(self, name), bool):
                raise ArgumentError(f"{name!r} must be true or false; got {getattr(self, name)!r}")
        if self.variants is not None:
            object.__setattr__(self, "variants", tuple(_args.names("variants", self.variants)))
        if not isinstance(self.check, str):
            raise ArgumentError(f"'check' must be one check name; got {self.check!r}")
        if self.split is not None:
            _args.choice("split", self.split, ("dev", "heldout"))
        _args.level(self.level)
        if not self.rules():
            raise ArgumentError(
                "the gate policy has no rules: set at least one of min_rate, min_case_rate, "
                "every_case_passes, agreement, no_worse_than, baseline, no_flaky"
            )

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> GatePolicy:
        """A policy from a dict (e.g. a JSON file); unknown keys are an error."""
        if not isinstance(mapping, Mapping):
            raise ArgumentError(f"'policy' must be a mapping of rule names; got {mapping!r}")
        fields = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(mapping) - set(fields))
        if unknown:
            raise ArgumentError(f"'policy' keys must be among {', '.join(fields)}; got {unknown!r}")
        values = dict(mapping)
        if isinstance(values.get("variants"), list):
            values["variants"] = tuple(values["variants"])
        return cls(**values)

    def rules(self) -> list[str]:
        """The names of the rules this policy checks, in order."""
        chosen = [
            ("min_rate", self.min_rate is not None),
            ("min_case_rate", self.min_case_rate is not None),
            ("every_case_passes", self.every_case_passes),
            ("agreement", self.agreement not in (None, False)),
            ("no_worse_than", self.no_worse_than is not None),
            ("baseline", self.baseline is not None),
            ("no_flaky", self.no_flaky),
        ]
        return [name for name, on in chosen if on]


def gate(data: Run | pd.DataFrame, *, policy: GatePolicy | Mapping[str, Any]) -> pd.DataFrame:
    """Check ``policy`` (a :class:`GatePolicy` or a mapping of its fields) against a run:
    one row per rule and variant.

    Returns:
        DataFrame with columns ``rule``, ``variant``, ``check``, ``value`` (the number
        the rule tests), ``op`` and ``threshold`` (what it must satisfy), ``passed``
        (bool) and ``detail`` (the counts behind it, and which cases failed). The run
        passes when ``result["passed"].all()``.

    >>> evalnb.gate(run, policy={"min_rate": 0.9, "every_case_passes": True})  # doctest: +SKIP
    """
    if not isinstance(policy, GatePolicy):
        policy = GatePolicy.from_mapping(policy)
    variants = _variants(data, policy)
    rows = _complete_rows(data) if policy.require_complete and isinstance(data, Run) else []
    if not variants:
        # A rule with nothing to judge fails: an empty run must not pass a gate.
        rows += [_missing(rule, "", policy) for rule in policy.rules()]
        return display.result(pd.DataFrame(rows, columns=RESULT_COLUMNS), display.gate_summary)
    if policy.min_rate is not None:
        rows += _suite_rows(data, policy, variants, policy.min_rate)
    if policy.min_case_rate is not None or policy.every_case_passes:
        rows += _case_rows(data, policy, variants)
    if policy.agreement not in (None, False):
        rows += _agreement_rows(data, policy, variants)
    if policy.no_worse_than is not None:
        rows += _comparison_rows(data, policy, variants)
    if policy.baseline is not None:
        rows += _baseline_rows(data, policy, variants)
    if policy.no_flaky:
        rows += _flaky_rows(data, policy, variants)
    return display.result(pd.DataFrame(rows, columns=RESULT_COLUMNS), display.gate_summary)


def _complete_rows(run: Run) -> list[dict[str, Any]]:
    rows = []
    for run_id, manifest in run.manifests.items():
        status = manifest.get("status")
        detail = f"run {run_id!r} status {status!r}"
        rows.append(_row("run_complete", "", "", float(status == "complete"), "==", 1.0, detail))
    return rows


def _suite_rows(
    data: Any, policy: GatePolicy, variants: list[str], minimum: float
) -> list[dict[str, Any]]:
    by = ["variant", *_split(policy)]
    with warnings.catch_warnings(record=True) as caught, display.cautions_as_warnings():
        warnings.simplefilter("always")
        suite = _only(suite_rate(data, by, check=policy.check, level=policy.level), policy)
    wide = " (too few cases for a narrow interval)" if _args.own_warnings(caught) else ""
    rows = []
    for variant in variants:
        match = suite[suite["variant"].astype(object) == variant]
        if match.empty:
            rows.append(_missing("min_rate", variant, policy))
            continue
        row = match.iloc[0]
        detail = (
            f"{row['k']}/{row['samples']} samples, {row['cases']} cases; "
            f"{interval_text(row['low'], row['high'], policy.level)}{wide}"
        )
        rows.append(_row("min_rate", variant, policy.check, row["estimate"], ">=", minimum, detail))
    return rows


def _case_rows(data: Any, policy: GatePolicy, variants: list[str]) -> list[dict[str, Any]]:
    by = ["variant", "case_id", *_split(policy)]
    per_case = _only(rates(data, by, check=policy.check, level=policy.level), policy)
    per_case = per_case[per_case["n"] > 0]
    rules = [r for r in ("min_case_rate", "every_case_passes") if r in policy.rules()]
    rows = []
    for variant in variants:
        cases = per_case[per_case["variant"].astype(object) == variant]
        if cases.empty:
            rows += [_missing(rule, variant, policy) for rule in rules]
            continue
        if policy.min_case_rate is not None:
            low = cases[cases["estimate"] < policy.min_case_rate - 1e-12]
            detail = _case_list(low, len(cases), "below")
            worst = cases["estimate"].min()
            rows.append(
                _row(
                    "min_case_rate",
                    variant,
                    policy.check,
                    worst,
                    ">=",
                    policy.min_case_rate,
                    detail,
                )
            )
        if policy.every_case_passes:
            never = cases[cases["k"] == 0]
            detail = _case_list(never, len(cases), "never passed")
            fewest = float(cases["k"].min())
            rows.append(_row("every_case_passes", variant, policy.check, fewest, ">=", 1.0, detail))
    return rows


def _flaky_rows(data: Any, policy: GatePolicy, variants: list[str]) -> list[dict[str, Any]]:
    verdicts = _only(
        flakiness(data, _split(policy), check=policy.check, level=policy.level), policy
    )
    verdicts = verdicts[verdicts["n"] > 0]
    rows = []
    for variant in variants:
        cases = verdicts[verdicts["variant"].astype(object) == variant]
        if cases.empty:
            rows.append(_missing("no_flaky", variant, policy))
            continue
        flaky = cases[cases["verdict"] == FLAKY]
        detail = _case_list(flaky, len(cases), "flaky")
        rows.append(_row("no_flaky", variant, policy.check, float(len(flaky)), "==", 0.0, detail))
    return rows


def _variants(data: Any, policy: GatePolicy) -> list[str]:
    if isinstance(data, Run):
        present = data.variants
    else:
        present = [str(v) for v in pd.unique(data["variant"].astype(object))]
    if policy.variants is None:
        return present
    for name in policy.variants:
        _args.choice("variants", name, present)
    return list(policy.variants)


def _split(policy: GatePolicy) -> list[str]:
    return [] if policy.split is None else ["split"]


def _only(frame: pd.DataFrame, policy: GatePolicy) -> pd.DataFrame:
    if policy.split is None:
        return frame
    return frame[frame["split"].astype(object) == policy.split]


def _row(
    rule: str, variant: str, check: str, value: float, op: str, threshold: float, detail: str
) -> dict[str, Any]:
    value = float(value)
    passed = math.isclose(value, threshold) if op == "==" else value >= threshold - 1e-12
    return {
        "rule": rule,
        "variant": variant,
        "check": check,
        "value": value,
        "op": op,
        "threshold": float(threshold),
        "passed": bool(passed),
        "detail": detail,
    }


def _missing(rule: str, variant: str, policy: GatePolicy) -> dict[str, Any]:
    where = f" in split {policy.split!r}" if policy.split else ""
    what = f"of {variant!r}" if variant else "(the run has no variants)"
    row = _row(rule, variant, policy.check, math.nan, ">=", 0.0, "")
    row.update(passed=False, detail=f"no scored samples {what}{where}")
    return row


def _case_list(failing: pd.DataFrame, total: int, what: str) -> str:
    if failing.empty:
        return f"all {total} cases ok"
    shown = ", ".join(
        f"{row.case_id} ({row.k}/{row.n})" for row in failing.head(5).itertuples(index=False)
    )
    more = f", and {len(failing) - 5} more" if len(failing) > 5 else ""
    return f"{len(failing)} of {total} cases {what}: {shown}{more}"


def _agreement_rows(data: Any, policy: GatePolicy, variants: list[str]) -> list[dict[str, Any]]:
    table = agreement(data, check=policy.check)
    if policy.split is not None and isinstance(data, Run):
        cases = data.cases
        chosen = set(
            cases.loc[cases["split"].astype(object) == policy.split, "case_id"].astype(object)
        )
        table = table[table["case_id"].astype(object).isin(chosen)]
    if isinstance(policy.agreement, bool):
        minimum = table["agreement_min"]
        if minimum.isna().all():
            raise ArgumentError(
                "'agreement' is true but no case sets metadata.agreement_min; give a number "
                "(e.g. agreement=0.8 or --agreement 0.8)"
            )
    else:
        assert policy.agreement is not None  # gate() skips the rule when it is None
        minimum = pd.Series(float(policy.agreement), index=table.index)
    table = table.assign(minimum=minimum)
    rows = []
    for variant in variants:
        cases = table[(table["variant"].astype(object) == variant) & table["minimum"].notna()]
        failing = cases[cases["agreement"] < cases["minimum"] - 1e-9]
        shown = ", ".join(
            f"{row.case_id} ({row.agreement:.2f} < {row.minimum:.2f}; pairwise {row.pairwise:.2f})"
            for row in failing.head(5).itertuples(index=False)
        )
        detail = (
            f"all {len(cases)} cases agree enough (modal share >= agreement_min)"
            if failing.empty
            else f"{len(failing)} of {len(cases)} cases below their minimum (modal share, "
            f"which reads high with few draws; pairwise agreement beside it): {shown}"
        )
        rows.append(
            _row("agreement", variant, "", float(len(failing)), "==", 0.0, detail)
            | {"passed": bool(failing.empty and not cases.empty)}
        )
    return rows


def _comparison_rows(data: Any, policy: GatePolicy, variants: list[str]) -> list[dict[str, Any]]:
    base = policy.no_worse_than
    _args.choice("no_worse_than", base, _variants(data, dataclasses.replace(policy, variants=None)))
    rows = []
    for variant in variants:
        if variant == base:
            continue
        by = _split(policy)
        result = compare(data, a=base, b=variant, check=policy.check, by=by, level=policy.level)
        result = _only(result, policy)
        if result.empty:
            rows.append(_missing("no_worse_than", variant, policy))
            continue
        row = result.iloc[0]
        detail = (
            f"{variant} - {base}: {signed(row['diff'])}, "
            f"{interval_text(row['low'], row['high'], policy.level)}, p={row['p_value']:.3g}: "
            f"{row['verdict']} ({row['cases']} cases x {row['repeats_b']:.3g} repeats)"
            + (f"; {row['note']}" if row["note"] else "")
        )
        rows.append(
            {
                "rule": f"no_worse_than {base}",
                "variant": variant,
                "check": policy.check,
                "value": float(row["diff"]),
                "op": "not worse",
                "threshold": 0.0,
                "passed": row["verdict"] != A_BETTER,
                "detail": detail,
            }
        )
    return rows


def _baseline_rows(data: Any, policy: GatePolicy, variants: list[str]) -> list[dict[str, Any]]:
    if not isinstance(data, Run):
        raise TypeError(f"'baseline' needs a Run (from evalnb.load); got {type(data).__name__}")
    if policy.split is not None:
        raise ArgumentError("'baseline' compares whole runs; it cannot be combined with 'split'")
    assert policy.baseline is not None  # gate() skips the rule when it is None
    result = compare_runs(
        policy.baseline, data, margin=policy.margin, check=policy.check, level=policy.level
    )
    rows = []
    for variant in variants:
        match = result[result["variant"] == variant]
        if match.empty or int(match.iloc[0]["cases"]) == 0:
            row = _missing("baseline", variant, policy)
            row["detail"] = f"no case of {variant!r} ran in both this run and the baseline"
            rows.append(row)
            continue
        rows.append(baseline_row(match.iloc[0]))
    return rows


def baseline_row(row: pd.Series) -> dict[str, Any]:
    """One gate row from a :func:`evalnb.compare_runs` row: it fails only on "worse"."""
    extra = [text for text in (row["unmatched"], row["note"]) if text]
    detail = (
        f"{row['rate_b']:.3f} vs {row['rate_a']:.3f} in {row['a']}: {signed(row['diff'])}, "
        f"{interval_text(row['low'], row['high'], row['level'])}, p={row['p_adjusted']:.3g}: "
        f"{row['verdict']} ({row['cases']} cases x {row['repeats_b']:.3g} repeats, "
        f"{row['mode']} cases)" + "".join(f"; {text}" for text in extra)
    )
    return {
        "rule": "baseline",
        "variant": str(row["variant"]),
        "check": str(row["check"]),
        "value": float(row["diff"]),
        "op": "not worse",
        "threshold": 0.0 - float(row["margin"]),
        "passed": row["verdict"] != WORSE,
        "detail": detail,
    }


def format_gate(result: pd.DataFrame) -> str:
    """The gate result as terminal text, ending in a PASS or FAIL line."""
    failed = int((~result["passed"]).sum())
    shown = result.assign(
        value=result["value"].map(lambda v: "" if pd.isna(v) else f"{v:.4g}"),
        threshold=result["threshold"].map(lambda v: "" if pd.isna(v) else f"{v:.4g}"),
        passed=result["passed"].map({True: "pass", False: "FAIL"}),
    ).rename(columns={"passed": "result"})
    table = text_table(shown.astype(str))
    verdict = (
        f"gate: PASS ({len(result)} rules)"
        if failed == 0
        else f"gate: FAIL ({failed} of {len(result)} rules failed)"
    )
    return f"{table}\n{verdict}"
