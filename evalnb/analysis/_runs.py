"""A run against an earlier run of the same cases: has anything got worse?

Week-over-week regression is a paired comparison like any other: the same cases ran in
both runs, so each case is compared with itself, with the rules of :func:`compare`
(the case is the unit, incomplete samples fail and stay in the denominators). Loading
the two runs as one would pool them as if they were repeats; :func:`compare_runs`
keeps them apart even when both carry the same ``run_id`` (a fixed ``--out`` name).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError, EvalnbError
from evalnb.analysis import _args
from evalnb.analysis._compare import A_BETTER, CANT_TELL, MODES, compare
from evalnb.analysis._frames import Run, load
from evalnb.analysis._rates import rates
from evalnb.analysis._stopped import refuse_stopped

__all__ = ["NO_WORSE", "WORSE", "compare_runs", "definition_fingerprint"]

WORSE = "worse"
NO_WORSE = "no worse"
#: The two sides, as the comparison names them.
OLD, NEW = "baseline", "run"


@_args.renamed(old="a= (the baseline run)", new="b= (the run to judge)")
def compare_runs(
    a: Run | str | os.PathLike[str],
    b: Run | str | os.PathLike[str],
    *,
    margin: float = 0.0,
    check: str = "all",
    mode: str = "fixed",
    level: float = 0.95,
) -> pd.DataFrame:
    """Is run ``b`` worse than ``a``, the baseline run? One row per variant, paired by case.

    The baseline comes first, as in :func:`evalnb.compare` (``a`` the baseline, ``b`` the
    one to judge); the keywords ``old=`` and ``new=`` of earlier versions are refused with
    an error rather than read in either order. Both runs are counted per case (``k``
    passes of ``n`` scored samples, incomplete samples failing), then
    :func:`evalnb.compare` pairs them case by case within each variant (``B`` is the new
    run, ``A`` the baseline). ``mode="fixed"`` (the default)
    asks "on exactly these cases": the noise is the draws inside each case, which is the
    question a regression suite asks of its own cases, and it can decide with a handful of
    cases and many repeats; ``mode="random"`` generalises to new cases (and needs many).

    The verdict, for the difference ``b - a`` and its interval at ``level``:

    - "worse" when ``compare`` finds the baseline better and the whole interval lies
      below ``-margin``;
    - "no worse" when the interval lies above ``-margin`` and the design can reach a
      verdict at all (``min_p < 1 - level``);
    - "can't tell yet" otherwise.

    Cases only one run has are counted and named (``only_new``, ``only_old``,
    ``unmatched``), never dropped in silence; a case whose definition (prompt, messages,
    checks, target...) differs between the manifests is still paired but flagged
    (``changed``, and named in ``note``).

    Returns:
        DataFrame, one row per variant and check, with the columns of
        :func:`evalnb.compare` (``a`` is the baseline's run id, ``b`` the new one's;
        ``rate_a``/``rate_b`` the baseline's and the new run's rates) and:

        - ``verdict``: "worse", "no worse" or "can't tell yet"; ``margin``: the allowed drop;
        - ``only_new``, ``only_old``: cases of the variant that ran in one run only;
        - ``changed``: paired cases whose definition differs between the runs;
        - ``unmatched``: the case ids behind ``only_new``/``only_old``, as text.

    >>> evalnb.compare_runs("runs/week1", "runs/week2", margin=0.05)  # doctest: +SKIP
    """
    margin = _args.fraction("margin", margin)
    _args.choice("mode", mode, MODES)
    level = _args.level(level)
    if not isinstance(check, str):
        raise TypeError(f"'check' must be one check name; got {check!r}")
    old_run, new_run = _run("a", "baseline", a), _run("b", "new", b)
    for run in (old_run, new_run):
        refuse_stopped(run, "comparison of runs", "evalnb.compare(run) on that run alone")
    new_id, old_id = _run_id(new_run), _run_id(old_run)
    counts = pd.concat(
        [_case_counts(old_run, OLD, check, level), _case_counts(new_run, NEW, check, level)],
        ignore_index=True,
    )
    rows = []
    changed = _changed_cases(new_run, old_run)
    for variant in _variants(new_run, old_run):
        side = counts[counts["variant"] == variant]
        in_old = set(side.loc[side["run"] == OLD, "case_id"])
        in_new = set(side.loc[side["run"] == NEW, "case_id"])
        only_new, only_old = sorted(in_new - in_old), sorted(in_old - in_new)
        both = in_new & in_old
        moved = sorted(c for c in changed if c in both)
        if both:
            row = compare(
                side[side["case_id"].isin(both)],
                a=OLD,
                b=NEW,
                on="run",
                by="variant",
                check=check,
                mode=mode,
                level=level,
                adjust="none",
            ).iloc[0]
            result = row.to_dict()
        else:
            result = _empty(variant, check, mode, level)
        notes = [result["note"]] if result["note"] else []
        if moved:
            notes.append(f"{len(moved)} case definitions changed: {', '.join(moved)}")
        result.update(
            a=old_id,
            b=new_id,
            verdict=_verdict(result, margin, 1 - level),
            margin=margin,
            only_new=len(only_new),
            only_old=len(only_old),
            changed=len(moved),
            unmatched=_unmatched(only_new, only_old),
            note="; ".join(notes),
        )
        rows.append(result)
    return pd.DataFrame(rows).reset_index(drop=True)


def definition_fingerprint(case: dict[str, Any]) -> str:
    """The first 12 hex of the SHA-256 of a case definition as the manifest records it."""
    text = json.dumps(case, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _run(name: str, role: str, value: Any) -> Run:
    if isinstance(value, Run):
        if len(value.manifests) != 1:
            raise ArgumentError(
                f"{name!r} (the {role} run) must be one run; got {len(value.manifests)} runs "
                f"({', '.join(map(repr, value.manifests))})"
            )
        return value
    if isinstance(value, str | os.PathLike):
        try:
            return load(value)
        except (EvalnbError, OSError) as exc:
            raise ArgumentError(f"the {role} run {str(value)!r}: {exc}") from None
    raise TypeError(
        f"{name!r} (the {role} run) must be a run directory or a Run; got {type(value).__name__}"
    )


def _run_id(run: Run) -> str:
    return next(iter(run.manifests))


def _case_counts(run: Run, side: str, check: str, level: float) -> pd.DataFrame:
    counts = rates(run, by=["variant", "case_id", "group"], check=check, level=level)
    counts = counts[["variant", "case_id", "group", "check", "k", "n"]]
    counts = counts[counts["n"] > 0]
    for column in ("variant", "case_id", "group", "check"):
        counts[column] = counts[column].astype(object).astype(str)
    return counts.assign(run=side)


def _variants(new: Run, old: Run) -> list[str]:
    seen = [str(v) for v in new.variants]
    return seen + [str(v) for v in old.variants if str(v) not in seen]


def _changed_cases(new: Run, old: Run) -> set[str]:
    def prints(run: Run) -> dict[str, str]:
        cases = next(iter(run.manifests.values())).get("cases") or []
        return {str(c.get("id")): definition_fingerprint(c) for c in cases if isinstance(c, dict)}

    before, after = prints(old), prints(new)
    return {case for case in after.keys() & before.keys() if after[case] != before[case]}


def _verdict(row: dict[str, Any], margin: float, alpha: float) -> str:
    low, high = float(row["low"]), float(row["high"])
    if row["verdict"] == A_BETTER and high < -margin:
        return WORSE
    if np.isfinite(low) and low > -margin and float(row["min_p"]) < alpha:
        return NO_WORSE
    return CANT_TELL


def _empty(variant: str, check: str, mode: str, level: float) -> dict[str, Any]:
    return {
        "variant": variant,
        "check": check,
        "cases": 0,
        "groups": 0,
        "diff": np.nan,
        "low": np.nan,
        "high": np.nan,
        "level": level,
        "p_value": np.nan,
        "min_p": 1.0,
        "verdict": CANT_TELL,
        "mode": mode,
        "note": "no case ran in both runs",
    }


def _unmatched(only_new: Sequence[str], only_old: Sequence[str]) -> str:
    parts = []
    if only_new:
        parts.append(f"only in the new run: {', '.join(only_new)}")
    if only_old:
        parts.append(f"only in the baseline: {', '.join(only_old)}")
    return "; ".join(parts)
