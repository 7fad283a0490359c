"""The sample index under the review panel and the explorer, driven with no widget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnb.analysis import load
from evalnb.analysis._tally import OutcomeCode, verdict_outcome
from evalnb.review import SampleFilters, SampleIndex, SearchError
from evalnb.review._index import VERDICT_CODES, verdict_code, verdict_word
from evalnb.store import UNREVIEWED, VERDICTS, save_verdict
from tests.builders import write_run

# case a: v1 passes both repeats, v2 fails repeat 1 (flaky); case b: v1 times out on
# repeat 0, v2 passes; check "judge" only on case a.
ROWS = [
    {"case_id": "a", "variant": "v1", "repeat": 0, "checks": {"ok": True, "judge": True}},
    {"case_id": "a", "variant": "v1", "repeat": 1, "checks": {"ok": True, "judge": False}},
    {"case_id": "a", "variant": "v2", "repeat": 0, "checks": {"ok": True, "judge": True}},
    {
        "case_id": "a",
        "variant": "v2",
        "repeat": 1,
        "checks": {"ok": False, "judge": True},
        "answer": "a refund is late",
    },
    {"case_id": "b", "variant": "v1", "repeat": 0, "status": "timeout", "checks": {"ok": False}},
    {"case_id": "b", "variant": "v1", "repeat": 1, "checks": {"ok": True}},
    {"case_id": "b", "variant": "v2", "repeat": 0, "checks": {"ok": True}},
    {"case_id": "b", "variant": "v2", "repeat": 1, "checks": {"ok": True}},
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", ROWS, cases=[{"id": "a"}, {"id": "b"}])


def at(index: SampleIndex, case: str, variant: str, repeat: int) -> int:
    return index.position({"run_id": "run", "case_id": case, "variant": variant, "repeat": repeat})


def kept(index: SampleIndex, mask: np.ndarray) -> list[tuple[str, str, int]]:
    keys = [index.key(int(p)) for p in np.flatnonzero(mask)]
    return sorted((k["case_id"], k["variant"], k["repeat"]) for k in keys)


def test_one_verdict_encoding_is_the_tallies_outcome() -> None:
    assert VERDICT_CODES == {
        "pass": OutcomeCode.PASS,
        "fail": OutcomeCode.FAIL,
        "needs_review": OutcomeCode.UNSCORED,
    }
    words = pd.Series([*VERDICTS, None])
    assert verdict_outcome(words).tolist() == [*(verdict_code(v) for v in VERDICTS), 3]
    assert (
        verdict_code(UNREVIEWED) == OutcomeCode.ABSENT and verdict_word(OutcomeCode.ABSENT) is None
    )
    assert [verdict_word(verdict_code(v)) for v in VERDICTS] == list(VERDICTS)
    with pytest.raises(ValueError, match=r"'verdict' must be one of 'pass', .*; got 'ok'"):
        verdict_code("ok")


def test_keys_and_positions_go_both_ways(run_dir: Path) -> None:
    index = SampleIndex(load(run_dir))
    for position in range(len(index)):
        assert index.position(index.key(position)) == position
    keys = pd.DataFrame(
        {
            "run_id": ["run", "other", "run", "run"],
            "case_id": ["b", "a", "zzz", "a"],
            "variant": ["v2", "v1", "v1", "v1"],
            "repeat": [1, 0, 0, 7],
        }
    )
    found = index.positions(keys)
    assert found[1:].tolist() == [-1, -1, -1]  # another run, an unknown case, no repeat 7
    assert index.key(int(found[0])) == {
        "run_id": "run",
        "case_id": "b",
        "variant": "v2",
        "repeat": 1,
    }
    with pytest.raises(ValueError, match=r"missing \['run_id'\]"):
        index.positions(keys.drop(columns="run_id"))


def test_outcomes_per_check_and_the_filters_on_them(run_dir: Path) -> None:
    index = SampleIndex(load(run_dir))
    judge = index.outcome("judge")
    assert judge[at(index, "a", "v1", 1)] == OutcomeCode.FAIL
    assert judge[at(index, "b", "v2", 0)] == OutcomeCode.ABSENT  # no judge on case b
    assert index.outcome()[at(index, "a", "v2", 1)] == OutcomeCode.FAIL  # "all": ok fails
    assert kept(index, index.mask(SampleFilters(failing=True), "judge")) == [("a", "v1", 1)]
    assert kept(index, index.mask(SampleFilters(failing=True))) == [  # "all" fails
        ("a", "v1", 1),
        ("a", "v2", 1),
        ("b", "v1", 0),
    ]
    assert kept(index, index.mask(SampleFilters(incomplete=True))) == [("b", "v1", 0)]
    v2, b = index.code("variant", "v2"), index.code("case_id", "b")
    assert kept(index, index.mask(SampleFilters(variant=v2, case=b))) == [
        ("b", "v2", 0),
        ("b", "v2", 1),
    ]
    # flaky: the cell's draws disagree on the check; changed: the case's rate differs
    flaky = index.mask(SampleFilters(flaky=True), "ok")
    assert kept(index, flaky) == [("a", "v2", 0), ("a", "v2", 1), ("b", "v1", 0), ("b", "v1", 1)]
    changed = index.mask(SampleFilters(changed=True), "judge", ("v1", "v2"))
    assert {k[0] for k in kept(index, changed)} == {"a"}  # 1/2 against 2/2; b has no judge
    assert not index.mask(SampleFilters(changed=True), "judge").any()  # no pair: nothing
    with pytest.raises(ValueError, match="'case_id' must be a case of the run; got 'c'"):
        index.code("case_id", "c")


def test_verdict_against_check_and_reviewed_filters(run_dir: Path) -> None:
    index = SampleIndex(load(run_dir), annotator="ana")
    index.save(at(index, "a", "v1", 1), "pass", "fine to me")  # judge says fail
    index.save(at(index, "a", "v1", 0), "pass")  # agrees
    index.save(at(index, "a", "v2", 0), "needs_review")  # never a disagreement
    index.save(at(index, "a", "v2", 1), "fail")  # judge says pass
    disagree = index.mask(SampleFilters(disagree=True), "judge")
    assert kept(index, disagree) == [("a", "v1", 1), ("a", "v2", 1)]
    assert index.mask(SampleFilters(reviewed=True)).sum() == 4
    assert index.mask(SampleFilters(unreviewed=True)).sum() == 4
    assert index.reason(at(index, "a", "v1", 1)) == "fine to me"
    assert index.verdict_by(at(index, "a", "v1", 1)) == "ana"

    index.save(at(index, "a", "v2", 1), UNREVIEWED)  # taken back
    assert index.verdict_of(at(index, "a", "v2", 1)) is None
    assert index.saved_at(at(index, "a", "v2", 1)) is None
    again = SampleIndex(load(run_dir), annotator="ana")  # read back from disk alike
    assert again.verdict.tolist() == index.verdict.tolist()


def test_without_an_annotator_the_latest_of_anyone_counts(run_dir: Path) -> None:
    save_verdict(run_dir, "b", "v2", 0, annotator="ana", verdict="pass")
    save_verdict(run_dir, "b", "v2", 0, annotator="bo", verdict="fail", reason="rude")
    everyone = SampleIndex(load(run_dir))
    sample = at(everyone, "b", "v2", 0)
    assert everyone.verdict_of(sample) == "fail" and everyone.verdict_by(sample) == "bo"
    assert SampleIndex(load(run_dir), annotator="ana").verdict_of(sample) == "pass"
    with pytest.raises(ValueError, match="'annotator' is needed to save a verdict"):
        everyone.save(sample, "pass")


def test_search_words_in_texts_and_labels(run_dir: Path) -> None:
    index = SampleIndex(load(run_dir), annotator="ana")
    index.save(at(index, "b", "v1", 1), "needs_review")
    assert kept(index, index.search("REFUND late")) == [("a", "v2", 1)]  # the answer
    assert not index.search("refund", fields=("case_id", "variant")).any()
    labels = ("case_id", "variant", "repeat", "status", "checks", "verdict")
    assert kept(index, index.search("b v1", fields=labels)) == [("b", "v1", 0), ("b", "v1", 1)]
    assert kept(index, index.search("timeout", fields=labels)) == [("b", "v1", 0)]
    assert kept(index, index.search("b r1 needs", fields=labels)) == [("b", "v1", 1)]
    assert kept(index, index.search("v2 fail", fields=labels)) == [("a", "v2", 1)]
    assert kept(index, index.search(r"ref\w+d", use_regex=True)) == [("a", "v2", 1)]
    assert index.search("", fields=labels).all()
    with pytest.raises(SearchError, match="bad regular expression"):
        index.search("(", use_regex=True)
    with pytest.raises(ValueError, match="'fields' must be among"):
        index.search("a", fields=("reason",))


def test_checks_of_a_sample_and_the_order(run_dir: Path) -> None:
    index = SampleIndex(load(run_dir))
    checks = index.checks_of(at(index, "a", "v1", 1))
    assert sorted((name, outcome) for name, outcome, _ in checks) == [
        ("judge", OutcomeCode.FAIL),
        ("ok", OutcomeCode.PASS),
    ]
    everyone = np.arange(len(index))
    by_repeat = index.order(everyone, ("repeat", "case_id", "variant"))
    keys = [index.key(int(p)) for p in by_repeat]
    assert [(k["repeat"], k["case_id"], k["variant"]) for k in keys] == sorted(
        (r["repeat"], r["case_id"], r["variant"]) for r in ROWS
    )
