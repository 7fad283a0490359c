"""Pairwise preferences between two variants: how often reviewers prefer B's answer to A's,
with the case as the unit, told in the same words as :func:`evalnb.compare`.

A preference is one reviewer's choice on one case and repeat (saved by the pairwise panel,
:func:`evalnb.annotate` with ``compare=``): B better, A better, a tie or both bad. The win
rate of B over A counts a tie as half a win; "both bad" says neither answer is acceptable,
which is no preference at all, so it is left out of the win rate and reported beside it.
Repeats and reviewers are draws inside a case: the win rate is the mean over cases of each
case's win rate, its interval a t interval across cases (C - 1 degrees of freedom), and the
verdict an exact sign test on each case's net preference (B wins minus A wins; cases with
none are ties of the test and drop out). The interval is not the sign test's, and the
result says so in the same line, as :func:`evalnb.compare` does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _display as display
from evalnb.analysis._frames import Run, load
from evalnb.analysis._story import Story, p_text
from evalnb.store import latest_preferences

__all__ = ["PREFERENCE_COLUMNS", "compared_pairs", "preference_story", "preferences"]

METHOD = "sign test over cases (exact binomial, scipy binomtest)"
INTERVAL_METHOD = "t across cases"
B_BETTER = "B better"
A_BETTER = "A better"
CANT_TELL = "can't tell yet"

#: The columns of :func:`preferences`, in order.
PREFERENCE_COLUMNS = [
    "a",
    "b",
    "cases",
    "pairs",
    "judgements",
    "annotators",
    "b_better",
    "a_better",
    "ties",
    "both_bad",
    "both_bad_share",
    "win_rate",
    "low",
    "high",
    "level",
    "cases_b",
    "cases_a",
    "p_value",
    "min_p",
    "left_share",
    "left_p",
    "design",
    "verdict",
    "method",
    "interval_method",
    "note",
]
_SCORE = {"b_better": 1.0, "a_better": 0.0, "tie": 0.5}


def preferences(
    data: Run | str | Any,
    *,
    a: str,
    b: str,
    annotator: str | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Do reviewers prefer ``b``'s answers to ``a``'s? The win rate of B over A from the
    pairwise review (``evalnb.annotate(run, who, compare=(a, b))``), by case.

    ``data`` is a Run or a run directory; choices saved with the variants the other way
    round (``compare=(b, a)``) count with their words turned. ``annotator`` keeps one
    reviewer's choices; by default every reviewer's latest choice per pair counts, each a
    draw inside its case.

    Returns:
        A one-row frame (it shows its verdict sentence in a notebook), columns:

        - ``a``, ``b``: the variants; ``cases``: cases with a choice other than both bad;
        - ``pairs``: the run's pairs of samples of ``a`` and ``b`` (same case and repeat),
          reviewed or not;
        - ``judgements``: choices counted in the win rate; ``annotators``: reviewers;
        - ``b_better``, ``a_better``, ``ties``: the choices; ``both_bad``: choices that
          neither answer is acceptable, left out of the win rate; ``both_bad_share``: their
          share of all choices;
        - ``win_rate``: mean over cases of the case's share of B wins (a tie half a win);
        - ``low``, ``high``: its t interval across cases at ``level``, cut to [0, 1];
        - ``cases_b``, ``cases_a``: cases whose net preference favours B, A;
        - ``p_value``: two-sided exact sign test of ``cases_b`` against ``cases_a``
          (scipy ``binomtest``, p = 1/2); ``min_p``: the smallest p it could give with
          these cases;
        - ``left_share``: the share of choices of B or A that went to the answer shown on
          the left; ``left_p``: the exact binomial test of it against 1/2 (a position
          bias; the sides are drawn at random per pair, so it favours neither variant);
        - ``design``: how the pairs were ordered when chosen (``random``, ``queue``, or
          ``mixed``); choices taken in queue order describe the pairs reviewed, not a
          random sample of them, and ``note`` says so;
        - ``verdict``: "B better", "A better" or "can't tell yet" (``p_value < 1 - level``);
        - ``method``: the test; ``interval_method``: the interval's method;
        - ``note``: a caution (no choices, few cases, a verdict out of reach), or empty.

    >>> evalnb.preferences(run, a="v1", b="v2")                       # doctest: +SKIP
    """
    if not isinstance(a, str) or not isinstance(b, str) or a == b:
        raise ArgumentError(f"'a' and 'b' must be two different variant names; got {a!r}, {b!r}")
    if not isinstance(level, float | int) or not 0 < level < 1:
        raise ArgumentError(f"'level' must be between 0 and 1; got {level!r}")
    run = data if isinstance(data, Run) else load(data)
    chosen = _choices(run, a, b, annotator)
    row = _row(chosen, a, b, float(level))
    row["pairs"] = _pair_count(run, a, b)
    return display.result(pd.DataFrame([row], columns=PREFERENCE_COLUMNS), _summary)


def compared_pairs(run: Run) -> list[tuple[str, str]]:
    """The pairs of variants with saved preferences, each once, in the order first asked
    (``(a, b)`` as the reviewer's ``compare=`` named them)."""
    saved = latest_preferences(list(run.paths.values()))
    pairs: dict[frozenset[str], tuple[str, str]] = {}
    for a, b in zip(saved["a"], saved["b"], strict=True):
        pairs.setdefault(frozenset((a, b)), (str(a), str(b)))
    return list(pairs.values())


def _pair_count(run: Run, a: str, b: str) -> int:
    """How many (run, case, repeat) have a sample of both ``a`` and ``b``."""
    samples = run.table("samples", ["status"])
    keys = ["run_id", "case_id", "repeat"]
    sides = [
        samples.loc[samples["variant"].astype(str) == v, keys].astype({k: str for k in keys})
        for v in (a, b)
    ]
    return len(sides[0].drop_duplicates().merge(sides[1].drop_duplicates(), on=keys))


def _choices(run: Run, a: str, b: str, annotator: str | None) -> pd.DataFrame:
    """The latest choices on (a, b) or (b, a), said of ``a`` and ``b``."""
    saved = latest_preferences(list(run.paths.values()), annotator=annotator)
    forward = (saved["a"] == a) & (saved["b"] == b)
    backward = (saved["a"] == b) & (saved["b"] == a)
    turned = {"a_better": "b_better", "b_better": "a_better"}
    chosen = saved[forward | backward].copy()
    flip = backward[forward | backward].to_numpy()
    chosen.loc[flip, "preference"] = chosen.loc[flip, "preference"].map(lambda p: turned.get(p, p))
    # One choice per pair and reviewer, whichever way round it was asked last.
    chosen = chosen.sort_values("created_at", kind="stable")
    return chosen.drop_duplicates(["run_id", "case_id", "repeat", "annotator"], keep="last")


def _row(chosen: pd.DataFrame, a: str, b: str, level: float) -> dict[str, Any]:
    counts = chosen["preference"].value_counts()
    both_bad = int(counts.get("both_bad", 0))
    scored = chosen[chosen["preference"] != "both_bad"]
    score = scored["preference"].map(_SCORE).to_numpy(dtype=float)
    unit = (scored["run_id"].astype(str) + "\0" + scored["case_id"].astype(str)).to_numpy()
    per_case = pd.Series(score).groupby(unit).mean().to_numpy()
    net = (
        pd.Series(np.sign(score - 0.5)).groupby(unit).sum().to_numpy()
        if len(score)
        else np.zeros(0)
    )
    cases = len(per_case)
    win = float(per_case.mean()) if cases else math.nan
    low = high = math.nan
    if cases >= 2:
        se = float(per_case.std(ddof=1)) / math.sqrt(cases)
        critical = float(stats.t.ppf(0.5 + level / 2, cases - 1))
        # A standard error of 0 (every case the same) is not certainty: no interval then.
        if se > 0:
            low, high = max(0.0, win - critical * se), min(1.0, win + critical * se)
    cases_b, cases_a = int((net > 0).sum()), int((net < 0).sum())
    decisive = cases_b + cases_a
    p = float(stats.binomtest(cases_b, decisive, 0.5).pvalue) if decisive else math.nan
    min_p = min(1.0, 2 * 0.5**decisive) if decisive else math.nan
    decided = scored[scored["preference"] != "tie"]
    winner = np.where(decided["preference"] == "a_better", a, b)
    lefts = int((winner == decided["left"].to_numpy()).sum())
    left_share = lefts / len(decided) if len(decided) else math.nan
    left_p = float(stats.binomtest(lefts, len(decided), 0.5).pvalue) if len(decided) else math.nan
    alpha = 1 - level
    verdict = CANT_TELL
    if decisive and p < alpha:
        verdict = B_BETTER if cases_b > cases_a else A_BETTER
    notes = []
    if not len(chosen):
        notes.append(f"no preferences saved on {a} vs {b}")
    elif cases == 0:
        notes.append("every choice was 'both bad': no preference to count")
    elif cases < 10:
        notes.append("fewer than 10 cases: an interval across so few cases is necessarily wide")
    if decisive and min_p >= alpha:
        notes.append(
            f"with {decisive} cases that lean one way the sign test cannot reach "
            f'p < {alpha:g}: no verdict but "can\'t tell yet" is possible'
        )
    designs = sorted(set(chosen["design"]))
    design = designs[0] if len(designs) == 1 else ("mixed" if designs else "")
    if "queue" in designs:
        notes.append(
            "some choices were taken in queue order: they describe the pairs reviewed, not a "
            "random sample of the pairs"
        )
    if math.isfinite(left_p) and left_p < alpha:
        notes.append(
            f"the answer on the left was chosen in {left_share:.0%} of the choices for A or B "
            f"(p = {left_p:.3g}): a position bias, which the sides drawn at random per pair "
            "keep from favouring either variant"
        )
    return {
        "a": a,
        "b": b,
        "cases": cases,
        "judgements": len(scored),
        "annotators": int(chosen["annotator"].nunique()),
        "b_better": int(counts.get("b_better", 0)),
        "a_better": int(counts.get("a_better", 0)),
        "ties": int(counts.get("tie", 0)),
        "both_bad": both_bad,
        "both_bad_share": both_bad / len(chosen) if len(chosen) else math.nan,
        "win_rate": win,
        "low": low,
        "high": high,
        "level": level,
        "cases_b": cases_b,
        "cases_a": cases_a,
        "p_value": p,
        "min_p": min_p,
        "left_share": left_share,
        "left_p": left_p,
        "design": design,
        "verdict": verdict,
        "method": METHOD,
        "interval_method": INTERVAL_METHOD,
        "note": "; ".join(notes),
    }


def _percent(value: Any) -> str:
    return "n/a" if _missing(value) else f"{float(value) * 100:.1f}%"


def _missing(value: Any) -> bool:
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return True


def preference_story(row: Mapping[str, Any]) -> Story:
    """The words of one row of :func:`preferences`, in the shape of
    :func:`evalnb.compare`'s (:class:`~evalnb.analysis._story.Story`): its
    ``line(a, b, "preference")`` reads "v2 better · v2 vs v1 on preference: v2 wins 68.0%,
    95% CI ... (t across cases) and p = 0.021 (sign test ...); ...; 24 cases, 60 choices"."""
    label = str(row["verdict"]).replace("B ", f"{row['b']} ").replace("A ", f"{row['a']} ")
    level = f"{float(row['level']) * 100:g}%"
    # One p, and each number named by the method that made it: the interval is a t
    # interval across cases, the verdict's p the exact sign test's.
    interval = (
        f"{level} CI {_percent(row['low'])} to {_percent(row['high'])} "
        f"({row['interval_method']}) and {p_text(row['p_value'])} ({row['method']})"
    )
    counts = (
        f"{row['b']} better {int(row['b_better'])}, {row['a']} better {int(row['a_better'])}, "
        f"ties {int(row['ties'])} (half a win each); both bad {int(row['both_bad'])} "
        f"({_percent(row['both_bad_share'])} of choices, left out)"
    )
    cases = f"{int(row['cases'])} cases, {int(row['judgements'])} choices"
    note = row.get("note")
    return Story(
        verdict=label,
        difference=f"{row['b']} wins {_percent(row['win_rate'])}",
        interval=interval,
        rates=counts,
        cases=cases,
        fixed="",
        note=note if isinstance(note, str) else "",
    )


def _summary(frame: pd.DataFrame) -> str:
    lines = []
    for row in frame.to_dict("records"):
        told = preference_story(row)
        colour = "#1a7f37" if str(row["verdict"]).endswith("better") else "#9a6700"
        lines.append(
            f"<div><b style='color:{colour}'>{display.esc(told.verdict)}</b> · "
            f"{display.esc(row['b'])} vs {display.esc(row['a'])} on <code>preference</code>: "
            f"<b>{display.esc(told.difference)}</b>, {display.esc(told.interval)}; "
            f"{display.esc(told.rates)}; {display.esc(told.cases)}</div>"
        )
        if told.note:
            lines.append(display.note_html(told.note))
    return "".join(lines)
