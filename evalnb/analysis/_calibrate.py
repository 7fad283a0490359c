"""How far a check (the judge, or any other) can stand in for a person's verdict.

Each sample a person reviewed is paired with the check's outcome on it. Human ``pass``
is the positive class: TPR is the share of human passes the check also passed, TNR the
share of human fails it also failed. ``needs_review`` verdicts, samples the check left
unscored, and samples nobody reviewed are counted and left out.

The case is the unit, as everywhere in evalnb: a judge that errs on a case tends to err
on every repeat of it, so repeats are not independent checks of the judge. When some
case (or group) holds several reviewed samples, intervals and tests are taken over cases:
the kappa interval from the jackknife over cases, TPR and TNR from Wilson on the
clustered effective sample size, McNemar as the sign-flip test of the per-case
differences (exact up to 16 cases that differ; beyond, its normal form, the clustered
McNemar test of Durkalski et al. 2003). With one sample per case these are the usual
asymptotic kappa interval, Wilson and exact McNemar.

The reviewed samples are a sample of the run, and the review's design says how they were
chosen (:mod:`evalnb.review._design`). Under a stratified or active design each reviewed
sample weighs ``1 / pi`` in every count (inverse-probability weighting), and the
intervals are taken over cases on the weighted counts; a random review weighs all alike.
Verdicts with no probability design (queue order, a review narrowed with ``where=``, none
recorded) describe the reviewed samples only: their rows keep the counts and rates, lose
every interval and test, and say so in ``note``.
"""

from __future__ import annotations

import html
import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import chi2, norm, t
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis import _display as display
from evalnb.analysis._exact import MAX_EXACT, sign_flip_p
from evalnb.analysis._frames import KEY, Run, load
from evalnb.analysis._raters import ALPHA_COLUMNS, rater_line, with_alpha
from evalnb.analysis._rates import proportion_interval
from evalnb.analysis._sampling import POPULATION, REVIEWED, DesignRead, read_design
from evalnb.analysis._tally import OutcomeCode, case_field, check_outcomes, sample_positions
from evalnb.store import DESIGN_COLUMNS, VERDICTS, latest_verdicts

__all__ = ["Calibration", "calibrate"]

#: The ``method`` of rows whose samples are all from different cases (or groups).
INDEPENDENT = "wilson"
#: The ``method`` of rows with several reviewed samples in some case.
CLUSTERED = (
    "over cases: jackknife kappa interval, Wilson on the clustered effective n, "
    "sign-flip (clustered) McNemar"
)
#: The ``method`` of rows whose samples weigh ``1 / pi`` (a stratified or active review).
WEIGHTED = "weighted by 1 / inclusion probability, " + CLUSTERED
#: Below this many cases (or groups) the effective n is shrunk by (z / t)^2.
_SMALL_SAMPLE = 30

SUMMARY_COLUMNS = [
    "annotator",
    "check",
    "cases",
    "n",
    "agree",
    "agreement",
    "kappa",
    "kappa_low",
    "kappa_high",
    "tp",
    "fn",
    "fp",
    "tn",
    "tpr",
    "tpr_low",
    "tpr_high",
    "tnr",
    "tnr_low",
    "tnr_high",
    "mcnemar_p",
    "needs_review",
    "unscored",
    "unreviewed",
    "level",
    "method",
    "design",
    "scope",
    "note",
]
ANNOTATOR_COLUMNS = [
    "annotators",
    "method",
    "raters",
    "cases",
    "n",
    "agree",
    "agreement",
    "kappa",
    "low",
    "high",
    "level",
    "needs_review",
    "partial",
]
DISAGREEMENT_COLUMNS = [*KEY, "annotator", "verdict", "outcome", "reason", "detail"]


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` found; shows itself as tables in a notebook.

    - ``summary``: one row per annotator, the check against that person;
    - ``disagreements``: one row per (sample, annotator) where they differ;
    - ``annotators``: agreement between annotators (empty with fewer than two).
    """

    summary: pd.DataFrame
    disagreements: pd.DataFrame
    annotators: pd.DataFrame

    def _repr_html_(self) -> str:
        # One sentence per annotator first; the tables stay a click away.
        lines = [_annotator_line(row) for row in self.summary.to_dict("records")]
        if not lines:
            lines = ["<div>no reviewed sample has this check's outcome: nothing to compare</div>"]
        lines += [
            f"<div>{html.escape(rater_line(row))}</div>"
            for row in self.annotators.to_dict("records")
        ]
        # The summary compact (each estimate with its interval in one cell): its 27 columns
        # side by side are wider than a notebook; ``summary`` keeps them all for code.
        tables = [("check vs human verdicts", _compact(self.summary))]
        if not self.annotators.empty:
            tables.append(("agreement between annotators", _compact_pairs(self.annotators)))
        shown = self.disagreements.drop(columns=["reason", "detail"]).head(20)
        first = " (first 20)" if len(self.disagreements) > 20 else ""
        tables.append((f"{len(self.disagreements)} disagreeing samples{first}", shown))
        details = "".join(
            f"<details><summary>{html.escape(title)}</summary>{display.frame_html(frame)}</details>"
            for title, frame in tables
        )
        return f"<div class='{display.NO_MATH} evalnb-calibration'>{''.join(lines)}{details}</div>"


#: Below this many reviewed cases a calibration says its intervals are too wide to lean on.
FEW_REVIEWED = 10


def _annotator_line(row: Mapping[str, Any]) -> str:
    """``judge vs you on 12 cases: agreement 0.917, kappa 0.82 (95% CI 0.55 to 1.00), ...``"""

    def interval(name: str) -> str:
        low, high = _number(row[f"{name}_low"]), _number(row[f"{name}_high"])
        return f"{_number(row[name])} ({level} CI {low} to {high})"

    level = f"{float(row['level']) * 100:g}%"
    text = (
        f"<b>{display.esc(row['check'])}</b> vs <b>{display.esc(row['annotator'])}</b> on "
        f"{int(row['cases'])} cases ({int(row['n'])} samples): agreement "
        f"{_number(row['agreement'])}, kappa {interval('kappa')}, TPR {interval('tpr')}, "
        f"TNR {interval('tnr')}, McNemar p {_number(row['mcnemar_p'])}"
    )
    if row.get("note"):
        text += display.note_html(str(row["note"]))
    if int(row["cases"]) < FEW_REVIEWED and row.get("scope") != REVIEWED:
        text += display.note_html(
            f"only {int(row['cases'])} reviewed cases: these intervals are too wide to lean "
            f"on (review at least {FEW_REVIEWED} cases)"
        )
    return f"<div>{text}</div>"


def _compact(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as a reader takes it in: one column per annotator (against the check),
    one row per measure, each estimate with its interval (two decimals) in one cell."""

    def with_interval(row: Mapping[str, Any], name: str) -> str:
        value, low, high = (row[name], row[f"{name}_low"], row[f"{name}_high"])
        if not np.isfinite(float(value)):
            return "n/a"
        return f"{float(value):.2f} ({float(low):.2f} to {float(high):.2f})"

    columns = {}
    for row in summary.to_dict("records"):
        level = f"{float(row['level']) * 100:g}% CI"
        columns[f"{row['check']} vs {row['annotator']}"] = {
            "cases": str(int(row["cases"])),
            "samples": str(int(row["n"])),
            "agreement": _number(row["agreement"]),
            f"kappa ({level})": with_interval(row, "kappa"),
            f"TPR ({level})": with_interval(row, "tpr"),
            f"TNR ({level})": with_interval(row, "tnr"),
            "McNemar p": _number(row["mcnemar_p"]),
        }
    return pd.DataFrame(columns)


def _compact_pairs(annotators: pd.DataFrame) -> pd.DataFrame:
    """Agreement between annotators as a reader takes it in: kappa with its interval in one
    cell, two decimals."""
    rows = [
        {
            "annotators": row["annotators"],
            "cases": int(row["cases"]),
            "samples": int(row["n"]),
            "agreement": _number(row["agreement"]),
            f"kappa ({float(row['level']) * 100:g}% CI)": (
                "n/a"
                if not np.isfinite(float(row["kappa"]))
                else f"{float(row['kappa']):.2f} ({float(row['low']):.2f} to "
                f"{float(row['high']):.2f})"
            ),
            "method": row["method"],
            **(
                {
                    # its method is named in the sentence above the table (rater_line)
                    f"alpha ({float(row['level']) * 100:g}% CI)": _with_interval(
                        row["alpha"], row["alpha_low"], row["alpha_high"]
                    ),
                }
                if "alpha" in row
                else {}
            ),
        }
        for row in annotators.to_dict("records")
    ]
    return pd.DataFrame(rows)


def _with_interval(value: Any, low: Any, high: Any) -> str:
    """``0.62 (0.41 to 0.83)``; the estimate alone where there is no interval."""
    if value is None or not np.isfinite(float(value)):
        return "n/a"
    if low is None or high is None or not np.isfinite(float(low)) or not np.isfinite(float(high)):
        return f"{float(value):.2f} (no interval)"
    return f"{float(value):.2f} ({float(low):.2f} to {float(high):.2f})"


def _number(value: Any) -> str:
    return "n/a" if value is None or not np.isfinite(float(value)) else f"{float(value):.3f}"


def calibrate(
    data: Run | str | os.PathLike[str] | pd.DataFrame,
    *,
    check: str = "judge",
    annotator: str | Sequence[str] | None = None,
    design: str | None = None,
    level: float = 0.95,
) -> Calibration:
    """Compare a check with human verdicts, per annotator, and annotators with each other.

    ``data`` is a Run, a run directory, or a frame with one row per (sample, annotator)
    holding the check's ``outcome`` (True / False / null) and the ``verdict``. ``check``
    is a check name, a check type (``"judge"``: every judge check, whatever its name)
    or ``"all"`` (every scored check passed); when a sample has several such checks, it
    passes when all its scored ones pass. ``annotator`` picks one person or several;
    None takes everyone. The latest verdict per (sample, annotator) counts. The unit of
    the intervals and tests is the case group (a Run), or a frame's ``group`` or
    ``case_id`` column; a frame with neither treats every row as its own case.

    Returns:
        :class:`Calibration`, whose ``summary`` has one row per annotator:

        - ``annotator``, ``check``;
        - ``cases``: cases (or groups) behind ``n``, the unit of the intervals;
        - ``n``: samples with a pass/fail verdict and a scored check; ``agree`` of them
          agree, ``agreement = agree / n``;
        - ``kappa``, ``kappa_low``, ``kappa_high``: Cohen's kappa and its interval at
          ``level``: from the asymptotic standard error (statsmodels ``cohens_kappa``)
          when every sample is its own case, else from the jackknife over cases with a
          t quantile on ``cases - 1`` degrees of freedom;
        - ``tp`` (both pass), ``fn`` (human pass, check fail), ``fp`` (human fail, check
          pass), ``tn`` (both fail);
        - ``tpr`` = tp / (tp + fn) and ``tnr`` = tn / (tn + fp), each with a Wilson
          interval (``_low``, ``_high``), on the effective sample size across cases
          when cases hold several samples (as :func:`evalnb.suite_rate` does);
        - ``mcnemar_p``: McNemar test on ``fn`` against ``fp`` (is the check more
          lenient or stricter than the person?): exact; over cases, the sign-flip test
          of per-case ``fp - fn``;
        - ``needs_review``: verdicts left out; ``unscored``: reviewed samples the check
          did not score; ``unreviewed``: scored samples this person did not review;
        - ``level``, ``method`` (``"wilson"`` with one sample per case, else what was
          taken over cases);
        - ``design``: the review's design; ``scope``: ``population`` (the intervals speak
          of every sample; ``agreement``, ``kappa``, ``tpr``, ``tnr`` weigh each sample by
          ``1 / pi``) or ``reviewed samples`` (no design: no interval and no test);
          ``note``: which, in one sentence, or empty. ``design="random"`` states that a
          frame's reviewed rows, having no design columns, are a simple random sample.

        ``disagreements`` lists the samples where check and person differ (``verdict``,
        ``outcome``, the person's ``reason``, the check's ``detail``); pass it as
        ``where=`` to :func:`evalnb.annotate` to look at them again. ``annotators``
        compares the people: Cohen's kappa per pair (interval over cases as above), Fleiss'
        for three or more (no interval: statsmodels gives none), and beside each ``alpha``,
        Krippendorff's, with its interval over cases (:mod:`evalnb.analysis._raters`).

    >>> result = evalnb.calibrate(run, check="judge")     # doctest: +SKIP
    >>> result.summary[["annotator", "kappa", "kappa_low", "kappa_high"]]  # doctest: +SKIP
    """
    level = _args.level(level)
    if not isinstance(check, str) or not check:
        raise TypeError(f"'check' must be a check name or type (a string); got {check!r}")
    wanted = None if annotator is None else _args.names("annotator", annotator)
    if design not in (None, "random"):
        raise ArgumentError(
            "'design' states how a frame's reviewed rows were chosen: None (read from its "
            f"design columns) or 'random' (a simple random sample); got {design!r}"
        )
    if isinstance(data, pd.DataFrame):
        pairs, unreviewed, population = _frame_pairs(data, check)
    else:
        if design is not None:
            raise ArgumentError(
                "'design' is for a frame; a run's verdicts carry the design they were taken "
                f"under; got design={design!r}"
            )
        run = data if isinstance(data, Run) else load(data)
        pairs, unreviewed, population = _run_pairs(run, check)
    present = _annotators(pairs, wanted)
    pairs = pairs[pairs["annotator"].isin(present)].reset_index(drop=True)
    read = _design(pairs, population, design)
    pairs["weight"] = read.weight
    summary = pd.DataFrame(
        [
            _summary_row(
                pairs[pairs["annotator"] == a], a, check, unreviewed.get(a, 0), level, read
            )
            for a in present
        ],
        columns=SUMMARY_COLUMNS,
    )
    compared = pairs["verdict"].isin(("pass", "fail")) & pairs["outcome"].notna()
    machine = pairs["outcome"].fillna(False).astype(bool)
    differ = compared & ((pairs["verdict"] == "pass") != machine)
    disagreements = (
        pairs.loc[differ, [c for c in DISAGREEMENT_COLUMNS if c in pairs.columns]]
        .reset_index(drop=True)
        .astype({"outcome": bool})
    )
    between = _between_annotators(pairs.drop(columns="weight"), present, level)
    return Calibration(summary, disagreements, between)


def _annotators(pairs: pd.DataFrame, wanted: list[str] | None) -> list[str]:
    """The annotators to compare: ``wanted``, each checked to have verdicts, or all."""
    bad = sorted(set(pairs["verdict"].dropna()) - set(VERDICTS))
    if bad:
        options = ", ".join(repr(v) for v in VERDICTS)
        raise ArgumentError(f"'verdict' values must be one of {options}; got {bad!r}")
    present = list(dict.fromkeys(pairs["annotator"]))
    if wanted is None:
        return present
    unknown = [a for a in wanted if a not in present]
    if unknown:
        have = ", ".join(repr(a) for a in present) or "none (no verdicts)"
        raise ArgumentError(
            f"'annotator' must be among those with verdicts ({have}); got {unknown!r}"
        )
    return wanted


def _design(pairs: pd.DataFrame, population: int, design: str | None) -> DesignRead:
    """How the reviewed samples were chosen: their design columns, else ``design``."""
    if design == "random" and "design" not in pairs.columns:
        return DesignRead("random", POPULATION, np.ones(len(pairs)), 0, "")
    have = [c for c in DESIGN_COLUMNS if c in pairs.columns]
    return read_design(pairs[have], population)


# -- pairing verdicts with check outcomes -------------------------------------------------


def _run_pairs(run: Run, check: str) -> tuple[pd.DataFrame, dict[str, int], int]:
    codes, rows = check_outcomes(run, check)
    samples = run.table("samples", ["status"])
    verdicts = latest_verdicts(run.table("verdicts", ["reason", *DESIGN_COLUMNS]))
    position = sample_positions(samples, verdicts) if len(verdicts) else np.zeros(0, np.int64)
    verdicts = verdicts[position >= 0].reset_index(drop=True)
    position = position[position >= 0]
    code = codes[position]
    outcome = pd.array(code == OutcomeCode.PASS, dtype="boolean")
    outcome[code > OutcomeCode.PASS] = pd.NA
    pairs = pd.DataFrame({c: verdicts[c].astype(object) for c in KEY if c != "repeat"})
    pairs["repeat"] = verdicts["repeat"].to_numpy()
    pairs = pairs[KEY]
    pairs["annotator"] = verdicts["annotator"].astype(object).to_numpy()
    pairs["verdict"] = verdicts["verdict"].astype(object).to_numpy()
    pairs["outcome"] = outcome
    pairs["reason"] = verdicts["reason"].astype(object).to_numpy()
    pairs["detail"] = _details(rows, position)
    pairs["unit"] = case_field(run, pairs, "group") if len(pairs) else []
    for column in DESIGN_COLUMNS:
        pairs[column] = verdicts[column].to_numpy()
    scored = int((codes <= OutcomeCode.PASS).sum())
    reviewed_scored = (
        pd.Series(code <= OutcomeCode.PASS).groupby(pairs["annotator"].to_numpy()).sum().astype(int)
    )
    unreviewed = {a: scored - int(k) for a, k in reviewed_scored.items()}
    return pairs, unreviewed, len(samples)


def _details(rows: pd.DataFrame, position: np.ndarray) -> np.ndarray:
    """For each verdict's sample, what the selected checks said ("check: detail; ...")."""
    wanted = rows[rows["position"].isin(position)]
    text = wanted["check"].astype(str) + ": " + wanted["detail"].fillna("").astype(str)
    text = text.where(wanted["detail"].fillna("") != "", wanted["check"].astype(str) + ": ok")
    joined = text.groupby(wanted["position"].to_numpy()).agg("; ".join)
    return np.asarray(pd.Series(position).map(joined).fillna("").to_numpy(dtype=object))


def _frame_pairs(frame: pd.DataFrame, check: str) -> tuple[pd.DataFrame, dict[str, int], int]:
    missing = [c for c in ("outcome", "verdict") if c not in frame.columns]
    if missing:
        raise ArgumentError(
            "'data' must be a Run, a run directory, or a frame with columns 'outcome' "
            f"(the check) and 'verdict' (the person); missing {missing!r}"
        )
    pairs = frame.copy()
    key = [c for c in KEY if c in pairs.columns]
    population = len(pairs.drop_duplicates(key)) if {"case_id", "repeat"} <= set(key) else 0
    population = population or len(pairs)
    if "annotator" not in pairs:
        pairs["annotator"] = "annotator"
    pairs["annotator"] = pairs["annotator"].astype(object)
    pairs["verdict"] = pairs["verdict"].astype(object)
    if "created_at" in pairs and set(KEY) <= set(pairs.columns):
        reviewed = latest_verdicts(pairs[pairs["verdict"].notna()])
        pairs = pd.concat([reviewed, pairs[pairs["verdict"].isna()]], ignore_index=True)
    pairs["outcome"] = pairs["outcome"].astype("boolean")
    for column in ("reason", "detail"):
        if column not in pairs:
            pairs[column] = ""
    # The unit of the intervals: the case group, the case, or else every row its own.
    unit = next((c for c in ("group", "case_id") if c in pairs.columns), None)
    pairs["unit"] = pairs[unit].astype(object) if unit else np.arange(len(pairs))
    unreviewed = (
        (pairs["verdict"].isna() & pairs["outcome"].notna())
        .groupby(pairs["annotator"])
        .sum()
        .astype(int)
        .to_dict()
    )
    return pairs[pairs["verdict"].notna()].reset_index(drop=True), unreviewed, population


# -- statistics ---------------------------------------------------------------------------


def _summary_row(
    pairs: pd.DataFrame,
    annotator: str,
    check: str,
    unreviewed: int,
    level: float,
    read: DesignRead,
) -> dict[str, Any]:
    judged = pairs[pairs["verdict"].isin(("pass", "fail")) & (pairs["weight"] > 0)]
    scored = judged[judged["outcome"].notna()]
    weight = scored["weight"].to_numpy(float)
    human = (scored["verdict"] == "pass").to_numpy()
    machine = scored["outcome"].astype(bool).to_numpy()
    units = pd.factorize(scored["unit"].astype(object))[0] if len(scored) else np.zeros(0, int)
    cells = np.column_stack(
        [human & machine, human & ~machine, ~human & machine, ~human & ~machine]
    ).astype(float)
    per_unit = np.zeros((units.max(initial=-1) + 1, 4))
    np.add.at(per_unit, units, cells)
    tp, fn, fp, tn = (int(v) for v in per_unit.sum(axis=0))
    table = np.array([[tp, fn], [fp, tn]])
    n = tp + fn + fp + tn
    clustered = bool((np.bincount(units) > 1).any()) if len(units) else False
    weighed = len(weight) > 0 and bool(np.ptp(weight) > 1e-12 * weight.max())
    if weighed:
        # unequal inclusion probabilities: every count weighs 1 / pi, intervals over cases
        per_unit = np.zeros_like(per_unit)
        np.add.at(per_unit, units, cells * weight[:, None])
        clustered = True
    if clustered:
        kappa, kappa_low, kappa_high = _jackknife_kappa(per_unit, level)
        rates, low, high = _clustered_rates(per_unit, level)
        mcnemar_p = _clustered_mcnemar(per_unit[:, 2] - per_unit[:, 1])
    else:
        kappa, kappa_low, kappa_high = kappa_interval(table, level)
        rates, low, high = proportion_interval([tp, tn], [tp + fn, tn + fp], level=level)
        # With no disagreements there is nothing to test: p = 1.
        mcnemar_p = float(mcnemar(table, exact=True).pvalue) if fn + fp else 1.0
    whole = per_unit.sum(axis=0)
    row = {
        "annotator": annotator,
        "check": check,
        "cases": len(per_unit),
        "n": n,
        "agree": tp + tn,
        "agreement": (whole[0] + whole[3]) / whole.sum() if n else np.nan,
        "kappa": kappa,
        "kappa_low": kappa_low,
        "kappa_high": kappa_high,
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
        "tpr": rates[0],
        "tpr_low": low[0],
        "tpr_high": high[0],
        "tnr": rates[1],
        "tnr_low": low[1],
        "tnr_high": high[1],
        "mcnemar_p": mcnemar_p,
        "needs_review": int((pairs["verdict"] == "needs_review").sum()),
        "unscored": int(judged["outcome"].isna().sum()),
        "unreviewed": int(unreviewed),
        "level": level,
        "method": (WEIGHTED if weighed else CLUSTERED) if clustered else INDEPENDENT,
        "design": read.design,
        "scope": read.scope,
        "note": read.note,
    }
    if read.scope == REVIEWED:
        blank = ["kappa_low", "kappa_high", "tpr_low", "tpr_high", "tnr_low", "tnr_high"]
        row.update(dict.fromkeys([*blank, "mcnemar_p"], np.nan))
        row["method"] = "counts of the reviewed samples (no design: no interval, no test)"
    return row


def _kappas(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each 2x2 table given as rows (both pass, 1 only, 2 only, neither)."""
    total = tables.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (tables[:, 0] + tables[:, 3]) / total
        first = (tables[:, 0] + tables[:, 1]) / total
        second = (tables[:, 0] + tables[:, 2]) / total
        expected = first * second + (1 - first) * (1 - second)
        return np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)


def _jackknife_kappa(per_unit: np.ndarray, level: float) -> tuple[float, float, float]:
    """Kappa and its interval from the jackknife over cases (leave one case out), with a
    t quantile on ``cases - 1`` degrees of freedom; NaN with fewer than 2 cases or when
    leaving a case out leaves a rater with one category."""
    whole = per_unit.sum(axis=0)
    kappa = float(_kappas(whole[None, :])[0])
    units = len(per_unit)
    marginals = np.array([whole[0] + whole[1], whole[0] + whole[2]])
    if units < 2 or not np.isfinite(kappa) or (marginals == 0).any():
        return kappa, np.nan, np.nan
    if (marginals == whole.sum()).any():
        return kappa, np.nan, np.nan
    left_out = _kappas(whole[None, :] - per_unit)
    if not np.isfinite(left_out).all():
        return kappa, np.nan, np.nan
    se = float(np.sqrt((units - 1) / units * np.sum((left_out - left_out.mean()) ** 2)))
    critical = float(t.ppf(0.5 + level / 2, units - 1))
    return kappa, max(-1.0, kappa - critical * se), min(1.0, kappa + critical * se)


def _clustered_rates(
    per_unit: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TPR and TNR with Wilson intervals on the effective sample size across cases.

    A ratio over cases: ``se^2 = G/(G-1) sum_g (hits_g - rate * total_g)^2 / total^2``
    (CR1 over the ``G`` cases that have any), ``n_eff = rate (1 - rate) / se^2`` capped
    at the samples and shrunk by ``(z / t_{G-1})^2`` below 30 cases, as in suite_rate; a
    zero ``se`` uses one sample per case.
    """
    z = norm.ppf(0.5 + level / 2)
    estimates, lows, highs = [], [], []
    for hits, total in ((per_unit[:, 0], per_unit[:, 0] + per_unit[:, 1]),
                        (per_unit[:, 3], per_unit[:, 3] + per_unit[:, 2])):  # fmt: skip
        keep = total > 0
        hits, total = hits[keep], total[keep]
        groups, samples = len(total), float(total.sum())
        if samples == 0:
            estimates.append(np.nan)
            lows.append(np.nan)
            highs.append(np.nan)
            continue
        rate = float(hits.sum()) / samples
        shrink = (z / t.ppf(0.5 + level / 2, max(groups - 1, 1))) ** 2 if groups < 30 else 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            variance = groups / max(groups - 1, 1) * np.sum((hits - rate * total) ** 2)
            variance /= samples**2
            n_eff = min(rate * (1 - rate) / variance, samples) if variance > 0 else groups
        n_eff *= shrink
        _, low, high = proportion_interval([rate * n_eff], [n_eff], level=level)
        estimates.append(rate)
        lows.append(float(low[0]))
        highs.append(float(high[0]))
    return np.array(estimates), np.array(lows), np.array(highs)


def _clustered_mcnemar(differences: np.ndarray) -> float:
    """McNemar over cases: per case ``fp - fn``; the exact sign-flip test, or its normal
    form ``(sum d)^2 / sum d^2 ~ chi2(1)`` (Durkalski et al. 2003) beyond 16 cases."""
    moved = differences[np.abs(differences) > 0]
    if len(moved) == 0:
        return 1.0
    if len(moved) <= MAX_EXACT:
        return float(sign_flip_p([moved])[0])
    return float(chi2.sf(moved.sum() ** 2 / np.sum(moved**2), 1))


def kappa_interval(table: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Cohen's kappa of a square table and its interval from the asymptotic standard
    error (statsmodels ``cohens_kappa``), cut to kappa's range [-1, 1]. Kappa is NaN when
    both raters used a single category; the interval is NaN when either did."""
    table = np.asarray(table, dtype=float)
    total = table.sum()
    if total == 0:
        return np.nan, np.nan, np.nan
    expected = float((table.sum(axis=0) * table.sum(axis=1)).sum()) / total**2
    if expected >= 1:
        return np.nan, np.nan, np.nan
    # Tiny tables can give a negative variance estimate: its interval is then NaN.
    with np.errstate(invalid="ignore", divide="ignore"):
        result = cohens_kappa(table, return_results=True)
    kappa, se = float(result.kappa), float(result.std_kappa)
    if (table.sum(axis=0) == 0).any() or (table.sum(axis=1) == 0).any():
        # One rater used one category only: kappa is 0 and its standard error says
        # nothing (it comes out 0), so there is no interval to give.
        return kappa, np.nan, np.nan
    z = norm.ppf(1 - (1 - level) / 2)
    return kappa, max(-1.0, kappa - z * se), min(1.0, kappa + z * se)


def _between_annotators(pairs: pd.DataFrame, annotators: list[str], level: float) -> pd.DataFrame:
    if len(annotators) < 2:
        return pd.DataFrame(columns=[*ANNOTATOR_COLUMNS, *ALPHA_COLUMNS])
    sample = [c for c in KEY if c in pairs.columns]
    if not sample:
        raise ArgumentError(
            "comparing annotators needs the sample key columns "
            f"({', '.join(KEY)}) in 'data' to match their verdicts"
        )
    wide = pairs.pivot(index=sample, columns="annotator", values="verdict").reindex(
        columns=annotators
    )
    units = pairs.groupby(sample, observed=True)["unit"].first().reindex(wide.index)
    rows = [
        _agreement_row(wide[list(pair)], units, "cohen", level)
        for pair in itertools.combinations(annotators, 2)
    ]
    if len(annotators) > 2:
        rows.append(_agreement_row(wide, units, "fleiss", level))
    # Krippendorff's alpha beside each kappa (evalnb.analysis._raters).
    return with_alpha(pd.DataFrame(rows, columns=ANNOTATOR_COLUMNS), wide, units, level)


def _agreement_row(
    wide: pd.DataFrame, units: pd.Series, method: str, level: float
) -> dict[str, Any]:
    everyone = wide.notna().all(axis=1)
    flagged = everyone & wide.eq("needs_review").any(axis=1)
    judged = wide[everyone & ~flagged]
    passes = judged.eq("pass").sum(axis=1).to_numpy()
    raters = wide.shape[1]
    agree = int(((passes == 0) | (passes == raters)).sum())
    n = len(judged)
    unit = pd.factorize(units[everyone & ~flagged].astype(object))[0]
    if method == "cohen":
        first, second = (judged.iloc[:, i].eq("pass").to_numpy() for i in (0, 1))
        table = np.array(
            [
                [(first & second).sum(), (first & ~second).sum()],
                [(~first & second).sum(), (~first & ~second).sum()],
            ]
        )
        if len(unit) and (np.bincount(unit) > 1).any():
            cells = np.column_stack(
                [first & second, first & ~second, ~first & second, ~first & ~second]
            ).astype(float)
            per_unit = np.zeros((unit.max() + 1, 4))
            np.add.at(per_unit, unit, cells)
            kappa, low, high = _jackknife_kappa(per_unit, level)
            method = "cohen, jackknife over cases"
        else:
            kappa, low, high = kappa_interval(table, level)
    else:
        counts = np.column_stack([passes, raters - passes])
        undefined = n == 0 or counts[:, 0].sum() in (0, n * raters)
        kappa = np.nan if undefined else float(fleiss_kappa(counts, method="fleiss"))
        low = high = np.nan
    return {
        "annotators": ", ".join(str(c) for c in wide.columns),
        "method": method,
        "raters": raters,
        "cases": len(np.unique(unit)),
        "n": n,
        "agree": agree,
        "agreement": agree / n if n else np.nan,
        "kappa": kappa,
        "low": low,
        "high": high,
        "level": level,
        "needs_review": int(flagged.sum()),
        "partial": int((wide.notna().any(axis=1) & ~everyone).sum()),
    }
