"""Race many variants to the best one: the stopping rule :class:`Best` and what reads its
runs (:func:`race`, and :func:`evalnb.compare` on a race).

The unit is the case, or the case group when cases carry one: a unit's rate on a variant
is the mean of its repeats (of its cases' rates, for a group), and a pair's difference per
unit lies in [-1, 1]. Every pair of variants still in the race has two one-sided betting
tests on its mean per-unit difference ``d`` (mapped to ``x = (d + 1) / 2``): one bettor
stakes on "``a`` is more than ``eps`` better than ``b``", the other on the reverse, each
with capital ``prod(1 + lambda_t (x_t - m))`` at the null ``m`` (``(1 + eps) / 2``, or
``(1 - eps) / 2``) and bets ``lambda_t >= 0`` chosen from the units before ``t`` only
(:func:`elimination_log_capital`: Waudby-Smith & Ramdas' approximate growth-rate-adaptive
bets, "aGRAPA", JRSS-B 2024 section 5.1, hedged over two caps as their diversified
capital). While the null holds the capital is a nonnegative supermartingale, so by
Ville's inequality it ever reaches ``(K - 1) / delta`` (``K`` variants) with probability at
most ``delta / (K - 1)``, however often one looks. A variant is eliminated once a bettor
against it reaches that. The best variant is eliminated only if one of its ``K - 1`` pairs
errs on its side, so the chance that the race ever eliminates it is at most ``delta``
(a union over ``K - 1`` pairs; the successive-elimination scheme of Even-Dar, Mannor &
Mansour, JMLR 2006, with betting tests in place of Hoeffding bounds). The bets grow
towards the log-optimal stake for the difference seen, so a pair that differs is
eliminated at about the rate of a test told the difference; the race's reported intervals
are each pair's anytime-valid confidence sequence (:mod:`evalnb.analysis._sequence`, at
``2 * delta / (K - 1)``), which must hold at every difference at once and so is wider
than the test at one: an eliminated variant's interval may still hold 0.
``benchmarks/race.py`` measures both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb._stopping import CaseOutcomes, Decision
from evalnb.analysis._frames import Run
from evalnb.analysis._paired import wide_counts
from evalnb.analysis._sequence import (
    CANT_TELL,
    EQUIVALENT,
    TRUNCATIONS,
    _Running,
    _sequence_of,
    case_rate,
)
from evalnb.analysis._stopped import UNFIXED, sequence_columns
from evalnb.analysis._tally import tallies

__all__ = ["Best", "elimination_log_capital", "race"]

METHOD = (
    "successive elimination by paired one-sided betting tests over cases (Waudby-Smith & "
    "Ramdas 2024, aGRAPA bets), each at delta / (variants - 1); intervals: each pair's "
    "anytime-valid betting confidence sequence at 2 x delta / (variants - 1)"
)


def elimination_log_capital(
    x: np.ndarray | Sequence[float], m_up: float, m_down: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Log capital after each draw of the bettor on "the mean of ``x`` is above ``m_up``"
    and of the one on "below ``m_down``" (default ``m_up``), ``x`` in [0, 1] along the
    last axis (rows are independent sequences): what :class:`Best` computes for each
    pair, one unit at a time (:class:`_Tests`, the same arithmetic).

    Each bet is ``(mean - m) / (var + (mean - m) ** 2)`` on its side (0 on the other),
    from the running mean and variance of the draws before it (a prior draw of mean 1/2,
    variance 1/4, as the sequences' plug-in bets), capped at each of ``TRUNCATIONS`` of
    the stake that would let the capital reach 0; the capital is shared equally among
    the caps."""
    x = np.asarray(x, dtype=float)
    m_down = m_up if m_down is None else m_down
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mean = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    spread = (0.25 + np.cumsum((x - mean) ** 2, axis=-1)) / (t + 1)
    first = np.ones((*x.shape[:-1], 1))
    before = np.concatenate([0.5 * first, mean[..., :-1]], axis=-1)
    var = np.concatenate([0.25 * first, spread[..., :-1]], axis=-1)
    share = math.log(len(TRUNCATIONS))
    out = []
    for m, sign in ((m_up, 1.0), (m_down, -1.0)):
        edge = sign * (before - m)
        bet = np.maximum(0.0, edge / (var + edge**2))
        room = m if sign > 0 else 1 - m
        logs = [
            np.cumsum(np.log1p(np.minimum(bet, c / room) * sign * (x - m)), axis=-1)
            for c in TRUNCATIONS
        ]
        out.append(np.logaddexp.reduce(np.stack(logs), axis=0) - share)
    return out[0], out[1]


class _Tests:
    """One pair's two elimination bettors, updated one unit at a time: the arithmetic of
    :func:`elimination_log_capital`, O(1) a unit."""

    def __init__(self, m_up: float, m_down: float) -> None:
        self.m = (m_up, m_down)
        self.t, self.total, self.spread_sum = 0, 0.0, 0.25
        self.mean, self.var = 0.5, 0.25
        self.logs = np.zeros((2, len(TRUNCATIONS)))

    def add(self, d: float) -> tuple[float, float]:
        """Take one more unit's difference; the log capital of each bettor after it."""
        x = (min(1.0, max(-1.0, d)) + 1) / 2
        for i, (m, sign) in enumerate(zip(self.m, (1.0, -1.0), strict=True)):
            edge = sign * (self.mean - m)
            bet = max(0.0, edge / (self.var + edge**2))
            room = m if sign > 0 else 1 - m
            for j, c in enumerate(TRUNCATIONS):
                self.logs[i, j] += math.log1p(min(bet, c / room) * sign * (x - m))
        self.t += 1
        self.total += x
        self.mean = (0.5 + self.total) / (self.t + 1)
        self.spread_sum += (x - self.mean) ** 2
        self.var = self.spread_sum / (self.t + 1)
        share = math.log(len(TRUNCATIONS))
        up, down = (float(np.logaddexp.reduce(row)) - share for row in self.logs)
        return up, down


class Best:
    """Race ``variants`` (default: every variant of the run) to the best one.

    ``run(..., until=evalnb.Best())`` takes the cases in a seeded random order and after
    each case eliminates every variant that the paired betting test of another variant
    still in the race finds more than ``eps`` worse, at ``delta / (K - 1)`` a pair under
    continuous looks; eliminated variants draw no samples for later cases. It stops when
    one variant remains (with ``eps``: when every pair left is within ``eps``), or when
    the cases or the budget run out. The chance of eliminating the best variant is at
    most ``delta``.

    >>> evalnb.run(cases, target, variants=[...], until=evalnb.Best(eps=0.02))  # doctest: +SKIP
    """

    def __init__(
        self,
        variants: Sequence[str] | None = None,
        eps: float = 0.0,
        delta: float = 0.05,
        check: str = "all",
    ) -> None:
        names = () if variants is None else tuple(variants)
        if variants is not None and (
            isinstance(variants, str)
            or len(names) < 2
            or not all(isinstance(v, str) for v in names)
            or len(set(names)) != len(names)
        ):
            raise ArgumentError(
                f"'variants' must be None or a list of two or more variant names, once each; "
                f"got {variants!r}"
            )
        if not (is_number(eps) and 0 <= eps < 1):
            raise ArgumentError(f"'eps' must be a number in [0, 1); got {eps!r}")
        if not (is_number(delta) and 0 < delta < 0.5):
            raise ArgumentError(f"'delta' must be a number in (0, 0.5); got {delta!r}")
        if not isinstance(check, str):
            raise ArgumentError(f"'check' must be a check name or 'all'; got {check!r}")
        self._names, self.eps, self.delta, self.check = names, float(eps), float(delta), check
        self._state: _Race | None = None

    def __repr__(self) -> str:
        names = list(self._names) if self._names else None
        return f"Best(variants={names!r}, eps={self.eps!r}, delta={self.delta!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Best) and self.describe() == other.describe()

    def __hash__(self) -> int:
        return hash((self._names, self.eps, self.delta, self.check))

    @property
    def variants(self) -> tuple[str, ...]:
        """The variants raced; empty: every variant of the run."""
        return self._names

    def describe(self) -> dict[str, Any]:
        """The rule as the manifest records it (``Best.from_record`` reads it back)."""
        return {
            "rule": "best",
            "variants": list(self._names) or None,
            "eps": self.eps,
            "delta": self.delta,
            "check": self.check,
            "method": METHOD,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Best:
        """The rule a manifest's record (or an experiment's ``[until]`` table) describes."""
        return cls(
            variants=record.get("variants"),
            eps=record.get("eps", 0.0),
            delta=record.get("delta", 0.05),
            check=record.get("check", "all"),
        )

    def look(self, cases: Sequence[CaseOutcomes]) -> Decision:
        """The race after ``cases`` (completed, in draw order)."""
        state = self._state
        # The race so far continues only when these cases extend the ones it has seen
        # (as the runner's looks do); any other call starts it afresh.
        if state is None or list(cases[: len(state.seen)]) != state.seen:
            names = self._names or tuple(sorted({v for c in cases for v in c.samples}))
            state = self._state = _Race(names, self.eps, self.delta, self.check)
        state.take(cases[len(state.seen) :])
        return state.decision(cases)


class _Race:
    """One race's running state: the pairs' sequences, who is left, who went when."""

    def __init__(self, names: tuple[str, ...], eps: float, delta: float, check: str) -> None:
        self.names, self.eps, self.check = names, eps, check
        self.alpha = 2 * delta / max(1, len(names) - 1)
        self.limit = math.log(2 / self.alpha)
        self.pairs = {
            (a, b): _Running(self.alpha, eps or None)
            for i, a in enumerate(names)
            for b in names[i + 1 :]
        }
        self.tests = {pair: _Tests((1 + eps) / 2, (1 - eps) / 2) for pair in self.pairs}
        self.alive = list(names)
        self.seen: list[CaseOutcomes] = []
        self.unit: tuple[str | None, list[CaseOutcomes]] = (None, [])
        self.rates: dict[str, list[float]] = {v: [] for v in names}
        self.units = 0
        self.eliminated: list[dict[str, Any]] = []

    def take(self, new: Sequence[CaseOutcomes]) -> None:
        """Take newly looked-at cases; a unit enters the sequences once it is whole (a
        case, or a run of consecutive cases of one group)."""
        for case in new:
            self.seen.append(case)
            # pooled by group when the cases carry one; else each case is its own unit
            key = getattr(case, "group", None) or None
            if self.unit[1] and self.unit[0] != key:
                self._enter(self.unit[1])
                self.unit = (None, [])
            self.unit = (key, [*self.unit[1], case])
            if key is None:
                self._enter(self.unit[1])
                self.unit = (None, [])

    def _enter(self, unit: Sequence[CaseOutcomes]) -> None:
        rate = {}
        for name in self.alive:
            values = [case_rate(c.samples.get(name, ()), self.check) for c in unit]
            values = [v for v in values if not math.isnan(v)]
            rate[name] = float(np.mean(values)) if values else math.nan
            if values:
                self.rates[name].append(rate[name])
        self.units += 1
        out: dict[str, str] = {}
        for (a, b), running in self.pairs.items():
            if a not in rate or b not in rate or math.isnan(rate[a] - rate[b]):
                continue
            running.last = running.add(rate[a] - rate[b])
            up, down = self.tests[(a, b)].add(rate[a] - rate[b])
            if up >= self.limit:
                out.setdefault(b, a)
            if down >= self.limit:
                out.setdefault(a, b)
        leader = self.leader()
        for name in [n for n in self.alive if n in out and n != leader]:
            self.alive.remove(name)
            self.eliminated.append(
                {
                    "variant": name,
                    "by": out[name],
                    "look": len(self.seen),
                    "units": self.units,
                    "rate": _rounded(self._mean(name)),
                }
            )

    def _mean(self, name: str) -> float:
        values = self.rates[name]
        return float(np.mean(values)) if values else math.nan

    def leader(self) -> str:
        """The variant left with the highest mean rate per unit (the first named on ties)."""
        means = [(self._mean(n), -i) for i, n in enumerate(self.alive)]
        best = max(range(len(means)), key=lambda i: (np.nan_to_num(means[i][0], nan=-1), -i))
        return self.alive[best]

    def against_leader(self) -> list[dict[str, Any]]:
        """Each variant left: its rate, and the sequence of its difference from the leader."""
        leader = self.leader()
        rows = []
        for name in self.alive:
            row: dict[str, Any] = {"variant": name, "rate": _rounded(self._mean(name))}
            if name != leader:
                pair = (leader, name) if (leader, name) in self.pairs else (name, leader)
                last = self.pairs[pair].last
                low, high = (last.get("low", -1.0), last.get("high", 1.0)) if last else (-1, 1)
                sign = -1 if pair[0] == leader else 1  # variant - leader
                low, high = sorted((sign * float(low), sign * float(high)))
                row.update(diff=_rounded(self._mean(name) - self._mean(leader)))
                row.update(low=_rounded(low), high=_rounded(high))
            else:
                row.update(diff=0.0, low=0.0, high=0.0)
            rows.append(row)
        return rows

    def settled(self) -> bool:
        """One variant left, or (with ``eps``) every pair left within it."""
        if len(self.alive) <= 1:
            return True
        if not self.eps:
            return False
        left = set(self.alive)
        return all(
            run.last.get("verdict") == EQUIVALENT
            for (a, b), run in self.pairs.items()
            if a in left and b in left
        )

    def decision(self, cases: Sequence[CaseOutcomes]) -> Decision:
        samples = sum(len(s) for c in cases for s in c.samples.values())
        stop = self.settled()
        look = {
            "cases": len(cases),
            "units": self.units,
            "samples": samples,
            "alive": list(self.alive),
            "leader": self.leader(),
            "eliminated": [e for e in self.eliminated if e["look"] == len(cases)],
            "alpha_pair": self.alpha,
            "survivors": self.against_leader(),
        }
        return Decision(stop=stop, look=look, active=tuple(self.alive))


def _rounded(value: float) -> float | None:
    return None if math.isnan(value) else round(float(value), 6)


def is_race(data: Any) -> bool:
    """Whether ``data`` is one run made with ``until=Best``."""
    if not (isinstance(data, Run) and len(data.manifests) == 1):
        return False
    return ((data.manifest.get("until") or {}).get("rule") or {}).get("rule") == "best"


def race_record(data: Run) -> dict[str, Any]:
    """The manifest's record of a race, or an error saying the run was not one."""
    until = data.manifest.get("until") if len(data.manifests) == 1 else None
    if not until or (until.get("rule") or {}).get("rule") != "best":
        raise ArgumentError("this run was not made with until=evalnb.Best(...): it has no race")
    return dict(until)


def race(data: Run) -> pd.DataFrame:
    """The race of a run made with ``until=evalnb.Best(...)``, one row per variant.

    Returns:
        DataFrame, one row per variant raced (those left first, then the eliminated in
        reverse order of elimination), columns ``variant``; ``status`` ("best" when one
        is left; with several, "leading" for the highest rate and "left"; "eliminated");
        ``eliminated_at`` (the cases looked at when it went; NaN for those left); ``by``
        (the variant whose sequence eliminated it); ``cases`` (cases it ran); ``samples``
        (its samples); ``rate`` (mean per-unit rate, at its elimination for those
        eliminated); ``diff``, ``low``, ``high`` (for those left: the sequence of its
        difference from the leader at the last look; NaN for the rest); ``level`` (1 -
        the pair's alpha); ``looks``; ``stopped``; ``method``.

    >>> evalnb.race(evalnb.load("runs/race"))  # doctest: +SKIP
    """
    until = race_record(data)
    looks = until.get("looks") or []
    counts = data.table("samples", ["case_id", "variant"]).astype(object)
    per = counts.groupby("variant").agg(cases=("case_id", "nunique"), samples=("case_id", "size"))
    last = looks[-1] if looks else {}
    alpha = float(last.get("alpha_pair", math.nan))
    survivors = {r["variant"]: r for r in _last_survivors(looks)}
    rows = []
    for name in last.get("alive", []):
        row = survivors.get(name, {})
        alone, leads = len(last["alive"]) == 1, name == last.get("leader")
        status = "best" if alone else "leading" if leads else "left"
        rows.append({"variant": name, "status": status, "eliminated_at": math.nan, "by": ""})
        rows[-1].update({k: row.get(k) for k in ("rate", "diff", "low", "high")})
    gone = [e for look in looks for e in look.get("eliminated", [])]
    for e in reversed(gone):
        rows.append(
            {
                "variant": e["variant"],
                "status": "eliminated",
                "eliminated_at": e["look"],
                "by": e["by"],
                "rate": e.get("rate"),
                "diff": math.nan,
                "low": math.nan,
                "high": math.nan,
            }
        )
    frame = pd.DataFrame(rows)
    frame["cases"] = [int(per["cases"].get(v, 0)) for v in frame["variant"]]
    frame["samples"] = [int(per["samples"].get(v, 0)) for v in frame["variant"]]
    frame = frame.astype({c: float for c in ("rate", "diff", "low", "high", "eliminated_at")})
    frame["level"] = 1 - alpha
    frame["looks"] = len(looks)
    frame["stopped"] = until.get("stopped")
    frame["method"] = METHOD
    order = ["variant", "status", "eliminated_at", "by", "cases", "samples", "rate"]
    return frame[[*order, "diff", "low", "high", "level", "looks", "stopped", "method"]]


def _last_survivors(looks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    for look in reversed(looks):
        if "survivors" in look:
            return list(look["survivors"])
    return []


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


def compare_race(data: Run, *, a: str | None, b: Any, check: Any, on: str) -> pd.DataFrame:
    """:func:`evalnb.compare` on a race: each pair's own sequence (at the race's
    ``alpha`` per pair) over the cases looked at that both ran, in the drawn order, at
    its last point; ``a`` defaults to the best (or leading) variant, ``b`` to the others."""
    until = race_record(data)
    table = race(data)
    a = str(table["variant"].iloc[0]) if a is None else a
    others = [v for v in table["variant"] if v != a]
    bs = others if b is None else [b] if isinstance(b, str) else list(b)
    rule = Best.from_record(until["rule"])
    looks = until.get("looks") or []
    looked = list(until.get("order") or [])[: int(looks[-1]["cases"]) if looks else 0]
    position = {case: i for i, case in enumerate(looked)}
    alpha = float(table["level"].iloc[0])
    alpha = 1 - alpha if alpha == alpha else rule.delta
    gone = table.set_index("variant")
    rows = []
    for name in bs:
        wide, left, right = _paired(data, a, name, check, on)
        for check_name, part in wide.groupby("check", sort=False, observed=True):
            part = part[part["paired"]].copy()
            part["_at"] = part["case_id"].astype(object).map(position)
            part = part.dropna(subset=["_at"]).sort_values("_at", kind="stable")
            if part.empty:
                continue
            seq = _sequence_of(
                part["diff"].to_numpy(float), alpha=alpha, margin=rule.eps or None, population=None
            ).iloc[-1]
            note = _race_note(gone, a, name, len(looked), len(until.get("order") or []), until)
            family = len(table) - 1
            rows.append(_race_row(data, left, right, str(check_name), on, seq, note, family))
    if not rows:
        raise ArgumentError(f"no case of this race has scored samples of both {a!r} and {bs!r}")
    return pd.DataFrame(rows)


def _race_note(
    table: pd.DataFrame, a: str, b: str, looked: int, total: int, until: Mapping[str, Any]
) -> str:
    told = f"a race of {len(table)} variants that stopped after {looked} of {total} cases"
    told += f" ({until.get('stopped')}); the interval is the pair's anytime-valid sequence"
    gone = False
    for name in (a, b):
        if name in table.index and table.loc[name, "status"] == "eliminated":
            at, by = table.loc[name, "eliminated_at"], table.loc[name, "by"]
            told += f"; {name} was eliminated after {int(at)} cases by {by}"
            gone = True
    if gone:
        told += (
            " (by the pair's betting test at that difference; the sequence holds at every "
            "difference at once, so it is wider and may still hold 0)"
        )
    return told


def _race_row(
    data: Run, a: str, b: str, check: str, on: str, seq: pd.Series, note: str, family: int
) -> dict[str, Any]:
    wide = _rates(data, a, b, check, on)
    verdict = str(seq["verdict"])
    return {
        "check": check,
        "a": a,
        "b": b,
        "cases": int(seq["cases"]),
        "groups": int(seq["cases"]),
        "repeats_a": wide["repeats_a"],
        "repeats_b": wide["repeats_b"],
        "rate_a": wide["rate_a"],
        "rate_b": wide["rate_b"],
        **sequence_columns(seq),
        "p_adjusted": min(1.0, float(seq["p_value"]) * family / 2),
        "correlation": wide["correlation"],
        "note": note,
        "verdict": verdict if verdict != EQUIVALENT else CANT_TELL,
        "mode": "random",
        "method": METHOD,
        "exact_method": "",
        "interval_method": METHOD,
        **UNFIXED,
        "unpaired": wide["unpaired"],
        "comparisons": family,
        "adjust": "bonferroni (each pair at 2 x delta / (variants - 1); p_adjusted against delta)",
    }
