"""promptfoo's select-best and max-score: graded over the variants' answers of each case and
repeat (select-best by promptfoo itself, its grading prompt on the stand-in's judge), one
stored outcome per sample, counted by the analysis like any check; listed, not dropped, when
promptfoo is hidden."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

import evalnb
from evalnb._exceptions import TargetError
from evalnb.checks._promptfoo import find_promptfoo
from evalnb.interop import import_promptfoo
from evalnb.store import diagnose
from evalnb.targets import Function, OpenAIChat

DATA = Path(__file__).parents[1] / "data"
SELECT_BEST = DATA / "promptfoo_features/select_best/promptfooconfig.yaml"

#: The installed promptfoo is seen here (tests/interop/conftest.py hides it elsewhere).
ENGINE = True

needs_promptfoo = pytest.mark.skipif(
    find_promptfoo() is None, reason="promptfoo is not installed (make promptfoo installs it)"
)


def _imported(tmp_path: Path):
    import_promptfoo(SELECT_BEST, tmp_path / "suite")
    return evalnb.load_experiment(tmp_path / "suite/experiment.toml")


def _run_suite(standin, tmp_path: Path, variants, **options) -> None:
    """The imported suite run on the stand-in: ``echo`` answers, ``judge`` grades."""
    evalnb.run(
        tmp_path / "suite/cases.yaml",
        OpenAIChat(standin.base_url, "echo"),
        variants=variants,
        out=tmp_path / "run",
        judge=OpenAIChat(standin.base_url, "judge"),
        progress=False,
        **options,
    )


def _evidence(row) -> dict:
    return json.loads(row["evidence"])


@needs_promptfoo
def test_each_group_has_one_answer_selected_by_promptfoo(standin, tmp_path):
    experiment = _imported(tmp_path)
    record = json.loads((tmp_path / "suite/imported.json").read_text())
    assert not [u for u in record["unsupported"] if u["name"] in ("select-best", "max-score")]
    # max-score is promptfoo's formula applied by evalnb (promptfoo does not export it): listed.
    assert [n["name"] for n in record["fallback"]] == ["max-score"] * 4
    _run_suite(standin, tmp_path, experiment.variants, repeats=2)
    run = evalnb.load(tmp_path / "run")
    checks = run.checks
    best = checks[checks["check"] == "select-best"]
    assert len(best) == len(run.samples) == 4 * 3 * 2
    # Each (case, repeat) group: exactly one winner, and every sample says what was compared.
    winners = best[best["outcome"]].groupby(["case_id", "repeat"]).size()
    assert len(winners) == 8 and set(winners) == {1}
    expected = {"test-1": "prompt-2", "test-2": "prompt-3", "test-3": "prompt-1"}
    for row in best.to_dict("records"):
        evidence = _evidence(row)
        assert evidence["engine"] == find_promptfoo().name
        assert evidence["compared"] == ["prompt-1", "prompt-2", "prompt-3"]
        assert evidence["missing"] == [] and evidence["incomplete"] == []
        assert evidence["judge"][0]["reply"].strip().isdigit()
        if row["case_id"] in expected:
            assert row["outcome"] is (row["variant"] == expected[row["case_id"]])
    # max-score: the highest of the other assertions' scores; test-4's is below its threshold.
    top = checks[checks["check"] == "max-score"]
    assert not top[top["case_id"] == "test-4"]["outcome"].any()
    assert (
        top[top["case_id"] != "test-4"].groupby(["case_id", "repeat"])["outcome"].sum().eq(1).all()
    )
    # The analysis counts it like any check: a rate is the share of groups the variant won.
    rates = evalnb.rates(run, by="variant", check="select-best").set_index("variant")
    assert rates.loc["prompt-1", "k"] == 4 and rates.loc["prompt-1", "n"] == 8
    assert rates["k"].sum() == 8
    assert set(evalnb.compare(run, a="prompt-1", b="prompt-2", check="select-best")["check"]) == {
        "select-best"
    }
    from evalnb.report import report_text

    assert "select-best" in report_text(run, baseline="prompt-1")
    # A resumed complete run grades no group twice.
    _run_suite(standin, tmp_path, experiment.variants, repeats=2, resume=True)
    again = evalnb.load(tmp_path / "run").checks
    assert (again["check"] == "select-best").sum() == len(best)
    # The group results are their own committed part: nothing for the doctor to repair.
    assert list(diagnose(tmp_path / "run")) == []


@needs_promptfoo
def test_incomplete_and_lone_answers_stay_counted_and_unscored(standin, tmp_path):
    """An incomplete sample fails (it stays in the denominator); a group left with one answer
    has nothing to compare: that answer is unscored (null), not a pass."""
    experiment = _imported(tmp_path)
    prompt_of = {v.name: v for v in experiment.variants}

    def answer(request: evalnb.Request) -> str:
        text = request.messages[-1]["content"]
        if request.variant.name == "prompt-3" or (
            request.case.id == "test-1" and request.variant.name == "prompt-2"
        ):
            raise TargetError("the service is down", status="error")
        return text

    assert set(prompt_of) == {"prompt-1", "prompt-2", "prompt-3"}
    evalnb.run(
        tmp_path / "suite/cases.yaml",
        Function(answer),
        variants=experiment.variants,
        out=tmp_path / "run",
        judge=OpenAIChat(standin.base_url, "judge"),
        progress=False,
    )
    best = evalnb.load(tmp_path / "run").checks
    best = best[best["check"] == "select-best"].set_index(["case_id", "variant"])
    lone = best.loc[("test-1", "prompt-1")]
    assert pd_isna(lone["outcome"]) and "no other variant" in lone["detail"]
    failed = best.loc[("test-1", "prompt-2")]
    assert not pd_isna(failed["outcome"]) and not failed["outcome"]
    assert failed["detail"] == "incomplete sample: error"
    assert best.loc[("test-2", "prompt-3"), "detail"] == "incomplete sample: error"
    evidence = json.loads(best.loc[("test-2", "prompt-1"), "evidence"])
    assert evidence["compared"] == ["prompt-1", "prompt-2"]
    assert evidence["incomplete"] == ["prompt-3"]
    # test-2: promptfoo's judge picks among the two answers present, one of them.
    picked = best.xs("test-2", level="case_id")["outcome"]
    assert picked.loc[["prompt-1", "prompt-2"]].sum() == 1


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


@needs_promptfoo
def test_a_rescoring_grades_the_groups_again(standin, tmp_path):
    experiment = _imported(tmp_path)
    judge = OpenAIChat(standin.base_url, "judge")
    _run_suite(standin, tmp_path, experiment.variants)
    first = evalnb.load(tmp_path / "run").checks
    label = evalnb.score(tmp_path / "run", label="again", judge=judge)
    again = evalnb.load(tmp_path / "run", scoring=label).checks
    key = ["case_id", "variant", "check"]
    for name in ("select-best", "max-score"):
        before = first[first["check"] == name].set_index(key)["outcome"].sort_index()
        after = again[again["check"] == name].set_index(key)["outcome"].sort_index()
        assert len(after) == 12 and before.equals(after)


def test_without_promptfoo_they_are_listed_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    result = import_promptfoo(SELECT_BEST, tmp_path / "suite")
    refused = [u for u in result.unsupported if u.name in ("select-best", "max-score")]
    assert [u.name for u in refused] == ["select-best", "max-score"] * 4
    assert all("install promptfoo" in u.reason and "\n" not in u.reason for u in refused)
    record = json.loads((tmp_path / "suite/imported.json").read_text())
    listed = [u["name"] for u in record["unsupported"]]
    assert listed.count("select-best") == 4 and listed.count("max-score") == 4
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert all(c.name not in ("select-best", "max-score") for case in cases for c in case.checks)


@needs_promptfoo
def test_a_group_missing_a_variant_is_graded_over_the_answers_present(standin, tmp_path):
    """A variant a race eliminated (no sample) is not compared, and the evidence says so."""
    from evalnb.checks import acompare, built_cases
    from evalnb.runner._compared import stored_samples
    from evalnb.runner._judging import judging

    experiment = _imported(tmp_path)
    judge = OpenAIChat(standin.base_url, "judge")
    _run_suite(standin, tmp_path, experiment.variants)
    samples = [s for s in stored_samples(tmp_path / "run") if s.variant != "prompt-2"]
    cases = {c.id: c.checks for c in built_cases(evalnb.load_cases(tmp_path / "suite/cases.yaml"))}
    variants = ["prompt-1", "prompt-2", "prompt-3"]

    async def graded():
        async with judging(judge):
            return await acompare({"test-1": cases["test-1"]}, samples, variants)

    results = asyncio.run(graded())
    best = {s.variant: r for s, r in results if r.check == "select-best"}
    assert set(best) == {"prompt-1", "prompt-3"}
    evidence = json.loads(best["prompt-1"].evidence)
    assert evidence["compared"] == ["prompt-1", "prompt-3"] and evidence["missing"] == ["prompt-2"]
    # test-1 asks for the answer that mentions "child": neither does; one is still chosen.
    assert [r.outcome for r in best.values()].count(True) == 1


def test_the_standins_judge_picks_by_content_not_by_order(standin):
    """The stand-in's answer to promptfoo's comparison prompt names the same text whichever
    order the texts come in."""
    import httpx

    def asked(texts: list[str]) -> str:
        pieces = "".join(f'<Text index="{i}">\n{t}\n</Text>\n\n' for i, t in enumerate(texts))
        prompt = (
            "You are comparing multiple pieces of text to see which best fits the following "
            f'criteria: mentions "rain"\n\nHere are the pieces of text:\n\n{pieces}'
            "Output the index of the text that best fits the criteria."
        )
        body = {"model": "judge", "messages": [{"role": "system", "content": prompt}]}
        reply = httpx.post(standin.base_url + "/chat/completions", json=body, timeout=10).json()
        return texts[int(reply["choices"][0]["message"]["content"])]

    texts = ["Sunny all day.", "Rain by noon, then clear.", "Rain."]
    assert asked(texts) == asked(texts[::-1]) == "Rain."


@needs_promptfoo
def test_a_race_grades_each_group_over_the_variants_still_running(standin, tmp_path):
    """until=Best() eliminates variants: a later case's group compares the answers of the
    variants still in the race, and its evidence names the eliminated ones as missing."""
    from tests.runner.test_race import SHOP
    from tests.runner.test_until import shop_cases

    assertion = {"type": "select-best", "value": "the briefest answer"}
    select_best = {"type": "promptfoo", "name": "select-best", "assertion": assertion}
    evalnb.run(
        shop_cases(),
        OpenAIChat(standin.base_url, "shop-v1"),
        variants=SHOP,
        repeats=2,
        out=tmp_path / "r",
        progress=False,
        seed=3,
        concurrency=1,
        until=evalnb.Best(),
        checks=[select_best],
        judge=OpenAIChat(standin.base_url, "judge"),
    )
    run = evalnb.load(tmp_path / "r")
    best = run.checks[run.checks["check"] == "select-best"]
    assert len(best) == len(run.samples)  # one outcome per sample, none for a sample not run
    names = [v.name for v in SHOP]
    missing_seen = False
    for (case_id, repeat), group in best.groupby(["case_id", "repeat"]):
        evidence = [json.loads(e) for e in group["evidence"]]
        ran = sorted(group["variant"])
        assert all(sorted(e["compared"] + e["incomplete"]) == ran for e in evidence)
        assert all(sorted(e["missing"]) == sorted(set(names) - set(ran)) for e in evidence)
        missing_seen = missing_seen or bool(evidence[0]["missing"])
        answered = [e for e in evidence if len(e["compared"]) >= 2]
        if answered:
            assert group["outcome"].sum() == 1, (case_id, repeat)
    assert missing_seen  # the race did eliminate variants before its last case


@needs_promptfoo
def test_a_config_of_one_variant_says_select_best_can_choose_nothing(tmp_path):
    """One prompt and one provider make one variant: nothing to compare, so the import says
    every outcome stays unscored and what to add, in one line per assertion type."""
    config = yaml.safe_load(SELECT_BEST.read_text(encoding="utf-8"))
    config["prompts"] = config["prompts"][:1]
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "promptfooconfig.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = import_promptfoo(folder / "promptfooconfig.yaml", tmp_path / "suite")
    said = {note.name: note.how for note in result.approximated}
    for kind in ("select-best", "max-score"):
        assert said[kind] == (
            "compares the answers of two or more variants, and this config makes 1: every "
            "outcome stays unscored (add a prompt or a provider)"
        )
    assert "every outcome stays unscored" in result.summary()
    # Three prompts: nothing of the kind is said.
    full = import_promptfoo(SELECT_BEST, tmp_path / "three")
    assert not [n for n in full.approximated if n.name in ("select-best", "max-score")]
