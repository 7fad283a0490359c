"""Run until decided: an anytime-valid confidence sequence for the mean per-case paired
difference (B - A), and the stopping rule :class:`Decided` the runner calls.

The case is the unit: a case's repeats are averaged into its pass rate on each side, and
its difference ``d = rate_b - rate_a`` lies in [-1, 1], mapped to ``x = (d + 1) / 2`` in
[0, 1]. The cases are taken in a seeded random order, so the differences seen so far are
a random sample of the suite's cases. For each candidate mean ``m`` two bettors stake on
``x`` being above or below ``m``: the hedged capital process of Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting" (JRSS-B 2024, eq. 23), with
their predictable plug-in bets (eq. 26: a running variance with one prior observation),
each bettor's capital split between bets capped at 1/2 and at 9/10 of the largest stake
that keeps the capital positive (their diversified capital). Where the
capital of either bettor reaches ``2 / alpha``, ``m`` is ruled out (Ville's inequality:
with probability ``1 - alpha`` the true mean is never ruled out, however often one looks).
The sequence is the running intersection of the sets not ruled out.

``population=N`` gives their without-replacement version ("Confidence sequences for
sampling without replacement", NeurIPS 2020): the null mean of the next draw is that of
the cases not yet drawn. It is exact when each case's value is a fixed number (a
deterministic score); with repeat noise it is not (the last cases would pin the mean of
the noisy values, not of the cases' true differences), so :class:`Decided` uses the
sampling-with-replacement form, valid for the mean over the population the cases stand
for. ``benchmarks/decide.py`` measures both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb._stopping import CaseOutcomes, Decision
from evalnb.analysis._frames import Run
from evalnb.analysis._paired import wide_counts
from evalnb.analysis._tally import tallies

__all__ = ["Decided", "betting_log_capital", "betting_sequence", "confidence_sequence"]

METHOD = (
    "anytime-valid betting confidence sequence over cases (Waudby-Smith & Ramdas 2024, "
    "hedged capital, predictable plug-in bets capped at 1/2 and 9/10)"
)
B_BETTER = "B better"
A_BETTER = "A better"
EQUIVALENT = "equivalent"
CANT_TELL = "can't tell yet"
#: Each bettor splits its capital between two strategies that cap the bet at these
#: shares of the stake that would let the capital reach 0 (Waudby-Smith & Ramdas' c; their
#: "diversified" capital, the average of both, is a test martingale too). 1/2 is their
#: default and confseq's; 9/10 grows faster when the differences vary little (many
#: repeats), where 1/2 alone needs up to 0.62x a fixed design's samples for twice the
#: difference it was sized for (``benchmarks/decide.py``).
TRUNCATIONS = (0.5, 0.9)
#: Candidate means per unit of x: steps of 0.001 on the difference scale.
GRID = 2000


def _bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable plug-in bets along the last axis (W-S & R eq. 26; confseq's
    ``lambda_predmix_eb`` with prior mean 1/2, variance 1/4 and one prior observation).
    ``alpha`` is each bettor's share (alpha / 2 for the hedged pair)."""
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mean = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    spread = (0.25 + np.cumsum((x - mean) ** 2, axis=-1)) / (t + 1)
    previous = np.concatenate([np.full((*x.shape[:-1], 1), 0.25), spread[..., :-1]], axis=-1)
    bets: np.ndarray = np.sqrt(2 * math.log(1 / alpha) / (t * np.log1p(t) * previous))
    return bets


def _null_means(x: np.ndarray, m: np.ndarray, population: int | None) -> np.ndarray:
    """The mean of the next draw under the null ``m``: ``m`` itself, or without replacement
    the mean of the cases not yet drawn."""
    if population is None:
        return np.broadcast_to(m, np.broadcast_shapes(m.shape, x.shape))
    t = np.arange(x.shape[-1], dtype=float)
    drawn = np.cumsum(x, axis=-1) - x
    with np.errstate(divide="ignore", invalid="ignore"):
        remaining: np.ndarray = (population * m - drawn) / (population - t)
    return remaining


def betting_log_capital(
    x: np.ndarray | Sequence[float],
    m: float | np.ndarray,
    *,
    alpha: float,
    population: int | None = None,
    truncations: Sequence[float] = TRUNCATIONS,
) -> tuple[np.ndarray, np.ndarray]:
    """Log capital of the bettor on "above ``m``" and on "below ``m``" after each draw.

    ``x`` holds values in [0, 1] along its last axis (rows are independent sequences);
    ``m`` broadcasts against it (a column of candidate means against one sequence).
    ``alpha`` is the sequence's error rate; each bettor bets with ``alpha / 2``, its
    capital shared equally among strategies that cap the bet at each of ``truncations``
    (``(0.5,)``: confseq's ``hedged_cs``). A null mean that the drawn values already rule
    out (without replacement) has infinite capital.
    """
    x = np.asarray(x, dtype=float)
    m = np.asarray(m, dtype=float)
    bets = _bets(x, alpha / 2)
    mu = _null_means(x, m, population)
    ups, downs = [], []
    for c in truncations:
        with np.errstate(divide="ignore", invalid="ignore"):
            gain_up = np.log1p(np.minimum(bets, c / mu) * (x - mu))
            gain_down = np.log1p(-np.minimum(bets, c / (1 - mu)) * (x - mu))
        ups.append(np.cumsum(np.nan_to_num(gain_up, nan=0.0), axis=-1))
        downs.append(np.cumsum(np.nan_to_num(gain_down, nan=0.0), axis=-1))
    share = math.log(len(truncations))
    log_up = np.logaddexp.reduce(np.stack(ups), axis=0) - share
    log_down = np.logaddexp.reduce(np.stack(downs), axis=0) - share
    impossible = (mu < 0) | (mu > 1)
    log_up = np.where(impossible, np.inf, log_up)
    log_down = np.where(impossible, np.inf, log_down)
    return log_up, log_down


def betting_sequence(
    x: np.ndarray | Sequence[float],
    *,
    alpha: float,
    population: int | None = None,
    points: Sequence[float] = (),
    truncations: Sequence[float] = TRUNCATIONS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The confidence sequence for the mean of ``x`` (values in [0, 1]) after each draw.

    Returns ``low``, ``high`` (the running intersection: the smallest and largest
    candidate mean on a grid of steps ``1 / GRID``, plus ``points``, not ruled out at any
    look so far) and ``log_e``: the log of the largest hedged capital at ``1/2`` so far
    (the anytime-valid p-value for the mean 1/2 is ``min(1, exp(-log_e))``). A grid point
    is in the sequence exactly when the test at that point does not reject, so a verdict
    read from the interval and one read from the test agree.
    """
    x = np.asarray(x, dtype=float)
    grid = np.union1d(np.linspace(0.0, 1.0, GRID + 1), np.asarray(points, dtype=float))
    log_up, log_down = betting_log_capital(
        x[None, :], grid[:, None], alpha=alpha, population=population, truncations=truncations
    )
    limit = math.log(2 / alpha)
    inside = (log_up < limit) & (log_down < limit)
    if population is not None:
        t = np.arange(1, len(x) + 1)
        total = np.cumsum(x)
        inside &= (grid[:, None] >= total / population - 1e-12) & (
            grid[:, None] <= 1 - (t - total) / population + 1e-12
        )
    inside = np.logical_and.accumulate(inside, axis=1)
    anywhere = inside.any(axis=0)
    first = np.argmax(inside, axis=0)
    last = len(grid) - 1 - np.argmax(inside[::-1], axis=0)
    low = np.where(anywhere, grid[first], np.nan)
    high = np.where(anywhere, grid[last], np.nan)
    half = int(np.searchsorted(grid, 0.5))
    log_e = np.maximum.accumulate(np.maximum(log_up[half], log_down[half]) - math.log(2))
    return low, high, log_e


def confidence_sequence(
    data: Run | Sequence[float] | np.ndarray,
    *,
    a: str | None = None,
    b: str | Sequence[str] | None = None,
    check: str = "all",
    alpha: float | None = None,
    margin: float | None = None,
    population: int | None = None,
) -> pd.DataFrame:
    """The anytime-valid confidence sequence for the mean per-case difference (B - A),
    one row per look.

    ``data`` is a run made with ``until=evalnb.Decided(...)`` (its rule gives ``a``,
    ``b``, ``alpha`` and ``margin``; the cases are taken in the order the run drew them,
    as far as every one of them is complete), or per-case differences in [-1, 1] in the
    order the cases were drawn (``alpha`` default 0.05; ``population``: the number of
    cases in the suite, for the without-replacement form, exact only when each case's
    difference is a fixed number).

    Returns:
        DataFrame, one row per look (and comparison, for a run: ``a``, ``b``, ``check``
        first), columns ``cases`` (looked at so far), ``estimate`` (their mean
        difference), ``low``, ``high`` (the sequence: the running intersection, on a grid
        of 0.001), ``p_value`` (anytime-valid, for no difference), ``level``, ``verdict``
        ("B better", "A better", "equivalent" when inside +-``margin``, else "can't tell
        yet") and ``method``; for a run also ``samples`` (both sides, so far).

    >>> evalnb.confidence_sequence(evalnb.load("runs/until"))  # doctest: +SKIP
    """
    if isinstance(data, Run):
        return sequence_frame(data, a=a, b=b, check=check, on="variant")
    return _sequence_of(
        data, alpha=0.05 if alpha is None else alpha, margin=margin, population=population
    )


def _sequence_of(
    differences: Sequence[float] | np.ndarray,
    *,
    alpha: float,
    margin: float | None,
    population: int | None,
) -> pd.DataFrame:
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or np.isnan(d).any() or (np.abs(d) > 1 + 1e-12).any():
        raise ArgumentError(
            f"'differences' must be a list of numbers in [-1, 1]; got {list(d.ravel()[:5])!r}"
        )
    if population is None:
        running = _Running(alpha, margin)
        frame = pd.DataFrame([running.add(float(v)) for v in d])
    else:
        points = () if margin is None else ((1 - margin) / 2, (1 + margin) / 2)
        low, high, log_e = betting_sequence(
            (np.clip(d, -1, 1) + 1) / 2, alpha=alpha, population=population, points=points
        )
        low, high = 2 * low - 1, 2 * high - 1
        frame = pd.DataFrame(
            {
                "cases": np.arange(1, len(d) + 1),
                "estimate": np.cumsum(d) / np.arange(1, len(d) + 1),
                "low": low,
                "high": high,
                "p_value": np.minimum(1.0, np.exp(-log_e)),
            }
        )
        frame["verdict"] = [verdict(lo, hi, margin) for lo, hi in zip(low, high, strict=True)]
    frame.insert(5, "level", 1 - alpha)
    frame["method"] = METHOD if population is None else f"{METHOD}, without replacement"
    return frame


class _Running:
    """The with-replacement sequence updated one case at a time: the same arithmetic as
    :func:`betting_log_capital` and :func:`betting_sequence`, O(grid) per case, so a rule
    that looks after every case does not redo the whole path at each look."""

    def __init__(self, alpha: float, margin: float | None) -> None:
        points = () if margin is None else ((1 - margin) / 2, (1 + margin) / 2)
        self.grid = np.union1d(np.linspace(0.0, 1.0, GRID + 1), np.asarray(points, dtype=float))
        self.alpha, self.margin = alpha, margin
        self.limit = math.log(2 / alpha)
        self.half = int(np.searchsorted(self.grid, 0.5))
        self.up = np.zeros((len(TRUNCATIONS), len(self.grid)))
        self.down = np.zeros((len(TRUNCATIONS), len(self.grid)))
        self.inside = np.ones(len(self.grid), dtype=bool)
        self.t, self.total, self.spread_sum, self.spread = 0, 0.0, 0.25, 0.25
        self.sum_d, self.log_e = 0.0, -math.inf
        self.values: list[float] = []
        self.last: dict[str, Any] = {}

    def add(self, d: float) -> dict[str, Any]:
        """Take one more case's difference; the look after it."""
        x = (min(1.0, max(-1.0, d)) + 1) / 2
        self.values.append(d)
        self.t += 1
        t = float(self.t)
        bet = math.sqrt(2 * math.log(2 / self.alpha) / (t * math.log1p(t) * self.spread))
        self.total += x
        mean = (0.5 + self.total) / (t + 1)
        self.spread_sum += (x - mean) ** 2
        self.spread = self.spread_sum / (t + 1)
        m = self.grid
        with np.errstate(divide="ignore", invalid="ignore"):
            for i, c in enumerate(TRUNCATIONS):
                self.up[i] += np.nan_to_num(np.log1p(np.minimum(bet, c / m) * (x - m)), nan=0.0)
                self.down[i] += np.nan_to_num(
                    np.log1p(-np.minimum(bet, c / (1 - m)) * (x - m)), nan=0.0
                )
        share = math.log(len(TRUNCATIONS))
        log_up = np.logaddexp.reduce(self.up, axis=0) - share
        log_down = np.logaddexp.reduce(self.down, axis=0) - share
        self.inside &= (log_up < self.limit) & (log_down < self.limit)
        self.log_e = max(self.log_e, max(log_up[self.half], log_down[self.half]) - math.log(2))
        where = np.flatnonzero(self.inside)
        low = 2 * float(m[where[0]]) - 1 if len(where) else math.nan
        high = 2 * float(m[where[-1]]) - 1 if len(where) else math.nan
        self.sum_d += d
        return {
            "cases": self.t,
            "estimate": self.sum_d / self.t,
            "low": low,
            "high": high,
            "p_value": min(1.0, math.exp(-self.log_e)),
            "verdict": verdict(low, high, self.margin),
        }


def verdict(low: float, high: float, margin: float | None) -> str:
    """What an interval of the sequence says: a side better, equivalent, or not yet."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return CANT_TELL
    if low > 0:
        return B_BETTER
    if high < 0:
        return A_BETTER
    if margin is not None and -margin < low and high < margin:
        return EQUIVALENT
    return CANT_TELL


def _outcome(outcomes: Mapping[str, bool | None], check: str) -> bool | None:
    """A sample's outcome on ``check``; ``all``: any fail fails, else any pass passes."""
    if check != "all":
        return outcomes.get(check)
    scored = [o for o in outcomes.values() if o is not None]
    return None if not scored else all(scored)


def case_rate(samples: Sequence[Mapping[str, bool | None]], check: str) -> float:
    """A case's pass rate over its scored samples on one side (NaN when none is scored).
    Incomplete samples carry False outcomes from their checks, so they count as fails."""
    scored = [o for o in (_outcome(s, check) for s in samples) if o is not None]
    return float(np.mean(scored)) if scored else math.nan


@dataclass(frozen=True)
class Decided:
    """Run until the comparison of ``b`` against ``a`` is decided.

    ``run(..., until=evalnb.Decided(a="v1", b="v2"))`` takes the cases in a seeded random
    order, runs each for every variant and repeat, and after each case looks at the
    anytime-valid confidence sequence for the mean per-case difference (B - A) on
    ``check``. It stops when the sequence excludes 0 ("B better" / "A better"), when it
    lies inside +-``margin`` ("equivalent", only with a margin), or when the cases or the
    budget run out ("can't tell yet"). With several ``b``, each comparison gets
    ``alpha / len(b)`` (Bonferroni) and the run stops once every one is decided.
    """

    a: str
    b: str | Sequence[str]
    alpha: float = 0.05
    margin: float | None = None
    check: str = "all"
    _b: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _running: dict[str, _Running] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        b = (self.b,) if isinstance(self.b, str) else tuple(self.b)
        if not isinstance(self.a, str) or not b or not all(isinstance(v, str) for v in b):
            raise ArgumentError(
                f"'a' must name a variant and 'b' one or a list of others; got a={self.a!r}, "
                f"b={self.b!r}"
            )
        if self.a in b or len(set(b)) != len(b):
            raise ArgumentError(
                f"'b' must name variants other than a={self.a!r}, once each; got {self.b!r}"
            )
        if not (is_number(self.alpha) and 0 < self.alpha < 0.5):
            raise ArgumentError(f"'alpha' must be a number in (0, 0.5); got {self.alpha!r}")
        if self.margin is not None and not (is_number(self.margin) and 0 < self.margin < 1):
            raise ArgumentError(f"'margin' must be None or a number in (0, 1); got {self.margin!r}")
        object.__setattr__(self, "_b", b)

    @property
    def variants(self) -> tuple[str, ...]:
        """The variants the rule compares, baseline first."""
        return (self.a, *self._b)

    @property
    def alpha_each(self) -> float:
        return self.alpha / len(self._b)

    def describe(self) -> dict[str, Any]:
        """The rule as the manifest records it (``Decided.from_record`` reads it back)."""
        return {
            "rule": "decided",
            "a": self.a,
            "b": list(self._b),
            "alpha": self.alpha,
            "alpha_each": self.alpha_each,
            "margin": self.margin,
            "check": self.check,
            "method": METHOD,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Decided:
        """The rule a manifest's record (or an experiment's ``[until]`` table) describes."""
        b = record["b"]
        return cls(
            a=record["a"],
            b=b if isinstance(b, str) else list(b),
            alpha=record.get("alpha", 0.05),
            margin=record.get("margin"),
            check=record.get("check", "all"),
        )

    def differences(self, cases: Sequence[CaseOutcomes]) -> dict[str, np.ndarray]:
        """Per ``b``, the differences of the cases both sides scored, in draw order."""
        out = {}
        for b in self._b:
            d = [
                case_rate(c.samples.get(b, ()), self.check)
                - case_rate(c.samples.get(self.a, ()), self.check)
                for c in cases
            ]
            arr = np.asarray(d, dtype=float)
            out[b] = arr[~np.isnan(arr)]
        return out

    def _advance(self, b: str, d: np.ndarray) -> dict[str, Any]:
        """The last look of the sequence over ``d``, continuing the one kept for ``b``
        when ``d`` extends what it has seen (as the runner's looks do)."""
        running = self._running.get(b)
        seen = running.values if running is not None else []
        if running is None or len(seen) > len(d) or list(d[: len(seen)]) != seen:
            running = self._running[b] = _Running(self.alpha_each, self.margin)
        for value in d[len(running.values) :]:
            running.last = running.add(float(value))
        return running.last

    def look(self, cases: Sequence[CaseOutcomes]) -> Decision:
        """The sequence over ``cases`` (completed, in draw order): stop once every
        comparison is decided."""
        comparisons = []
        for b, d in self.differences(cases).items():
            entry: dict[str, Any] = {"b": b, "cases": len(d)}
            if len(d):
                row = self._advance(b, d)
                entry.update(
                    estimate=round(float(row["estimate"]), 6),
                    low=round(float(row["low"]), 6),
                    high=round(float(row["high"]), 6),
                    verdict=str(row["verdict"]),
                )
            else:
                entry.update(estimate=None, low=-1.0, high=1.0, verdict=CANT_TELL)
            comparisons.append(entry)
        samples = sum(len(s) for c in cases for s in c.samples.values())
        decided = all(c["verdict"] != CANT_TELL for c in comparisons)
        return Decision(
            stop=decided,
            look={"cases": len(cases), "samples": samples, "comparisons": comparisons},
        )


def sequence_frame(data: Run, *, a: str | None, b: Any, check: Any, on: str) -> pd.DataFrame:
    """The confidence sequence of a run made with ``until=Decided``, one row per
    comparison and look, from its samples in the order the run drew its cases."""
    until = _until_record(data)
    rule = Decided.from_record(until["rule"])
    a = rule.a if a is None else a
    bs = list(rule.variants[1:]) if b is None else [b] if isinstance(b, str) else list(b)
    position = {case: i for i, case in enumerate(_looked_at(data, until))}
    parts = []
    for name in bs:
        wide, left, right = _paired(data, a, name, check, on)
        for check_name, rows in wide.groupby("check", sort=False, observed=True):
            rows = rows[rows["paired"]].copy()
            rows["_at"] = rows["case_id"].astype(object).map(position)
            rows = rows.dropna(subset=["_at"]).sort_values("_at", kind="stable")
            if rows.empty:
                continue
            seq = _sequence_of(
                rows["diff"].to_numpy(float),
                alpha=rule.alpha_each,
                margin=rule.margin,
                population=None,
            )
            seq.insert(0, "check", str(check_name))
            seq.insert(0, "b", right)
            seq.insert(0, "a", left)
            seq["samples"] = np.cumsum((rows["n_a"] + rows["n_b"]).to_numpy())
            parts.append(seq)
    if not parts:
        raise ArgumentError(f"no case of this run has scored samples of both {a!r} and {bs!r}")
    return pd.concat(parts, ignore_index=True)


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


def is_sequential(data: Any) -> bool:
    """Whether ``data`` is one run made with ``until=Decided``."""
    return isinstance(data, Run) and len(data.manifests) == 1 and bool(data.manifest.get("until"))


def compare_sequence(data: Run, *, a: str | None, b: Any, check: Any, on: str) -> pd.DataFrame:
    """:func:`evalnb.compare` on a run stopped by its sequence: the last look of the same
    sequence, labelled, never a fixed-n interval on an optionally stopped run."""
    until = _until_record(data)
    seq = sequence_frame(data, a=a, b=b, check=check, on=on)
    last = seq.groupby(["a", "b", "check"], sort=False).tail(1).reset_index(drop=True)
    total = len(until.get("order") or [])
    family = len(Decided.from_record(until["rule"]).variants) - 1
    rows = []
    for row in last.to_dict("records"):
        wide = _rates(data, row["a"], row["b"], row["check"], on)
        looks = len(until.get("looks") or []) or int(row["cases"])
        note = (
            f"stopped early after {looks} of {total} cases ({until.get('stopped')}); the "
            "interval is the anytime-valid sequence at its last look"
            if looks < total
            else f"every one of the {total} cases ran; the interval is the sequence's last look"
        )
        if int(row["cases"]) > looks:
            note += f"; {int(row['cases']) - looks} more finished in flight and are included"
        rows.append(
            {
                "check": row["check"],
                "a": row["a"],
                "b": row["b"],
                "cases": int(row["cases"]),
                "groups": int(row["cases"]),
                "repeats_a": wide["repeats_a"],
                "repeats_b": wide["repeats_b"],
                "rate_a": wide["rate_a"],
                "rate_b": wide["rate_b"],
                "diff": float(row["estimate"]),
                "se": math.nan,
                "df": math.nan,
                "low": float(row["low"]),
                "high": float(row["high"]),
                "level": float(row["level"]),
                "p_value": float(row["p_value"]),
                "p_exact": math.nan,
                "min_p": 0.0,
                "p_adjusted": min(1.0, float(row["p_value"]) * family),
                "correlation": wide["correlation"],
                "note": note,
                "verdict": row["verdict"],
                "mode": "random",
                "method": row["method"],
                "exact_method": "",
                "interval_method": row["method"],
                "unpaired": wide["unpaired"],
                "comparisons": family,
                "adjust": "bonferroni" if family > 1 else "none",
            }
        )
    return pd.DataFrame(rows)


def _paired(data: Run, a: str, b: str, check: Any, on: str) -> tuple[pd.DataFrame, str, str]:
    """Per check and case: both sides' counts, rates and difference, and whether both
    sides scored the case (only then is it paired, as in :func:`evalnb.compare`)."""
    counts = tallies(data, [on, "case_id"], check=check)
    side = counts[on].astype(object).astype(str)
    for name in (a, b):
        if not (side == name).any():
            raise ArgumentError(
                f"'a' and 'b' must be {on} values of the run; got {name!r} (values: "
                f"{sorted(set(side))!r})"
            )
    wide = wide_counts(counts, a, b, by=[], on=on, cluster="case_id")  # compare's own pairing
    wide = wide.assign(check=wide["check"].astype(object), case_id=wide["case_id"].astype(object))
    return wide, a, b


def _rates(data: Run, a: str, b: str, check: str, on: str) -> dict[str, Any]:
    wide, _, _ = _paired(data, a, b, check, on)
    rows = wide[(wide["check"].astype(object) == check)]
    paired = rows[rows["paired"]]
    corr = (
        float(np.corrcoef(paired["rate_a"], paired["rate_b"])[0, 1])
        if len(paired) > 2 and paired["rate_a"].std() > 0 and paired["rate_b"].std() > 0
        else math.nan
    )
    return {
        "repeats_a": float(paired["n_a"].mean()) if len(paired) else math.nan,
        "repeats_b": float(paired["n_b"].mean()) if len(paired) else math.nan,
        "rate_a": float(paired["rate_a"].mean()) if len(paired) else math.nan,
        "rate_b": float(paired["rate_b"].mean()) if len(paired) else math.nan,
        "correlation": corr,
        "unpaired": int((~rows["paired"]).sum()),
    }
