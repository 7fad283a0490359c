"""The pass over groups of answers (evalnb.checks.acompare): one result per sample of each
(case, repeat) group, in the run's variant order; incomplete samples fail, a lone answer is
unscored, missing variants are named, and a grader that raises fails its group, saying so."""

from __future__ import annotations

import asyncio
import json

from evalnb._types import Sample
from evalnb.checks import Outcome, acompare, arun_checks


class Longest:
    """A comparing check of the test's own: the longest answer of the group wins."""

    name = "longest"
    type = "longest"
    spec = {"type": "longest"}
    applies = True
    compares = True

    def __init__(self, fail: bool = False):
        self.fail = fail
        self.groups: list[list[str]] = []

    def __call__(self, sample):
        raise AssertionError("a comparing check is never run on one sample")

    async def compare(self, samples, others):
        self.groups.append([s.variant for s in samples])
        if self.fail:
            raise RuntimeError("the grader is gone")
        lengths = [len(s.answer or "") for s in samples]
        won = lengths.index(max(lengths))
        return [
            Outcome(i == won, "" if i == won else "shorter", {"grader": "longest"})
            for i in range(len(samples))
        ]


def _sample(case: str, variant: str, repeat: int, answer: str | None) -> Sample:
    return Sample(
        run_id="r",
        case_id=case,
        variant=variant,
        repeat=repeat,
        order=0,
        started_at="2026-01-01T00:00:00+00:00",
        latency_ms=1.0,
        status="completed" if answer is not None else "error",
        error=None if answer is not None else "down",
        answer=answer,
        prompt="q",
        request=None,
        response=None,
    )


def test_each_group_is_graded_once_in_the_runs_variant_order():
    check = Longest()
    samples = [
        _sample("c1", "b", 0, "a long answer"),
        _sample("c1", "a", 0, "short"),
        _sample("c1", "c", 0, None),
        _sample("c1", "a", 1, "only one"),
        _sample("c2", "a", 0, "x"),  # c2 has no comparing check
    ]
    results = asyncio.run(acompare({"c1": [check], "c2": []}, samples, ["a", "b", "c"]))
    assert check.groups == [["a", "b"]]  # repeat 1 has one answer: nothing to compare
    got = {(s.variant, s.repeat): r for s, r in results}
    assert set(got) == {("a", 0), ("b", 0), ("c", 0), ("a", 1)}
    assert got[("b", 0)].outcome is True and got[("a", 0)].outcome is False
    assert got[("c", 0)].outcome is False and got[("c", 0)].detail == "incomplete sample: error"
    assert got[("a", 1)].outcome is None and "no other variant" in got[("a", 1)].detail
    evidence = json.loads(got[("a", 0)].evidence)
    assert evidence == {
        "grader": "longest",
        "compared": ["a", "b"],
        "missing": [],
        "incomplete": ["c"],
    }
    assert json.loads(got[("a", 1)].evidence)["missing"] == ["b", "c"]
    # A group stored already (a resumed run's) is left alone.
    again = asyncio.run(
        acompare({"c1": [check]}, samples, ["a", "b", "c"], graded=[("c1", 0, "longest")])
    )
    assert [(s.variant, s.repeat) for s, _ in again] == [("a", 1)]


def test_a_grader_that_raises_fails_its_group_saying_so():
    samples = [_sample("c1", "a", 0, "one"), _sample("c1", "b", 0, "two")]
    results = asyncio.run(acompare({"c1": [Longest(fail=True)]}, samples, ["a", "b"]))
    assert [r.outcome for _, r in results] == [False, False]
    assert all(r.detail == "check raised RuntimeError: the grader is gone" for _, r in results)


def test_per_sample_checks_leave_a_comparing_check_to_its_group():
    results = asyncio.run(
        arun_checks([Longest(), {"type": "contains", "text": "one"}], _sample("c1", "a", 0, "one"))
    )
    assert [r.check for r in results] == ["contains"]
