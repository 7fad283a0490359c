"""The human pass rate from a judge on every sample and human verdicts on some of them.

Prediction-powered inference (Angelopoulos et al. 2023, "Prediction-powered inference",
Science 382): the judge's rate over every sample, corrected by how far the judge is from
the people on the samples they reviewed,

    estimate = judge rate (all samples) - (judge - human) on the reviewed samples,

is unbiased for the human rate whatever the judge's errors, and its interval is narrower
than the reviewed samples alone give when the judge is good. evalnb's form is the
case-clustered one: the case is the unit, as in :func:`evalnb.suite_rate`, so the
estimand is the mean of per-case human pass rates and the standard error comes from the
per-case influence of both parts together (a ratio estimator linearised per case, CR1
over case groups). The t interval has one degree of freedom fewer than the reviewed case
groups (or than all groups, if fewer): the correction rests on the reviewed ones alone, and
with a handful of them the interval must say so. With every sample reviewed it is the
suite rate of the verdicts; with a perfect judge, the suite rate of the judge.

It is valid when the reviewed samples are a probability sample of the samples, and it
reads how they were chosen from the verdicts (:mod:`evalnb.review._design`): each reviewed
sample weighs ``1 / pi`` in the correction, ``pi`` its inclusion probability in the prefix
of the review's order that was labelled (the inverse-probability, augmented form of
Zrnic & Candès 2024, "Active statistical inference"; a Hájek ratio per case, so a random
review weighs every label alike). Verdicts taken in queue order, in a review narrowed with
``where=``, or with no design recorded are not such a sample: the result then describes the
reviewed samples only, says so in ``note``, and gives no interval. Reviewing the judge's
disagreements first, or the hard cases, without a design would bias it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis._cluster import group_ids
from evalnb.analysis._compare import A_BETTER, B_BETTER, CANT_TELL
from evalnb.analysis._frames import KEY, Run, load
from evalnb.analysis._sampling import POPULATION, REVIEWED, DesignRead, read_design
from evalnb.analysis._tally import (
    OutcomeCode,
    case_field,
    check_outcomes,
    require_cases,
    sample_positions,
)
from evalnb.store import DESIGN_COLUMNS, SAMPLES_SCHEMA, VERDICTS, latest_verdicts

__all__ = ["estimate_rows", "ppi_compare", "ppi_rate"]

METHOD = (
    "prediction-powered (PPI), clustered by case: t interval on (reviewed groups - 1) df; "
    "the correction's variance at least that of (disagreements + 1) / (labels + 2)"
)
_ZERO = 1e-12
#: Below this many reviewed cases the note says the correction rests on few verdicts. Before
#: the variance floor (issue 39) the interval ran narrow there (0.725-0.92 in
#: ``benchmarks/coverage.py``); with it, 10-40 random labels covered 0.942-1.000 in 72
#: designs, wide rather than narrow.
ROUGH_BELOW = 30


def ppi_rate(
    data: Run | str | os.PathLike[str] | pd.DataFrame,
    by: str | Sequence[str] | None = "variant",
    *,
    check: str = "judge",
    annotator: str | Sequence[str] | None = None,
    design: str | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """The human pass rate per ``by`` group, from the ``check`` (a judge) corrected by the
    human verdicts on the samples people reviewed (prediction-powered inference).

    ``data`` is a Run, a run directory, or a frame with one row per sample (or per sample
    and annotator, with the sample key columns) holding ``case_id``, the ``by`` columns,
    the check's ``outcome`` and the ``verdict`` (None where nobody reviewed it). ``check``
    is a check name or type, as in :func:`evalnb.calibrate`. A sample several people
    reviewed counts as the share of them who passed it (``annotator`` picks whose verdicts
    count); ``needs_review`` is no verdict. Samples the check left unscored are left out.

    How the reviewed samples were chosen is read from the verdicts (the design the review
    panel stores, :func:`evalnb.annotate`; a frame may carry the same columns,
    :data:`evalnb.store.DESIGN_COLUMNS`): a random, stratified or active review weighs each
    label by its inclusion probability. Verdicts with no probability design (queue order,
    a review narrowed with ``where=``, none recorded) describe the reviewed samples only:
    ``scope`` says so, ``estimate`` is their human rate and there is no interval.
    ``design="random"`` states that the reviewed rows of a frame without design columns are
    a simple random sample of its rows.

    Returns:
        DataFrame, one row per ``by`` group, columns:

        - the ``by`` keys, then ``check``;
        - ``cases``, ``groups``: cases (case groups) with a scored sample;
        - ``samples``: samples the check scored; ``reviewed``: those with a verdict;
          ``reviewed_cases``: cases with at least one;
        - ``judge_rate``: the check's mean per-case rate over every sample;
        - ``correction``: minus the mean (check - human) over the reviewed samples;
        - ``estimate`` = ``judge_rate + correction``: the human pass rate; ``se``;
        - ``df``: degrees of freedom of the t interval (reviewed groups - 1 at most);
        - ``low``, ``high``: the interval at ``level``, cut to [0, 1]; ``level``;
        - ``human_only``, ``human_only_low``, ``human_only_high``: the mean per-case
          human rate over the reviewed cases alone, with its t interval: what the
          verdicts say without the judge;
        - ``design``: the review's design (``random``, ``stratified``, ``active``, ``queue``,
          ``none``); ``scope``: ``population`` (the interval speaks of every sample) or
          ``reviewed samples`` (no interval: ``estimate`` is the reviewed samples' rate);
        - ``method``; ``note``: why a row has no interval, or empty.

    >>> evalnb.ppi_rate(run, check="judge")                  # doctest: +SKIP
    """
    level = _args.level(level)
    by = _args.names("by", by)
    if "case_id" in by or "group" in by:
        raise ArgumentError(
            f"'by' must not include 'case_id' or 'group': the rate is taken across cases; "
            f"got {by!r}"
        )
    rows, read = _samples(data, check, by, annotator, design)
    return estimate_rows(rows, read, by, check, level)


def estimate_rows(
    rows: pd.DataFrame, read: DesignRead, by: list[str], check: str, level: float
) -> pd.DataFrame:
    """:func:`ppi_rate` on per-sample ``rows`` (the ``by`` keys, ``case_id``, ``unit``,
    ``judge``, ``human``, ``weight``) whose verdicts were taken under ``read``."""
    per_case = _per_case(rows, by)
    ids, out = group_ids(per_case, by)
    size = len(out)
    parts = _influence(per_case, ids, size)
    human = _human_only(per_case, ids, size, level)
    units = per_case["unit"].to_numpy()
    se, df = _clustered_se(parts["influence"], ids, units, size)
    se = np.sqrt(se**2 + _correction_floor(per_case, ids, size, parts["correction_influence"]))
    df = np.minimum(df, _reviewed_units(per_case, ids, size) - 1)
    critical = stats.t.ppf(0.5 + level / 2, np.maximum(df, 1))
    estimate = parts["estimate"]
    usable = np.isfinite(se) & (se > _ZERO) & (df >= 1)

    out.insert(len(by), "check", check)
    out["cases"] = np.bincount(ids, minlength=size)
    out["groups"] = _units(per_case, ids, size)
    out["df"] = df
    out["samples"] = np.bincount(ids, weights=per_case["samples"], minlength=size).astype(int)
    out["reviewed"] = np.bincount(ids, weights=per_case["reviewed"], minlength=size).astype(int)
    out["reviewed_cases"] = np.bincount(ids, weights=per_case["reviewed"] > 0, minlength=size)
    out["reviewed_cases"] = out["reviewed_cases"].astype(np.int64)
    out["judge_rate"] = parts["judge"]
    out["correction"] = parts["correction"]
    out["estimate"] = estimate
    out["se"] = se
    out["low"] = np.where(usable, np.clip(estimate - critical * se, 0, 1), np.nan)
    out["high"] = np.where(usable, np.clip(estimate + critical * se, 0, 1), np.nan)
    out["level"] = level
    out["human_only"], out["human_only_low"], out["human_only_high"] = human
    out["design"] = read.design
    out["scope"] = read.scope
    out["method"] = METHOD
    out["note"] = _notes(out)
    return _scoped(out, read)


def _scoped(out: pd.DataFrame, read: DesignRead) -> pd.DataFrame:
    """Rows of verdicts that are no probability sample keep the reviewed samples' rate and
    lose every interval; the design's own note joins each row's."""
    if read.scope == REVIEWED:
        out["estimate"] = out["human_only"]
        blank = ["correction", "se", "low", "high", "human_only_low", "human_only_high"]
        out[blank] = np.nan
        out["method"] = "the reviewed samples' mean per-case human rate (no design: no interval)"
        out["note"] = read.note
    elif read.note:
        out["note"] = [f"{n}; {read.note}" if n else read.note for n in out["note"]]
    return out


def ppi_compare(
    data: Run | str | os.PathLike[str] | pd.DataFrame,
    *,
    a: str | None = None,
    b: str | None = None,
    check: str = "judge",
    annotator: str | Sequence[str] | None = None,
    design: str | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Is variant ``b`` better than ``a`` by the human pass rate, estimated with PPI?

    The difference of the two prediction-powered estimates (:func:`ppi_rate`) on the cases
    both variants ran, with the standard error from the per-case difference of their
    influences (so the pairing of cases counts, as in :func:`evalnb.compare`), a t
    interval on ``G - 1`` degrees of freedom and the verdict at ``1 - level``. The verdicts'
    design is read as in :func:`ppi_rate`: without a probability design the difference
    describes the reviewed samples only, with no interval and no verdict.

    Returns:
        DataFrame, one row, columns: ``a``, ``b``, ``check``, ``cases``, ``groups``,
        ``reviewed_a``, ``reviewed_b`` (reviewed samples per side), ``rate_a``,
        ``rate_b`` (the PPI estimates), ``diff`` (B - A), ``se``, ``df`` (the groups
        reviewed on both sides, less one, at most), ``low``, ``high``, ``level``,
        ``p_value``, ``verdict``, ``design``, ``scope``, ``method``, ``note``.

    >>> evalnb.ppi_compare(run, a="baseline", b="revised")  # doctest: +SKIP
    """
    level = _args.level(level)
    rows, read = _samples(data, check, ["variant"], annotator, design)
    values = [str(v) for v in pd.unique(rows["variant"].astype(object))]
    a, b = _args.pair(a, b, values)
    per_case = _per_case(rows, ["variant"])
    side = per_case["variant"].astype(object)
    both = set(per_case.loc[side == a, "case_id"]) & set(per_case.loc[side == b, "case_id"])
    per_case = per_case[per_case["case_id"].isin(both) & side.isin([a, b])]
    per_case = per_case.sort_values(["variant", "case_id"]).reset_index(drop=True)
    ids = (per_case["variant"].astype(object) == b).to_numpy().astype(np.int64)
    parts = _influence(per_case, ids, 2)
    influence = parts["influence"] * np.where(ids == 1, 1.0, -1.0)
    case_codes = pd.factorize(per_case["case_id"])[0]
    per_pair = np.bincount(case_codes, weights=influence)
    units = per_case.groupby("case_id", sort=False)["unit"].first()
    unit_of = units.reindex(pd.unique(per_case["case_id"])).to_numpy()
    se, df = _clustered_se(per_pair, np.zeros(len(per_pair), np.int64), unit_of, 1)
    # each side's correction owes the floor its few labels call for (see _correction_floor)
    se = np.sqrt(se**2 + _correction_floor(per_case, ids, 2, parts["correction_influence"]).sum())
    reviewed_both = (
        per_case.groupby("case_id", sort=False)["reviewed"]
        .min()
        .reindex(pd.unique(per_case["case_id"]))
    )
    seen = unit_of[reviewed_both.to_numpy() > 0]
    df = np.minimum(df, len(pd.unique(pd.Series(seen, dtype=object))) - 1)
    diff = float(parts["estimate"][1] - parts["estimate"][0])
    alpha = 1 - level
    se_value, df_value = float(se[0]), float(df[0])
    usable = np.isfinite(se_value) and se_value > _ZERO and df_value >= 1
    usable = usable and read.scope == POPULATION
    critical = float(stats.t.ppf(1 - alpha / 2, max(df_value, 1)))
    p_value = 2 * float(stats.t.sf(abs(diff / se_value), max(df_value, 1))) if usable else np.nan
    significant = usable and p_value < alpha
    verdict = (B_BETTER if diff > 0 else A_BETTER) if significant else CANT_TELL
    reviewed = per_case.groupby(ids)["reviewed"].sum()
    note = "" if usable else "no standard error (too few cases or reviews): no verdict"
    method = "difference of " + METHOD.replace("(PPI)", "(PPI) estimates")
    if read.scope == REVIEWED:
        human = _human_only(per_case, ids, 2, level)[0]
        diff, se_value, note = float(human[1] - human[0]), np.nan, read.note
        parts["estimate"] = human
        method = "difference of the reviewed samples' mean per-case human rates (no interval)"
    elif read.note:
        note = f"{note}; {read.note}" if note else read.note
    return pd.DataFrame(
        [
            {
                "a": a,
                "b": b,
                "check": check,
                "cases": len(per_pair),
                "groups": len(pd.unique(pd.Series(unit_of, dtype=object))),
                "reviewed_a": int(reviewed.get(0, 0)),
                "reviewed_b": int(reviewed.get(1, 0)),
                "rate_a": parts["estimate"][0],
                "rate_b": parts["estimate"][1],
                "diff": diff,
                "se": se_value,
                "df": df_value,
                "low": max(-1.0, diff - critical * se_value) if usable else np.nan,
                "high": min(1.0, diff + critical * se_value) if usable else np.nan,
                "level": level,
                "p_value": p_value,
                "verdict": verdict,
                "design": read.design,
                "scope": read.scope,
                "method": method,
                "note": note,
            }
        ]
    )


# -- the estimator ------------------------------------------------------------------------


def _influence(per_case: pd.DataFrame, ids: np.ndarray, size: int) -> dict[str, np.ndarray]:
    """Estimate per id, and each case's influence on it (the linearised estimator).

    Per case ``c``: ``a_c`` the check's rate over its samples, ``m_c`` the reviewed ones,
    each weighing ``1 / pi`` (its design's inclusion probability; 1 for a random review),
    divided by its samples, ``d_c`` the weighted sum of (check - human) over them divided by
    its samples. The estimate is ``mean(a) - sum(d) / sum(m)``; case ``c``'s influence is
    ``(a_c - mean(a)) - (d_c - R m_c) / mean(m)`` with ``R = sum(d) / sum(m)``.
    """
    samples = per_case["samples"].to_numpy(float)
    a = per_case["judge"].to_numpy(float) / samples
    m = per_case["weighed"].to_numpy(float) / samples
    d = per_case["weighed_gap"].to_numpy(float) / samples
    cases = np.bincount(ids, minlength=size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = np.bincount(ids, weights=a, minlength=size) / cases
        total_m = np.bincount(ids, weights=m, minlength=size)
        ratio = np.bincount(ids, weights=d, minlength=size) / total_m
        mean_m = total_m / cases
        correction = -(d - ratio[ids] * m) / mean_m[ids]
    return {
        "judge": mean_a,
        "correction": -ratio,
        "estimate": mean_a - ratio,
        "influence": (a - mean_a[ids]) + correction,
        "correction_influence": correction,
    }


def _correction_floor(
    per_case: pd.DataFrame, ids: np.ndarray, size: int, correction: np.ndarray
) -> np.ndarray:
    """The variance the correction is owed when few labels show few disagreements.

    With 20 labels and a judge that errs on 5% of samples, no label shows a disagreement
    in a third of runs; the correction's standard error is then 0 and the interval is the
    judge's own (it covered 0.725 in such designs, issue 39). A disagreement the labels
    did not show is not a judge without errors: the correction's variance is at least
    that of a share of disagreements with one disagreement and one agreement added to the
    ``L`` labels (Agresti & Caffo 2000), ``p (1 - p) / L``, ``p = (k + 1) / (L + 2)``, ``k``
    the disagreements the labels stand for (each weighed by ``1 / pi``, scaled to ``L``). The
    floor fades as labels grow; it adds only what the clustered variance lacks."""
    labels = np.bincount(ids, weights=per_case["reviewed"].to_numpy(float), minlength=size)
    # the share of disagreements the labels stand for (weighed by 1 / pi: an active review
    # labels the judge's doubtful samples first, and sees more of them than there are)
    weighed = np.bincount(ids, weights=per_case["weighed"].to_numpy(float), minlength=size)
    against = np.bincount(ids, weights=per_case["weighed_disagree"].to_numpy(float), minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        seen = np.where(weighed > 0, labels * against / weighed, 0.0)
    observed, _ = _clustered_se(correction, ids, per_case["unit"].to_numpy(), size)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (seen + 1) / (labels + 2)
        floor = np.where(labels > 0, share * (1 - share) / labels, 0.0)
    return np.asarray(np.fmax(floor - np.nan_to_num(observed) ** 2, 0.0))


def _clustered_se(
    influence: np.ndarray, ids: np.ndarray, units: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """CR1 standard error of a mean of influences, clustered by unit: (se, df = G - 1)."""
    cases = np.bincount(ids, minlength=size).astype(float)
    unit_codes = pd.factorize(pd.Series(units, dtype=object))[0].astype(np.int64)
    pair = ids * (unit_codes.max(initial=0) + 1) + unit_codes
    pairs, index = np.unique(pair, return_inverse=True)
    owner = pairs // (unit_codes.max(initial=0) + 1)
    sums = np.bincount(index, weights=np.nan_to_num(influence), minlength=len(pairs))
    groups = np.bincount(owner, minlength=size).astype(float)
    squares = np.bincount(owner, weights=sums**2, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.where(groups > 1, groups / (groups - 1) * squares / cases**2, np.nan)
    return np.sqrt(variance), groups - 1


def _units(per_case: pd.DataFrame, ids: np.ndarray, size: int) -> np.ndarray:
    """Distinct case groups per id."""
    pairs = pd.DataFrame({"id": ids, "unit": per_case["unit"].astype(object).to_numpy()})
    return np.asarray(
        pairs.drop_duplicates().groupby("id").size().reindex(range(size), fill_value=0).to_numpy()
    )


def _reviewed_units(per_case: pd.DataFrame, ids: np.ndarray, size: int) -> np.ndarray:
    """Distinct case groups with a reviewed sample, per id."""
    seen = per_case["reviewed"].to_numpy() > 0
    return _units(per_case[seen], ids[seen], size)


def _human_only(
    per_case: pd.DataFrame, ids: np.ndarray, size: int, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean per-case human rate over reviewed cases, with a t interval across them."""
    reviewed = per_case["weighed"].to_numpy(float)
    keep = reviewed > 0
    rate = per_case["weighed_human"].to_numpy(float)[keep] / reviewed[keep]
    kept = ids[keep]
    count = np.bincount(kept, minlength=size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(kept, weights=rate, minlength=size) / count
        influence = rate - mean[kept]
    se, df = _clustered_se(influence, kept, per_case["unit"].to_numpy()[keep], size)
    critical = stats.t.ppf(0.5 + level / 2, np.maximum(df, 1))
    usable = np.isfinite(se)
    low = np.where(usable, np.clip(mean - critical * se, 0, 1), np.nan)
    high = np.where(usable, np.clip(mean + critical * se, 0, 1), np.nan)
    return mean, low, high


def _notes(out: pd.DataFrame) -> list[str]:
    notes = []
    for row in out.itertuples():
        if row.reviewed == 0:
            notes.append("no human verdicts: nothing to correct the judge with")
        elif row.groups < 2:
            notes.append("one case (group): no interval across cases")
        elif row.df < 1:
            notes.append("fewer than 2 cases reviewed: no interval for the correction")
        elif not np.isfinite(row.low):
            notes.append("no spread across cases: no interval")
        elif row.reviewed_cases < ROUGH_BELOW:
            notes.append(
                f"only {row.reviewed_cases} cases reviewed (fewer than {ROUGH_BELOW}): the "
                "correction rests on few verdicts; its variance is floored as if one more "
                "disagreement and one more agreement had been seen, so the interval is wide "
                "rather than narrow; review more samples to narrow it"
            )
        else:
            notes.append("")
    return notes


# -- reading samples -----------------------------------------------------------------------


def _per_case(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per (by, case): samples, the check's passes, reviewed samples, human passes among
    them, the summed gap (check - human) on them, the same weighed by ``1 / pi``
    (``weighed``, ``weighed_human``, ``weighed_gap``, ``weighed_disagree``), and the case's
    cluster unit. Sums by ``bincount`` over one grouping: the review panel redraws this
    after every verdict."""
    codes = rows.groupby([*by, "case_id"], observed=True, sort=True, dropna=False).ngroup()
    codes = codes.to_numpy()
    size = int(codes.max(initial=-1)) + 1
    _, first = np.unique(codes, return_index=True)
    out = rows[[*by, "case_id"]].iloc[first].reset_index(drop=True)
    human = rows["human"].to_numpy(float)
    reviewed = np.isfinite(human)
    judge = rows["judge"].to_numpy(float)
    gap = np.where(reviewed, judge - human, 0.0)
    weighed = np.where(reviewed, np.nan_to_num(rows["weight"].to_numpy(float)), 0.0)
    columns = {
        "judge": judge,
        "reviewed": reviewed.astype(float),
        "human": np.where(reviewed, human, 0.0),
        "gap": gap,
        "disagree": np.abs(gap),
        "weighed": weighed,
        "weighed_gap": gap * weighed,
        "weighed_human": np.where(reviewed, human, 0.0) * weighed,
        "weighed_disagree": np.abs(gap) * weighed,
    }
    out["samples"] = np.bincount(codes, minlength=size)
    for name, values in columns.items():
        out[name] = np.bincount(codes, weights=values, minlength=size)
    out["unit"] = rows["unit"].to_numpy()[first]
    return out


def _samples(
    data: Any, check: str, by: list[str], annotator: Any, design: str | None = None
) -> tuple[pd.DataFrame, DesignRead]:
    """One row per scored sample: the ``by`` keys, ``case_id``, ``unit`` (its group),
    ``judge`` (0/1), ``human`` (share of verdicts that pass; NaN unreviewed), ``weight``
    (``1 / pi`` of a reviewed sample) and ``size`` (its size in the design, NaN when none
    is stored); and the design the verdicts were taken under."""
    if not isinstance(check, str) or not check:
        raise TypeError(f"'check' must be a check name or type (a string); got {check!r}")
    if design not in (None, "random"):
        raise ArgumentError(
            "'design' states how a frame's reviewed rows were chosen: None (read from its "
            f"design columns) or 'random' (a simple random sample); got {design!r}"
        )
    wanted = None if annotator is None else _args.names("annotator", annotator)
    if isinstance(data, pd.DataFrame):
        return _frame_samples(data, by, wanted, design)
    if design is not None:
        raise ArgumentError(
            "'design' is for a frame; a run's verdicts carry the design they were taken "
            f"under; got design={design!r}"
        )
    run = data if isinstance(data, Run) else load(data)
    unknown = [c for c in by if c not in SAMPLES_SCHEMA.names]
    if unknown:
        raise ArgumentError(
            f"'by' must name samples columns ({', '.join(SAMPLES_SCHEMA.names)}); got "
            f"{unknown!r} (the check is chosen with the keyword check=)"
        )
    codes, _ = check_outcomes(run, check)
    samples = run.table("samples", list(dict.fromkeys(["status", *by])))
    verdicts = _pick(latest_verdicts(run.table("verdicts")), wanted)
    read = read_design(verdicts.reset_index(drop=True), len(samples))
    verdicts = verdicts[read.weight > 0]
    position = sample_positions(samples, verdicts) if len(verdicts) else np.zeros(0, np.int64)
    human = _human_per_sample(verdicts["verdict"], position, len(samples))
    weight, size = np.zeros(len(samples)), np.full(len(samples), np.nan)
    found = position >= 0
    np.maximum.at(weight, position[found], read.weight[read.weight > 0][found])
    if "size" in verdicts.columns:
        size[position[found]] = pd.to_numeric(verdicts["size"], errors="coerce").to_numpy()[found]
    scored = codes <= OutcomeCode.PASS
    frame = samples.loc[scored, [c for c in dict.fromkeys(["run_id", "case_id", *by])]]
    frame = frame.assign(
        judge=(codes[scored] == OutcomeCode.PASS).astype(float),
        human=human[scored],
        weight=weight[scored],
        size=size[scored],
    )
    frame["unit"] = case_field(run, frame, "group") if len(frame) else []
    for column in [*by, "case_id"]:
        frame[column] = frame[column].astype(object)
    return frame.reset_index(drop=True), read


def _frame_samples(
    frame: pd.DataFrame, by: list[str], wanted: Any, design: str | None
) -> tuple[pd.DataFrame, DesignRead]:
    missing = [c for c in ("outcome", "verdict", *by) if c not in frame.columns]
    if missing:
        raise ArgumentError(
            f"'data' must have columns 'outcome' (the check), 'verdict' (the person, None "
            f"where unreviewed) and the 'by' keys; missing {missing!r}"
        )
    require_cases(frame, "the rate is taken across cases")
    bad = sorted(set(frame["verdict"].dropna().astype(object)) - set(VERDICTS))
    if bad:
        raise ArgumentError(
            f"'verdict' values must be one of {', '.join(map(repr, VERDICTS))}; got {bad!r}"
        )
    rows = frame.reset_index(drop=True)
    key = [c for c in KEY if c in frame.columns]
    if "annotator" in frame.columns:
        rows = _pick(rows, wanted).reset_index(drop=True)
        if not {"case_id", "repeat"} <= set(key):
            raise ArgumentError(
                "a frame with an 'annotator' column needs the sample key columns "
                f"({', '.join(KEY)}) to put each sample's verdicts together"
            )
        population = len(frame.drop_duplicates(key))
    else:
        population = len(frame)
    rows, read = _frame_design(rows, population, design)
    if "annotator" in frame.columns:
        rows = rows.assign(_pass=_pass_share(rows["verdict"]))
        grouped = rows.groupby(key, observed=True, sort=False, dropna=False)
        human, weight = grouped["_pass"].mean(), grouped["_weight"].max()
        first = grouped.first().drop(columns=["_pass", "_weight", "verdict", "annotator"])
        rows = first.assign(_human=human, _weight=weight).reset_index()
    else:
        rows = rows.assign(_human=_pass_share(rows["verdict"]))
    outcome = rows["outcome"].astype("boolean")
    rows = rows[outcome.notna().to_numpy()]
    unit = "group" if "group" in rows.columns else "case_id"
    out = pd.DataFrame({c: rows[c].astype(object).to_numpy() for c in dict.fromkeys(by)})
    out["case_id"] = rows["case_id"].astype(object).to_numpy()
    out["judge"] = rows["outcome"].astype(bool).to_numpy(dtype=float)
    out["human"] = rows["_human"].to_numpy(dtype=float)
    out["weight"] = rows["_weight"].to_numpy(dtype=float)
    size = rows["size"] if "size" in rows.columns else pd.Series(np.nan, index=rows.index)
    out["size"] = pd.to_numeric(size, errors="coerce").to_numpy(dtype=float)
    out["unit"] = rows[unit].astype(object).to_numpy()
    return out, read


def _frame_design(
    rows: pd.DataFrame, population: int, design: str | None
) -> tuple[pd.DataFrame, DesignRead]:
    """A frame's rows with ``_weight`` (``1 / pi`` of a reviewed row), those beyond its
    design's prefix unreviewed; and its design: its design columns, else ``design``."""
    reviewed = rows["verdict"].notna().to_numpy()
    if design == "random" and "design" not in rows.columns:
        read = DesignRead("random", POPULATION, np.ones(int(reviewed.sum())), 0, "")
    else:
        have = [c for c in DESIGN_COLUMNS if c in rows.columns]
        read = read_design(rows.loc[reviewed, have].reset_index(drop=True), population)
    weight = np.zeros(len(rows))
    weight[reviewed] = read.weight
    verdict = rows["verdict"].astype(object).where(weight > 0)
    return rows.assign(verdict=verdict, _weight=weight), read


def _pick(verdicts: pd.DataFrame, wanted: list[str] | None) -> pd.DataFrame:
    if wanted is None:
        return verdicts
    present = set(verdicts["annotator"].dropna().astype(object))
    unknown = [a for a in wanted if a not in present]
    if unknown:
        have = ", ".join(repr(a) for a in sorted(present)) or "none (no verdicts)"
        raise ArgumentError(
            f"'annotator' must be among those with verdicts ({have}); got {unknown!r}"
        )
    return verdicts[verdicts["annotator"].astype(object).isin(wanted)]


def _pass_share(verdict: pd.Series) -> np.ndarray:
    """1 for pass, 0 for fail, NaN for needs_review or no verdict."""
    value = verdict.astype(object)
    return np.where(value == "pass", 1.0, np.where(value == "fail", 0.0, np.nan))


def _human_per_sample(verdict: pd.Series, position: np.ndarray, size: int) -> np.ndarray:
    """Per sample, the share of its (pass/fail) verdicts that pass; NaN with none."""
    share = _pass_share(verdict)
    keep = (position >= 0) & np.isfinite(share)
    passes = np.bincount(position[keep], weights=share[keep], minlength=size)
    count = np.bincount(position[keep], minlength=size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, passes / count, np.nan)
