"""Reading a run that its stopping rule may have stopped early (``run(..., until=Decided)``).

A fixed-n interval on an optionally stopped run is not valid: the run stopped because
the data looked decided. Every reader therefore goes through this module: it either
reads the run's own anytime-valid sequence (:func:`sequence_frame`,
:func:`compare_sequence`, valid at any stopping time, at any level, and on any
subpopulation of cases such as a ``by=`` group of a case field), or it refuses in one
line (:func:`refuse_stopped`), saying what to use instead. No argument is ignored: one the
sequence cannot honour is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb.analysis import _args
from evalnb.analysis._frames import Run
from evalnb.analysis._paired import wide_counts
from evalnb.analysis._sequence import (
    Decided,
    _sequence_of,
    is_sequential,
    unit_means,
    with_units,
)
from evalnb.analysis._tally import CASE_FIELDS, tallies

__all__ = [
    "check_arguments",
    "compare_sequence",
    "confidence_sequence",
    "holds_stopped",
    "is_sequential",
    "refuse_stopped",
    "sequence_frame",
]

#: What every refusal says first.
STOPPED = (
    "this run was stopped by its sequence (until=Decided): a fixed-n {what} is not valid on it"
)


def holds_stopped(data: Any) -> bool:
    """Whether ``data`` is a Run any of whose runs was made with ``until=``."""
    return isinstance(data, Run) and any(m.get("until") for m in data.manifests.values())


def refuse_stopped(data: Any, what: str, instead: str = "evalnb.compare(run)") -> None:
    """Raise the one-line refusal when ``data`` holds an optionally stopped run."""
    if holds_stopped(data):
        raise ArgumentError(f"{STOPPED.format(what=what)}; read it with {instead}")


def _refuse(argument: str, value: Any, why: str) -> ArgumentError:
    return ArgumentError(
        f"{STOPPED.format(what='test')}; '{argument}' {why}; got {argument}={value!r}"
    )


def confidence_sequence(
    data: Run | Sequence[float] | np.ndarray,
    *,
    a: str | None = None,
    b: str | Sequence[str] | None = None,
    check: str = "all",
    alpha: float | None = None,
    margin: float | None = None,
    population: int | None = None,
    groups: Sequence[Any] | None = None,
) -> pd.DataFrame:
    """The anytime-valid confidence sequence for the mean per-unit difference (B - A),
    one row per look. The unit is the case, or the case group when cases have groups
    (as in :func:`evalnb.compare`): a group's difference is the mean over its cases.

    ``data`` is a run made with ``until=evalnb.Decided(...)`` (its rule gives ``a``,
    ``b``, ``alpha`` and ``margin`` unless given here; ``alpha`` is the family's, split
    over the rule's comparisons; the units are taken in the order the run drew them, as
    far as every one of them is complete), or per-case differences in [-1, 1] in the
    order the cases were drawn (``alpha`` default 0.05; ``groups``: each case's group,
    the cases of a group drawn together; ``population``: the number of units in the
    suite, for the without-replacement form, exact only when each unit's difference is a
    fixed number, and not for a run).

    Returns:
        DataFrame, one row per look (and comparison, for a run: ``a``, ``b``, ``check``
        first), columns ``cases`` (looked at so far), ``groups`` (units so far: the
        cases themselves when they have no groups), ``estimate`` (the mean difference
        per unit), ``low``, ``high`` (the sequence: the running intersection, on a grid
        of 0.001), ``p_value`` (anytime-valid, for no difference), ``level``, ``verdict``
        ("B better", "A better", "equivalent" when inside +-``margin``, else "can't tell
        yet"), ``unit`` ("case" or "group") and ``method``; for a run also ``samples``
        (both sides, so far).

    >>> evalnb.confidence_sequence(evalnb.load("runs/until"))  # doctest: +SKIP
    """
    if isinstance(data, Run):
        if population is not None or groups is not None:
            raise ArgumentError(
                "'population' and 'groups' are for differences given as numbers; a run "
                f"knows its cases' groups and is read with replacement; got "
                f"population={population!r}, groups={groups!r}"
            )
        return sequence_frame(data, a=a, b=b, check=check, alpha=alpha, margin=margin)
    d = np.asarray(data, dtype=float)
    cases = np.arange(1, d.size + 1)
    if groups is not None:
        if len(groups) != d.size:
            raise ArgumentError(
                f"'groups' must give one group per difference ({d.size}); got {len(groups)}"
            )
        codes = pd.factorize(pd.Series(list(groups), dtype=object), sort=False)[0]
        cases = np.cumsum(np.bincount(codes))
        d = unit_means(d, list(groups))
    frame = _sequence_of(
        d, alpha=0.05 if alpha is None else alpha, margin=margin, population=population
    )
    return with_units(frame, cases, grouped=groups is not None)


def sequence_frame(
    data: Run,
    *,
    a: str | None,
    b: Any,
    check: Any,
    alpha: float | None = None,
    margin: float | None = None,
    by: Sequence[str] = (),
) -> pd.DataFrame:
    """The confidence sequence of a run made with ``until=Decided``, one row per ``by``
    group, comparison, check and look, from its samples in the order the run drew its
    units (cases, or case groups). ``alpha`` is the family's (the rule's by default),
    split over the rule's comparisons as the rule split it."""
    until = _until_record(data)
    rule = Decided.from_record(until["rule"])
    family = len(rule.variants) - 1
    if alpha is not None and not (is_number(alpha) and 0 < alpha < 1):
        raise ArgumentError(f"'alpha' must be None or a number in (0, 1); got {alpha!r}")
    each = rule.alpha_each if alpha is None else alpha / family
    margin = rule.margin if margin is None else margin
    a = rule.a if a is None else a
    bs = list(rule.variants[1:]) if b is None else [b] if isinstance(b, str) else list(b)
    by = _case_level(data, list(by))
    looked = _looked_at(data, until)
    groups = _groups(data)
    grouped = len(set(groups.values())) < len(groups)
    position = {case: i for i, case in enumerate(_whole_groups(looked, groups))}
    parts = []
    for name in bs:
        wide = _paired(data, a, name, check, by)
        for key, rows in wide.groupby([*by, "check"], sort=False, observed=True):
            rows = rows[rows["paired"]].copy()
            rows["_at"] = rows["case_id"].astype(object).map(position)
            rows = rows.dropna(subset=["_at"]).sort_values("_at", kind="stable")
            if rows.empty:
                continue
            units = rows["case_id"].astype(object).map(groups).tolist()
            seq = _sequence_of(
                unit_means(rows["diff"].to_numpy(float), units),
                alpha=each,
                margin=margin,
                population=None,
            )
            codes = pd.factorize(pd.Series(units, dtype=object), sort=False)[0]
            seq = with_units(seq, np.cumsum(np.bincount(codes)), grouped=grouped)
            sizes = np.bincount(codes, weights=(rows["n_a"] + rows["n_b"]).to_numpy(float))
            seq["samples"] = np.cumsum(sizes).astype(np.int64)
            keys = key if isinstance(key, tuple) else (key,)
            values = dict(zip([*by, "check"], keys, strict=True))
            labels = {
                **{c: values[c] for c in by},
                "a": a,
                "b": name,
                "check": str(values["check"]),
            }
            for i, (column, value) in enumerate(labels.items()):
                seq.insert(i, column, value)
            parts.append(seq)
    if not parts:
        raise ArgumentError(f"no case of this run has scored samples of both {a!r} and {bs!r}")
    return pd.concat(parts, ignore_index=True)


def _case_level(data: Run, by: list[str]) -> list[str]:
    """``by`` on a stopped run: case fields only. A subpopulation of cases (a tag, a
    split) keeps its cases in the run's random order, so its own sequence is valid at the
    run's stopping time; a sample column (``repeat``, ``status``) would split cases."""
    for column in by:
        if column in ("case_id", "variant", "group"):
            raise _refuse("by", by, f"must not include {column!r}")
        if column not in CASE_FIELDS and not column.startswith("metadata."):
            raise _refuse(
                "by",
                by,
                "must name case fields (tags, split, metadata.<key>): the sequence runs "
                f"over cases, and {column!r} is not one",
            )
    return by


def _groups(data: Run) -> dict[str, str]:
    """Each case's unit: its group (itself when it has none)."""
    cases = data.cases
    ids = cases["case_id"].astype(object)
    group = cases["group"].astype(object).where(cases["group"].notna(), ids)
    return dict(zip(ids, group, strict=True))


def _whole_groups(looked: list[str], groups: Mapping[str, str]) -> list[str]:
    """The looked-at cases whose whole group was looked at (the rule sees whole groups)."""
    seen = set(looked)
    members: dict[str, list[str]] = {}
    for case, group in groups.items():
        members.setdefault(group, []).append(case)
    return [c for c in looked if all(m in seen for m in members.get(groups.get(c, c), [c]))]


def _looked_at(data: Run, until: Mapping[str, Any]) -> list[str]:
    """The drawn cases a look could see: the longest run of complete cases from the start
    of the drawn order, as the runner looked (a case begun when the rule fired is kept
    in the run but is not part of the sequence)."""
    manifest = data.manifest
    per_case = len(manifest.get("variants") or []) * int(manifest.get("repeats") or 1)
    counts = data.table("samples", ["case_id"])["case_id"].astype(object).value_counts()
    looked = []
    for case in until.get("order") or []:
        if counts.get(case, 0) < per_case:
            break
        looked.append(case)
    return looked


def _until_record(data: Run) -> dict[str, Any]:
    until = data.manifest.get("until") if len(data.manifests) == 1 else None
    if not until:
        raise ArgumentError("this run was not made with until=Decided(...): it has no sequence")
    return dict(until)


def check_arguments(
    *, on: str, mode: str, source: str, adjust: str | None, level: float
) -> tuple[float, str]:
    """The arguments of :func:`evalnb.compare` the sequence honours, or a refusal."""
    level = _args.level(level)
    if on != "variant":
        raise _refuse("on", on, "must be 'variant': the sequence compares the run's variants")
    if mode != "random":
        raise _refuse(
            "mode", mode, "must be 'random': its sequence generalises to the cases' population"
        )
    if source != "checks":
        raise _refuse("source", source, "must be 'checks': the sequence reads the check outcomes")
    if adjust not in ("holm", "bonferroni"):
        raise _refuse(
            "adjust",
            adjust,
            "must be 'holm' or 'bonferroni': the rule split alpha over its comparisons "
            "(Bonferroni) before the first look",
        )
    return level, adjust


def compare_sequence(
    data: Run,
    by: Sequence[str] = (),
    *,
    a: str | None,
    b: Any,
    check: Any,
    on: str = "variant",
    mode: str = "random",
    source: str = "checks",
    level: float = 0.95,
    adjust: str | None = "holm",
) -> pd.DataFrame:
    """:func:`evalnb.compare` on a run stopped by its sequence: the last look of the same
    sequence at ``level`` (the family's, split over the rule's comparisons), per ``by``
    group of a case field, labelled; never a fixed-n interval on an optionally stopped run.
    """
    level, adjust = check_arguments(on=on, mode=mode, source=source, adjust=adjust, level=level)
    by = _args.names("by", list(by))
    until = _until_record(data)
    rule = Decided.from_record(until["rule"])
    alpha = rule.alpha if math.isclose(1 - level, rule.alpha, abs_tol=1e-12) else 1 - level
    seq = sequence_frame(data, a=a, b=b, check=check, alpha=alpha, by=by)
    keys = [*by, "a", "b", "check"]
    last = seq.groupby(keys, sort=False, observed=True).tail(1).reset_index(drop=True)
    family = len(rule.variants) - 1
    note = _note(until, alpha, rule, adjust, family)
    rows = []
    for row in last.to_dict("records"):
        wide = _rates(data, row, by)
        rows.append(
            {
                **{k: row[k] for k in [*by, "check", "a", "b"]},
                "cases": int(row["cases"]),
                "groups": int(row["groups"]),
                **wide,
                **sequence_columns(row),
                "p_adjusted": min(1.0, float(row["p_value"]) * family),
                "note": note(int(row["cases"])),
                "verdict": row["verdict"],
                "mode": "random",
                "method": row["method"],
                "exact_method": "",
                "interval_method": row["method"],
                **UNFIXED,
                "comparisons": family,
                "adjust": "bonferroni" if family > 1 else "none",
            }
        )
    return _order(pd.DataFrame(rows), by)


#: A sequence's interval can exclude a difference at any look; no fixed interval stands beside.
UNFIXED = {"bounded": True, "fixed_low": math.nan, "fixed_high": math.nan, "fixed_method": ""}


def sequence_columns(point: Mapping[str, Any]) -> dict[str, Any]:
    """A sequence's point (``estimate``, ``low``, ``high``, ``level``, ``p_value``) as
    ``compare``'s columns: no standard error, no degrees of freedom, no exact test."""
    return {
        "diff": float(point["estimate"]),
        "se": math.nan,
        "df": math.nan,
        "low": float(point["low"]),
        "high": float(point["high"]),
        "level": float(point["level"]),
        "p_value": float(point["p_value"]),
        "p_method": float(point["p_value"]),
        "p_exact": math.nan,
        "min_p": 0.0,
    }


def _note(until: Mapping[str, Any], alpha: float, rule: Decided, adjust: str, family: int) -> Any:
    """The note of each row, from the cases behind it."""
    looks = until.get("looks") or []
    looked = int(looks[-1].get("cases", len(looks))) if looks else None
    total = len(until.get("order") or [])
    stopped = until.get("stopped")

    def note(cases: int) -> str:
        seen = cases if looked is None else looked
        text = (
            f"stopped early after {seen} of {total} cases ({stopped}); the interval is "
            "the anytime-valid sequence at its last look"
            if seen < total
            else f"every one of the {total} cases ran; the interval is the sequence's last look"
        )
        if cases > seen:
            text += f"; {cases - seen} more finished in flight and are included"
        if not math.isclose(alpha, rule.alpha):
            text += f"; at level {1 - alpha:g}, not the rule's {1 - rule.alpha:g}"
        if family > 1 and adjust == "holm":
            text += "; Bonferroni (the rule's split of alpha), not Holm"
        return text

    return note


_COLUMNS = [
    "check", "a", "b", "cases", "groups", "repeats_a", "repeats_b", "rate_a", "rate_b",
    "diff", "se", "df", "low", "high", "level", "p_value", "p_method", "p_exact", "min_p",
    "p_adjusted", "correlation", "note", "verdict", "mode", "method", "exact_method",
    "interval_method", "bounded", "fixed_low", "fixed_high", "fixed_method", "unpaired",
    "comparisons", "adjust",
]  # fmt: skip


def _order(out: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """compare()'s columns in compare()'s order."""
    return out[[*by, *_COLUMNS]]


def _paired(data: Run, a: str, b: str, check: Any, by: list[str]) -> pd.DataFrame:
    """Per ``by`` group, check and case: both sides' counts, rates and difference, and
    whether both sides scored the case (only then is it paired, as in
    :func:`evalnb.compare`)."""
    counts = tallies(data, [*by, "variant", "case_id"], check=check)
    side = counts["variant"].astype(object).astype(str)
    for name in (a, b):
        if not (side == name).any():
            raise ArgumentError(
                f"'a' and 'b' must be variant values of the run; got {name!r} (values: "
                f"{sorted(set(side))!r})"
            )
    wide = wide_counts(counts, a, b, by=by, on="variant", cluster="case_id")
    return wide.assign(check=wide["check"].astype(object), case_id=wide["case_id"].astype(object))


def _rates(data: Run, row: Mapping[str, Any], by: list[str]) -> dict[str, Any]:
    wide = _paired(data, row["a"], row["b"], row["check"], by)
    keep = wide["check"].astype(object) == row["check"]
    for column in by:
        keep &= wide[column].astype(object) == row[column]
    rows = wide[keep]
    paired = rows[rows["paired"]]
    corr = (
        float(np.corrcoef(paired["rate_a"], paired["rate_b"])[0, 1])
        if len(paired) > 2 and paired["rate_a"].std() > 0 and paired["rate_b"].std() > 0
        else math.nan
    )
    some = len(paired) > 0
    return {
        "repeats_a": float(paired["n_a"].mean()) if some else math.nan,
        "repeats_b": float(paired["n_b"].mean()) if some else math.nan,
        "rate_a": float(paired["rate_a"].mean()) if some else math.nan,
        "rate_b": float(paired["rate_b"].mean()) if some else math.nan,
        "correlation": corr,
        "unpaired": int((~rows["paired"]).sum()),
    }
