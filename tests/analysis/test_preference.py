"""evalnb.preferences: the win rate of B over A by case, ties half, both bad apart, an exact
sign test over cases, told as compare tells its verdicts."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import evalnb
from evalnb import ArgumentError
from evalnb.analysis._preference import preference_story
from evalnb.store import PreferenceStore
from tests.builders import write_run


def pair_run(path: Path, cases: int, repeats: int = 2) -> Path:
    rows = [
        {"case_id": f"c{c:02d}", "variant": v, "repeat": r, "answer": f"{v} {c} {r}"}
        for c in range(cases)
        for v in ("v1", "v2")
        for r in range(repeats)
    ]
    return write_run(path, rows)


def save(run: Path, choices: dict[tuple[int, int], str], annotator: str = "ana", a="v1", b="v2"):
    store = PreferenceStore(run)
    for (case, repeat), preference in choices.items():
        store.save(
            f"c{case:02d}", repeat, a=a, b=b, left=a, annotator=annotator, preference=preference
        )


def test_win_rate_is_by_case_ties_half_and_both_bad_apart(tmp_path):
    run = pair_run(tmp_path / "run", cases=4)
    save(
        run,
        {
            (0, 0): "b_better",
            (0, 1): "tie",  # case 0: (1 + 0.5) / 2 = 0.75
            (1, 0): "a_better",
            (1, 1): "both_bad",  # case 1: 0 (both bad left out)
            (2, 0): "b_better",
            (2, 1): "b_better",  # case 2: 1
            (3, 0): "both_bad",
            (3, 1): "both_bad",  # case 3: no preference at all
        },
    )
    row = evalnb.preferences(run, a="v1", b="v2").iloc[0]
    assert row["cases"] == 3 and row["judgements"] == 5 and row["pairs"] == 8
    assert (row["b_better"], row["a_better"], row["ties"], row["both_bad"]) == (3, 1, 1, 3)
    assert row["both_bad_share"] == pytest.approx(3 / 8)
    per_case = np.array([0.75, 0.0, 1.0])
    assert row["win_rate"] == pytest.approx(per_case.mean())
    # t interval across cases on 2 degrees of freedom, cut to [0, 1]
    half = stats.t.ppf(0.975, 2) * per_case.std(ddof=1) / math.sqrt(3)
    assert row["low"] == pytest.approx(max(0, per_case.mean() - half))
    assert row["high"] == pytest.approx(min(1, per_case.mean() + half))
    # net per case: +1, -1, +2 -> 2 cases for B, 1 for A; scipy binomtest(2, 3)
    assert (row["cases_b"], row["cases_a"]) == (2, 1)
    assert row["p_value"] == pytest.approx(stats.binomtest(2, 3, 0.5).pvalue)
    assert row["verdict"] == "can't tell yet" and "fewer than 10 cases" in row["note"]
    assert "cannot reach p < 0.05" in row["note"]


def test_a_clear_preference_is_a_verdict_told_like_compare(tmp_path):
    run = pair_run(tmp_path / "run", cases=12, repeats=1)
    choices = {(c, 0): "b_better" for c in range(11)}
    choices[(11, 0)] = "a_better"
    save(run, choices)
    result = evalnb.preferences(run, a="v1", b="v2")
    row = result.iloc[0]
    # scipy binomtest(11, 12, 0.5): 0.00635
    assert row["p_value"] == pytest.approx(stats.binomtest(11, 12).pvalue)
    assert row["verdict"] == "B better" and row["min_p"] == pytest.approx(2 * 0.5**12)
    line = preference_story(row).line("v1", "v2", "preference")
    assert line.startswith("v2 better · v2 vs v1 on preference: v2 wins 91.7%, 95% CI ")
    assert "p = 0.006 (sign test over cases" in line and "12 cases, 12 choices" in line
    # one p, and each number named by its own method
    assert line.count("p = ") == 1 and "(t across cases) and p = 0.006" in line
    html = result._repr_html_()
    assert "v2 better" in html and "both bad 0" in html
    # Asked the other way round, the same choices tell the same story of the variants.
    turned = evalnb.preferences(run, a="v2", b="v1").iloc[0]
    assert turned["verdict"] == "A better" and turned["win_rate"] == pytest.approx(1 / 12)


def test_a_taste_for_the_left_answer_is_reported(tmp_path):
    run = pair_run(tmp_path / "run", cases=12, repeats=1)
    store = PreferenceStore(run)
    for c in range(12):  # the left answer always chosen; v1 on the left in half the pairs
        left = "v1" if c % 2 else "v2"
        choice = "a_better" if left == "v1" else "b_better"
        store.save(f"c{c:02d}", 0, a="v1", b="v2", left=left, annotator="ana", preference=choice)
    row = evalnb.preferences(run, a="v1", b="v2").iloc[0]
    assert row["left_share"] == 1.0
    assert row["left_p"] == pytest.approx(stats.binomtest(12, 12).pvalue)  # 0.00049
    assert row["verdict"] == "can't tell yet" and row["win_rate"] == pytest.approx(0.5)
    assert "the answer on the left was chosen in 100%" in row["note"]
    assert row["design"] == "random" and "queue order" not in row["note"]
    store.save(
        "c00", 0, a="v1", b="v2", left="v1", annotator="ben", preference="tie", design="queue"
    )
    row = evalnb.preferences(run, a="v1", b="v2").iloc[0]
    assert row["design"] == "mixed" and "taken in queue order" in row["note"]


def test_choices_saved_both_ways_round_and_by_several_reviewers(tmp_path):
    run = pair_run(tmp_path / "run", cases=2, repeats=1)
    save(run, {(0, 0): "b_better"}, annotator="ana")  # v2 better
    save(run, {(0, 0): "a_better", (1, 0): "tie"}, annotator="ben", a="v2", b="v1")  # v2, tie
    row = evalnb.preferences(run, a="v1", b="v2").iloc[0]
    assert (row["b_better"], row["a_better"], row["ties"]) == (2, 0, 1)
    assert row["annotators"] == 2 and row["cases"] == 2
    only = evalnb.preferences(run, a="v1", b="v2", annotator="ben").iloc[0]
    assert (only["b_better"], only["ties"], only["annotators"]) == (1, 1, 1)


def test_no_preferences_say_so_and_bad_arguments_are_named(tmp_path):
    run = pair_run(tmp_path / "run", cases=2, repeats=1)
    row = evalnb.preferences(run, a="v1", b="v2").iloc[0]
    assert row["cases"] == 0 and math.isnan(row["win_rate"]) and math.isnan(row["p_value"])
    assert row["verdict"] == "can't tell yet" and "no preferences saved" in row["note"]
    with pytest.raises(ArgumentError, match="'a' and 'b' must be two different"):
        evalnb.preferences(run, a="v1", b="v1")
    with pytest.raises(ArgumentError, match="'level' must be between 0 and 1"):
        evalnb.preferences(run, a="v1", b="v2", level=95)
