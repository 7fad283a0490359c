"""Agreement between human reviewers on the samples they both judged: Krippendorff's alpha
beside the Cohen's (or Fleiss') kappa that :func:`evalnb.calibrate` reports, each with an
interval over cases.

Alpha (the ``krippendorff`` package, nominal level) counts every sample at least two
reviewers judged ``pass`` or ``fail``, so a sample one of three reviewers skipped still
counts; ``needs_review`` is no judgement and is left out. Its interval is the jackknife over
cases (leave one case out, t on cases - 1 degrees of freedom), the same as kappa's: repeats
of one case are not independent evidence of agreement. :func:`with_alpha` adds the columns
to calibrate's ``annotators`` frame; :func:`rater_line` is its sentence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from scipy.stats import t

__all__ = ["ALPHA_COLUMNS", "alpha_interval", "rater_line", "with_alpha"]

#: The columns :func:`with_alpha` adds.
ALPHA_COLUMNS = ["alpha", "alpha_low", "alpha_high", "alpha_cases", "alpha_method"]
ALPHA_METHOD = "krippendorff alpha (nominal), jackknife over cases"


def _alpha(ratings: np.ndarray) -> float:
    """Alpha of a (raters x samples) array of 1 (pass), 0 (fail), NaN (none); NaN when it is
    undefined (fewer than two judged values per sample, or one category only)."""
    pairable = (~np.isnan(ratings)).sum(axis=0) >= 2
    values = ratings[:, pairable]
    judged = values[~np.isnan(values)]
    if judged.size == 0 or np.unique(judged).size < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=values, level_of_measurement="nominal"))


def alpha_interval(
    ratings: np.ndarray, units: np.ndarray, level: float = 0.95
) -> tuple[float, float, float, int]:
    """Alpha of ``ratings`` (raters x samples: 1, 0 or NaN) with its jackknife interval over
    ``units`` (the case of each sample), cut to [-1, 1]; and the number of cases behind it.
    The interval is NaN with fewer than 2 cases, when leaving a case out makes alpha
    undefined, or when no case moves it (a standard error of 0 is not certainty)."""
    pairable = (~np.isnan(ratings)).sum(axis=0) >= 2
    ratings, units = ratings[:, pairable], units[pairable]
    cases = np.unique(units)
    alpha = _alpha(ratings)
    if len(cases) < 2 or not math.isfinite(alpha):
        return alpha, math.nan, math.nan, len(cases)
    left_out = np.array([_alpha(ratings[:, units != case]) for case in cases])
    if not np.isfinite(left_out).all():
        return alpha, math.nan, math.nan, len(cases)
    n = len(cases)
    se = float(np.sqrt((n - 1) / n * np.sum((left_out - left_out.mean()) ** 2)))
    if se == 0:  # every case leaves alpha where it was (no disagreement): not certainty
        return alpha, math.nan, math.nan, n
    critical = float(t.ppf(0.5 + level / 2, n - 1))
    return alpha, max(-1.0, alpha - critical * se), min(1.0, alpha + critical * se), n


def with_alpha(
    annotators: pd.DataFrame, wide: pd.DataFrame, units: pd.Series, level: float
) -> pd.DataFrame:
    """``annotators`` (calibrate's frame, one row per pair of reviewers and one for all of
    them) with Krippendorff's alpha of the reviewers each row names, over ``wide`` (one row
    per sample, one column of verdicts per reviewer; ``units`` its cases)."""
    out = annotators.copy()
    values = wide.replace({"pass": 1.0, "fail": 0.0, "needs_review": np.nan})
    values = values.apply(pd.to_numeric, errors="coerce")
    cases = units.astype(object).to_numpy()
    found = []
    for names in out["annotators"]:
        who = [name.strip() for name in str(names).split(",")]
        ratings = values[who].to_numpy(dtype=float).T
        found.append(alpha_interval(ratings, cases, level))
    for i, column in enumerate(ALPHA_COLUMNS[:4]):
        out[column] = [row[i] for row in found] if found else []
    out["alpha_method"] = ALPHA_METHOD
    return out


def _number(value: Any) -> str:
    try:
        return f"{float(value):.2f}" if math.isfinite(float(value)) else "n/a"
    except (TypeError, ValueError):
        return "n/a"


def rater_line(row: Mapping[str, Any]) -> str:
    """``ana, ben on 12 cases (30 samples both judged): agreement 0.90, cohen kappa 0.78
    (95% CI 0.52 to 1.00), krippendorff alpha 0.78 (95% CI ...)`` (plain text)."""
    level = f"{float(row['level']) * 100:g}%"
    kind = "fleiss kappa" if str(row["method"]).startswith("fleiss") else "cohen kappa"
    return (
        f"{row['annotators']} on {int(row['cases'])} cases ({int(row['n'])} samples all "
        f"judged): agreement {_number(row['agreement'])}, {kind} {_number(row['kappa'])} "
        f"({level} CI {_number(row['low'])} to {_number(row['high'])}), krippendorff alpha "
        f"{_number(row['alpha'])} ({level} CI {_number(row['alpha_low'])} to "
        f"{_number(row['alpha_high'])}, {int(row['alpha_cases'])} cases) · {row['method']}; "
        f"{row['alpha_method']}"
    )
