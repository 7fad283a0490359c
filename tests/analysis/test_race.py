"""Best, the rule, fed CaseOutcomes directly: eliminations follow the pairs' betting tests
(the arithmetic of elimination_log_capital, which benchmarks/race.py simulates), cases of
one group enter as one unit, and a look that does not extend the race so far starts it
afresh."""

from __future__ import annotations

import dataclasses

import numpy as np

from evalnb import Best
from evalnb._stopping import CaseOutcomes
from evalnb.analysis._race import _Tests, elimination_log_capital

PASS, FAIL = {"c": True}, {"c": False}


def _case(i: int, outcomes: dict[str, list[bool]]) -> CaseOutcomes:
    return CaseOutcomes(
        f"c{i:03d}", {v: tuple(PASS if o else FAIL for o in draws) for v, draws in outcomes.items()}
    )


@dataclasses.dataclass(frozen=True)
class _Grouped(CaseOutcomes):
    group: str | None = None


def _suite(n: int, seed: int = 0) -> list[CaseOutcomes]:
    rng = np.random.default_rng(seed)
    rates = {"a": 0.9, "b": 0.6, "c": 0.55}
    return [_case(i, {v: list(rng.random(2) < p) for v, p in rates.items()}) for i in range(n)]


def test_eliminations_follow_each_pairs_sequence():
    cases = _suite(200)
    rule = Best(delta=0.05)
    looks = [rule.look(cases[: k + 1]) for k in range(len(cases))]
    gone = {e["variant"]: e for d in looks for e in d.look["eliminated"]}
    assert set(gone) == {"b", "c"} and looks[-1].active == ("a",)
    stop = next(k for k, d in enumerate(looks) if d.stop) + 1
    assert stop == max(e["look"] for e in gone.values())
    # b went at the first case where a's bettor against it, at delta / 2, reached 2 / delta
    d = np.array(
        [
            np.mean([o["c"] for o in c.samples["a"]]) - np.mean([o["c"] for o in c.samples["b"]])
            for c in cases
        ]
    )
    up, _ = elimination_log_capital((d + 1) / 2, 0.5)
    first = int(np.argmax(up >= np.log(2 / 0.05))) + 1
    assert gone["b"]["look"] == first and gone["b"]["by"] == "a"
    # before the stop every look names the three variants' rates and who leads
    assert looks[0].look["alive"] == ["a", "b", "c"] and looks[0].active == ("a", "b", "c")


def test_cases_of_one_group_enter_the_sequences_as_one_unit():
    cases = _suite(12)
    grouped = [_Grouped(c.case_id, c.samples, group=f"g{i // 3}") for i, c in enumerate(cases)]
    look = Best().look(grouped).look
    assert look["cases"] == 12 and look["units"] == 3  # the fourth group is not closed yet
    assert Best().look(cases).look["units"] == 12


def test_a_look_that_does_not_extend_the_race_starts_it_afresh():
    cases = _suite(60)
    rule = Best()
    for k in range(60):
        rule.look(cases[: k + 1])
    again = rule.look(cases[:5]).look
    assert again == Best().look(cases[:5]).look and again["cases"] == 5


def test_with_eps_the_race_stops_once_every_pair_left_is_within_it():
    rng = np.random.default_rng(3)
    cases = [
        _case(i, {"a": list(rng.random(5) < 0.7), "b": list(rng.random(5) < 0.7)})
        for i in range(400)
    ]
    rule = Best(eps=0.3)
    decision = next(d for k in range(400) if (d := rule.look(cases[: k + 1])).stop)
    assert decision.active == ("a", "b") and decision.look["eliminated"] == []
    (b,) = [s for s in decision.look["survivors"] if s["diff"] != 0.0]
    assert b["low"] > -0.3 and b["high"] < 0.3


def test_the_running_tests_are_the_vectorised_arithmetic():
    rng = np.random.default_rng(3)
    d = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=300, p=[0.05, 0.1, 0.4, 0.2, 0.25])
    for eps in (0.0, 0.05):
        up, down = elimination_log_capital((d + 1) / 2, (1 + eps) / 2, (1 - eps) / 2)
        tests = _Tests((1 + eps) / 2, (1 - eps) / 2)
        running = np.array([tests.add(float(v)) for v in d])
        np.testing.assert_allclose(running[:, 0], up, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(running[:, 1], down, rtol=1e-9, atol=1e-9)
    # a mean well above the null grows the "above" bettor, not the "below" one
    assert up[-1] > np.log(40) and down[-1] < 1


def test_under_the_null_a_bettor_rarely_reaches_its_bound():
    # 2,000 sequences of 400 differences with mean 0: the share whose "above" bettor ever
    # reaches 1 / 0.05 stays under 0.05 (Ville), looking after every unit
    rng = np.random.default_rng(4)
    d = rng.choice([-1.0, 0.0, 1.0], size=(2000, 400), p=[0.3, 0.4, 0.3])
    up, down = elimination_log_capital((d + 1) / 2, 0.5)
    assert (up.max(axis=1) >= np.log(20)).mean() <= 0.05
    assert (down.max(axis=1) >= np.log(20)).mean() <= 0.05
