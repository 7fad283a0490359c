"""Every reader of an optionally stopped run (``run(..., until=Decided)``) reads its
sequence or refuses in one line; the sequence's unit is the case group when cases have
groups (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import evalnb
from evalnb import ArgumentError, Decided
from evalnb._stopping import CaseOutcomes
from evalnb.analysis._stopped import confidence_sequence
from tests.builders import counts_run


def _answer(request: evalnb.Request) -> str:
    # v2 names every case; v1 only on even repeats of the "easy" half
    case = request.case
    if request.variant.name == "v2" or ("easy" in case.tags and request.repeat % 2 == 0):
        return f"about {case.id}"
    return "no idea"


def _cases(count: int, group_size: int = 1) -> list[evalnb.Case]:
    return [
        evalnb.Case(
            f"c{i:03d}",
            prompt=f"c{i:03d}?",
            checks=[{"type": "contains", "text": f"c{i:03d}"}],
            tags=("easy",) if i % 2 else ("hard",),
            group=f"g{i // group_size:03d}" if group_size > 1 else None,
        )
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stopped") / "r"
    evalnb.run(
        _cases(80),
        evalnb.Function(_answer),
        variants=["v1", "v2"],
        repeats=2,
        out=out,
        progress=False,
        until=Decided(a="v1", b="v2"),
    )
    return out


def test_compare_by_a_case_field_reads_the_sequence_per_group(stopped: Path) -> None:
    run = evalnb.load(stopped)
    manifest = json.loads((stopped / "manifest.json").read_text())
    assert manifest["until"]["stopped"] == "decided" and manifest["until"]["unit"] == "case"
    result = evalnb.compare(run, by="tags").set_index("tags")
    assert sorted(result.index) == ["easy", "hard"]
    assert result["method"].str.contains("betting confidence sequence").all()
    assert result["note"].str.startswith("stopped early after").all()
    sequence = confidence_sequence(run)
    looked = int(sequence["cases"].iloc[-1])
    # the two tags' cases make up the cases looked at, each tag its own sequence
    assert result["cases"].sum() == looked
    # v2 - v1 is 1 on hard cases and 1/2 on easy ones
    assert result.loc["hard", "diff"] == pytest.approx(1.0)
    assert result.loc["easy", "diff"] == pytest.approx(0.5)
    # the gate's split reads the sequence too
    gate = evalnb.gate(run, policy={"no_worse_than": "v1", "split": "dev"})
    assert "anytime-valid sequence" in gate.loc[gate["rule"] == "no_worse_than v1", "detail"].item()


def test_an_argument_the_sequence_cannot_honour_is_refused(stopped: Path) -> None:
    run = evalnb.load(stopped)
    prefix = r"this run was stopped by its sequence \(until=Decided\)"
    for kwargs in (
        {"by": "repeat"},
        {"mode": "fixed"},
        {"adjust": "none"},
        {"source": "verdicts"},
    ):
        with pytest.raises(ArgumentError, match=prefix) as caught:
            evalnb.compare(run, **kwargs)
        assert "\n" not in str(caught.value)
    with pytest.raises(ArgumentError, match=prefix + ": a fixed-n design advice"):
        evalnb.power(run, diff=0.1, advise=True)


def test_a_stopped_run_among_others_is_refused(stopped: Path, tmp_path: Path) -> None:
    """No sequence spans several runs: comparing a stopped run with another run is refused,
    whether they are loaded together or handed to compare_runs."""
    other = counts_run(tmp_path / "other", {"v1": [1, 2], "v2": [2, 2]}, 2)
    prefix = r"this run was stopped by its sequence \(until=Decided\): a fixed-n comparison"
    with pytest.raises(ArgumentError, match=prefix + " across runs"):
        evalnb.compare(evalnb.load([stopped, other]), a="v1", b="v2")
    with pytest.raises(ArgumentError, match=prefix + " of runs"):
        evalnb.compare_runs(other, stopped)


def test_level_is_honoured_not_ignored(stopped: Path) -> None:
    run = evalnb.load(stopped)
    at_95 = evalnb.compare(run).iloc[0]
    at_80 = evalnb.compare(run, level=0.8).iloc[0]
    assert at_95["level"] == 0.95 and at_80["level"] == pytest.approx(0.8)
    assert at_95["low"] < at_80["low"] <= at_80["high"] < at_95["high"]
    assert "at level 0.8, not the rule's 0.95" in at_80["note"]
    assert at_80["diff"] == at_95["diff"]


def test_grouped_cases_make_the_group_the_unit(tmp_path: Path) -> None:
    """4 groups of 15 cases: three groups where v2 names every case, one where it names
    none and v1 every one. Per case the mean difference is +0.5 on 60 cases, which a
    sequence over cases decides at once; over 4 groups nothing can be decided, as
    compare() says with the group as its unit."""

    def answer(request: evalnb.Request) -> str:
        flipped = request.case.group == "g003"
        named = (request.variant.name == "v2") != flipped
        return f"about {request.case.id}" if named else "no idea"

    out = tmp_path / "r"
    evalnb.run(
        _cases(60, group_size=15),
        evalnb.Function(answer),
        variants=["v1", "v2"],
        repeats=1,
        out=out,
        progress=False,
        until=Decided(a="v1", b="v2"),
    )
    until = json.loads((out / "manifest.json").read_text())["until"]
    assert until["unit"] == "group" and until["stopped"] == "cases"
    # the groups are drawn whole, and the rule looks once per whole group
    groups = [int(c[1:]) // 15 for c in until["order"]]
    assert groups == sorted(groups, key=groups.index) and len(set(groups)) == 4
    assert [look["cases"] for look in until["looks"]] == [15, 30, 45, 60]
    assert until["verdicts"][0]["verdict"] == "can't tell yet"
    assert until["verdicts"][0]["groups"] == 4
    row = evalnb.compare(evalnb.load(out)).iloc[0]
    assert (row["cases"], row["groups"]) == (60, 4)
    assert row["verdict"] == "can't tell yet" and row["method"].endswith("over case groups")
    by_case = confidence_sequence(
        np.where(np.array([int(c[1:]) for c in until["order"]]) >= 45, -1.0, 1.0)
    )
    assert by_case["verdict"].iloc[-1] == "B better"  # what treating cases as units says


def test_decided_averages_a_group_before_the_sequence() -> None:
    rule = Decided(a="v1", b="v2")
    passed, failed = ({"ok": True},), ({"ok": False},)
    cases = [
        CaseOutcomes("c1", {"v1": failed, "v2": passed}, "g1"),
        CaseOutcomes("c2", {"v1": passed, "v2": passed}, "g1"),
        CaseOutcomes("c3", {"v1": passed, "v2": failed}, "g2"),
    ]
    assert list(rule.differences(cases)["v2"]) == [0.5, -1.0]
    ungrouped = [CaseOutcomes(c.case_id, c.samples) for c in cases]
    assert list(rule.differences(ungrouped)["v2"]) == [1.0, 0.0, -1.0]
    look = Decided(a="v1", b="v2").look(cases).look["comparisons"][0]
    assert (look["cases"], look["groups"]) == (3, 2)
    grouped = confidence_sequence([1.0, 0.0, -1.0], groups=["g1", "g1", "g2"])
    assert list(grouped["groups"]) == [1, 2] and list(grouped["cases"]) == [2, 3]
    assert list(grouped["estimate"]) == [0.5, -0.25]


def test_an_export_with_intervals_refuses_a_stopped_run(stopped: Path, tmp_path: Path) -> None:
    from evalnb.interop import export_eee

    with pytest.raises(ArgumentError, match=r"a fixed-n interval in an export is not valid"):
        export_eee(stopped, tmp_path / "eee")


def test_the_explorer_and_the_report_read_a_stopped_run_by_its_sequence(
    stopped: Path, tmp_path: Path
) -> None:
    """The explorer's line is compare's: the sequence on the stopped run alone, a refusal
    beside another run; the report says its per-variant rates are fixed-n ones."""
    from evalnb.explorer import ExploreState

    alone = ExploreState(evalnb.load(stopped))
    assert "anytime-valid" in alone.story, alone.story
    other = counts_run(tmp_path / "other", {"v1": [1, 2], "v2": [2, 2]}, 2)
    together = ExploreState(evalnb.load([stopped, other]))
    assert together.story.startswith("no comparison of v2 with v1: "), together.story
    assert "stopped by its sequence" in together.story
    assert "their intervals are fixed-n ones" in evalnb.report_text(evalnb.load(stopped))


def test_rates_name_the_cases_a_stopped_run_never_ran(stopped: Path) -> None:
    import warnings

    run = evalnb.load(stopped)
    looked = len(json.loads((stopped / "manifest.json").read_text())["until"]["looks"])
    assert looked < 80  # the sequence decided before the last case
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evalnb.rates(run, by="variant")
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "have no check" not in said[0], said
    # Samples in flight when the sequence decided are kept: a case or two past the last look.
    ran = run.samples["case_id"].astype(str).nunique()
    assert looked <= ran < 80
    assert said[0].startswith(f"{80 - ran} of the run's cases were not run (a rule stopped")
