"""The explorer without a browser: the overview against the analysis, paging, filters,
search (a bad and a pathological pattern too), the selection, verdicts and hostile text."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalnb
from evalnb._exceptions import ArgumentError
from evalnb.analysis._story import story
from evalnb.explorer import Explorer, ExploreState, explore
from evalnb.store import latest_verdicts
from tests.builders import ATTACK, counts_run, write_run, write_verdicts

# per-case passes of 4 repeats: case-03 moves most (0 -> 4), case-00 and case-05 do not move
PASSES = {"v1": [4, 2, 1, 0, 3, 2], "v2": [4, 3, 2, 4, 2, 2]}


@pytest.fixture
def counts_dir(tmp_path: Path) -> Path:
    return counts_run(tmp_path / "counts", PASSES, repeats=4)


def send(explorer: Explorer, seq: int, action: str, **fields: Any) -> None:
    """What the page sends for a click."""
    explorer._handle(explorer.view, {"seq": seq, "action": action, **fields}, [])


def test_each_cell_is_the_row_of_rates_and_the_line_is_compares(counts_dir: Path) -> None:
    run = evalnb.load(counts_dir)
    state = ExploreState(run, page_size=50)
    expected = evalnb.rates(run, by=["case_id", "variant"], check="all")
    page = state.grid_page()
    cells = {(r["case_id"], c["variant"]): c for r in page["rows"] for c in r["cells"]}
    for row in expected.to_dict("records"):
        cell = cells[(str(row["case_id"]), str(row["variant"]))]
        assert (cell["k"], cell["n"]) == (row["k"], row["n"])
        assert cell["low"] == pytest.approx(row["low"]) and cell["high"] == pytest.approx(
            row["high"]
        )
        assert cell["flaky"] == (0 < row["k"] < row["n"])
    told = story(evalnb.compare(run, a="v1", b="v2", check="all").to_dict("records")[0])
    assert state.story == told.line("v1", "v2", "all")
    assert [s["variant"] for s in state.suite] == ["v1", "v2"]
    assert "6 cases" in state.suite[0]["text"]
    with pytest.warns(UserWarning, match="fewer than 10 cases"):
        suite = evalnb.suite_rate(run, by="variant", check="all")
    for shown, row in zip(state.suite, suite.to_dict("records"), strict=True):
        low, high = row["low"] * 100, row["high"] * 100
        expected = f"{row['estimate'] * 100:.1f}% (95% CI {low:.1f}% to {high:.1f}%)"
        assert shown["text"].startswith(expected) and shown["text"].endswith(row["method"])


def test_the_case_that_moved_most_comes_first(counts_dir: Path) -> None:
    state = ExploreState(counts_dir)
    rows = state.grid_page()["rows"]
    assert rows[0]["case_id"] == "case-03" and rows[0]["diff"] == pytest.approx(1.0)
    state.set_sort("rate:v1", descending=False)
    assert [r["case_id"] for r in state.grid_page()["rows"]][:2] == ["case-03", "case-02"]
    state.set_sort("case_id", descending=True)
    assert state.grid_page()["rows"][0]["case_id"] == "case-05"
    with pytest.raises(ArgumentError, match=r"'sort' must be one of .*got 'rate:v9'"):
        state.set_sort("rate:v9", descending=False)
    overview = explore(counts_dir).overview
    assert overview["case_id"].tolist()[:2] == ["case-03", "case-01"]  # ties keep case order
    assert overview.loc[0, ["k:v1", "n:v1", "k:v2", "n:v2"]].tolist() == [0, 4, 4, 4]
    assert overview["diff"].tolist()[-2:] == [0.0, 0.0]


def test_the_page_holds_one_page_of_cases_and_of_samples(counts_dir: Path) -> None:
    explorer = explore(counts_dir, page_size=4, sample_page_size=3)
    overview = explorer.view.overview
    assert (len(overview["rows"]), overview["pages"], overview["total"]) == (4, 2, 6)
    send(explorer, 1, "grid_page", page=1)
    assert len(explorer.view.overview["rows"]) == 2 and explorer.view.answered == 1
    send(explorer, 2, "cell", case_id="case-01", variant="v2")
    listing = explorer.view.listing
    assert (listing["total"], listing["pages"], len(listing["samples"])) == (4, 2, 3)
    assert [s["repeat"] for s in listing["samples"]] == [0, 1, 2]
    send(explorer, 3, "list_page", page=1)
    assert [s["repeat"] for s in explorer.view.listing["samples"]] == [3]
    # the selection is the whole list, every page
    assert explorer.selection["repeat"].tolist() == [0, 1, 2, 3]


def test_side_by_side_diffs_each_variant_against_the_first(tmp_path: Path) -> None:
    rows = [
        {"case_id": "c", "variant": v, "repeat": r, "answer": text, "checks": {"ok": True}}
        for v, texts in {
            "v1": ["the order ships on Monday", "same words"],
            "v2": ["the order ships on Friday", "same words"],
        }.items()
        for r, text in enumerate(texts)
    ]
    state = ExploreState(write_run(tmp_path / "side", rows))
    state.open_side("c")
    page = state.list_page()
    first, second = page["rows"][0]["cells"]
    assert "diff" not in first
    assert second["diff"] == [["=", "the order ships on "], ["-", "Monday"], ["+", "Friday"]]
    assert page["rows"][1]["cells"][1]["diff"] == [["=", "same words"]]
    assert page["variants"] == ["v1", "v2"]


def test_different_keeps_the_cases_whose_variants_disagree(counts_dir: Path) -> None:
    explorer = explore(counts_dir)
    explorer.set_filters(different=True)
    shown = {r["case_id"] for r in explorer.view.overview["rows"]}
    assert shown == {"case-01", "case-02", "case-03", "case-04"}


def test_tags_splits_and_groups_filter_the_cases(tmp_path: Path) -> None:
    rows = [{"case_id": c, "variant": "v", "repeat": 0, "checks": {"ok": True}} for c in "abc"]
    cases = [
        {"id": "a", "tags": ["refund"], "split": "dev", "group": "g1"},
        {"id": "b", "tags": ["refund", "tone"], "split": "heldout", "group": "g1"},
        {"id": "c", "tags": [], "split": "heldout", "group": "g2"},
    ]
    explorer = explore(write_run(tmp_path / "tagged", rows, cases=cases))
    assert explorer.view.header["tags"] == ["refund", "tone"]
    assert explorer.view.header["groups"] == ["g1", "g2"]

    def shown() -> list[str]:
        return sorted(r["case_id"] for r in explorer.view.overview["rows"])

    explorer.set_filters(tag="refund")
    assert shown() == ["a", "b"]
    explorer.set_filters(split="heldout")
    assert shown() == ["b"]
    explorer.set_filters(tag="", group="g2")
    assert shown() == ["c"]


def test_sample_filters(tmp_path: Path) -> None:
    rows = [
        {"case_id": "steady", "variant": v, "repeat": r, "checks": {"ok": True}}
        for v in ("v1", "v2")
        for r in range(2)
    ] + [
        {
            "case_id": "moved",
            "variant": v,
            "repeat": r,
            "status": "timeout" if (v, r) == ("v1", 1) else "completed",
            "checks": {"ok": v == "v2" or r == 0},
        }
        for v in ("v1", "v2")
        for r in range(2)
    ]
    run_dir = write_run(tmp_path / "filters", rows)
    write_verdicts(
        run_dir,
        [
            {
                "case_id": "moved",
                "variant": "v2",
                "repeat": 0,
                "annotator": "ana",
                "verdict": "fail",
            },
            {
                "case_id": "steady",
                "variant": "v1",
                "repeat": 0,
                "annotator": "ana",
                "verdict": "pass",
            },
        ],
    )
    state = ExploreState(run_dir)

    def listed(**filters: bool) -> list[tuple[str, str, int]]:
        state.set_sample_filters(state.with_filters(**filters))
        state.open_search("")
        keys = state.selection
        state.set_sample_filters(type(state.sample_filters)())
        return list(zip(keys["case_id"], keys["variant"], keys["repeat"], strict=True))

    assert listed() and len(listed()) == 8
    assert listed(failing=True) == [("moved", "v1", 1)]
    assert listed(incomplete=True) == [("moved", "v1", 1)]
    assert listed(flaky=True) == [("moved", "v1", 0), ("moved", "v1", 1)]
    assert {c for c, _, _ in listed(changed=True)} == {"moved"}
    assert listed(reviewed=True) == [("steady", "v1", 0), ("moved", "v2", 0)]
    assert len(listed(unreviewed=True)) == 6
    assert listed(disagree=True) == [("moved", "v2", 0)]


def test_search_words_regex_and_check_details(tmp_path: Path) -> None:
    answers = [("a", 0, "Refund in 14 days", True), ("a", 1, "refund soon", False)]
    answers.append(("b", 0, "Order 7731 shipped", True))
    rows = [
        {"case_id": c, "variant": "v", "repeat": r, "answer": text, "checks": {"ok": ok}}
        for c, r, text, ok in answers
    ]
    state = ExploreState(write_run(tmp_path / "search", rows))

    def found(query: str, regex: bool = False) -> list[tuple[str, int]]:
        state.open_search(query, use_regex=regex)
        return list(zip(state.selection["case_id"], state.selection["repeat"], strict=True))

    assert found("REFUND") == [("a", 0), ("a", 1)]
    assert found("refund days") == [("a", 0)]
    assert found(r"\d{4}", regex=True) == [("b", 0)]
    assert found("question b") == [("b", 0)]  # the prompt
    assert found("failed") == [("a", 1)]  # a check's detail
    assert found("[unclosed", regex=True) == [] and state.message.startswith(
        "bad regular expression '[unclosed'"
    )
    assert "\n" not in state.message


def test_a_pathological_pattern_stops_within_its_budget(tmp_path: Path) -> None:
    rows = [
        {"case_id": f"c{i}", "variant": "v", "repeat": 0, "answer": "a" * 40 + "!"}
        for i in range(3)
    ]
    explorer = explore(write_run(tmp_path / "slow", rows))
    started = time.monotonic()
    send(explorer, 7, "search", query="(?<!z)(a|aa)+$", regex=True)  # RE2 has no lookbehind
    took = time.monotonic() - started
    assert took < 10, took  # a budget of 1 s; the regex package checks its timeout coarsely
    assert "stopped after 1 s" in explorer.view.message
    assert explorer.view.listing["total"] == 0 and explorer.view.answered == 7
    # without lookaround the pattern runs on RE2 (linear time): it answers, and finds nothing
    started = time.monotonic()
    send(explorer, 8, "search", query="(a|aa)+$", regex=True)
    assert time.monotonic() - started < 2
    assert explorer.view.message == "" and explorer.view.listing["total"] == 0
    send(explorer, 9, "search", query="(a|aa)+!$", regex=True)
    assert explorer.view.listing["total"] == 3


def test_a_bad_message_is_one_line_in_the_widget(counts_dir: Path) -> None:
    explorer = explore(counts_dir)
    send(explorer, 1, "cell", case_id="no-such-case", variant="v1")
    assert explorer.view.message == "'case_id' must be a case of the run; got 'no-such-case'"
    send(explorer, 2, "search", query="(", regex=True)
    assert explorer.view.message.startswith("bad regular expression '('")
    send(explorer, 3, "teleport")
    assert explorer.view.message == "unknown action 'teleport'"
    assert explorer.view.answered == 3


def test_selection_is_what_the_page_lists(counts_dir: Path) -> None:
    explorer = explore(counts_dir, sample_page_size=10)
    explorer.open_cell("case-02", "v1")
    listed = explorer.view.listing["samples"]
    frame = explorer.selection
    assert isinstance(frame, pd.DataFrame)
    keys = [(s["case_id"], s["variant"], s["repeat"]) for s in listed]
    assert list(zip(frame["case_id"], frame["variant"], frame["repeat"], strict=True)) == keys
    assert (
        frame["outcome"].tolist()
        == [s["outcome"] for s in listed]
        == ["pass", "fail", "fail", "fail"]
    )


def test_a_verdict_in_place_is_saved_and_shows_in_the_grid(counts_dir: Path) -> None:
    explorer = explore(counts_dir, annotator="ana")
    explorer.open_cell("case-03", "v1")
    position = explorer.view.listing["samples"][0]["position"]
    send(explorer, 1, "verdict", position=position, verdict="pass")
    latest = latest_verdicts(counts_dir)
    assert latest[["case_id", "variant", "repeat", "verdict"]].values.tolist() == [
        ["case-03", "v1", 0, "pass"]
    ]
    assert explorer.view.listing["samples"][0]["verdict"] == "pass"
    row = next(r for r in explorer.view.overview["rows"] if r["case_id"] == "case-03")
    assert row["cells"][0]["human_pass"] == 1
    assert explorer.selection["verdict"].tolist()[0] == "pass"


def test_without_an_annotator_no_verdict_is_saved(counts_dir: Path) -> None:
    explorer = explore(counts_dir)
    explorer.open_cell("case-03", "v1")
    send(explorer, 1, "verdict", position=0, verdict="pass")
    assert "'annotator' is needed" in explorer.view.message
    assert latest_verdicts(counts_dir).empty


def test_the_review_panel_opens_at_the_sample_and_its_verdict_shows(counts_dir: Path) -> None:
    explorer = explore(counts_dir, annotator="ana")
    explorer.open_cell("case-01", "v2")
    third = explorer.view.listing["samples"][2]
    send(explorer, 1, "review", position=third["position"])
    panel = explorer.panel
    assert panel is not None and explorer.children[1].children == (panel,)
    assert panel.current == {"run_id": "counts", "case_id": "case-01", "variant": "v2", "repeat": 2}
    panel.record("fail")
    assert explorer.view.listing["samples"][2]["verdict"] == "fail"
    row = next(r for r in explorer.view.overview["rows"] if r["case_id"] == "case-01")
    assert row["cells"][1]["human_fail"] == 1


def test_annotate_starts_at_a_sample(counts_dir: Path) -> None:
    key = {"run_id": "counts", "case_id": "case-04", "variant": "v1", "repeat": 3}
    panel = evalnb.annotate(counts_dir, "bo", start=key)  # type: ignore[arg-type]
    assert panel.current == key
    with pytest.raises(ArgumentError, match="'start' must be a sample of the review"):
        evalnb.annotate(counts_dir, "bo", start={**key, "repeat": 9})  # type: ignore[arg-type]


HOSTILE = {
    "script": ATTACK,
    "maths": "costs $x$ and $$y$$ and \\(z\\)",
    "long": "word " * 20_000 + "END",
    "rtl": "\u202eالطلب رقم 7731 \u05e9\u05dc\u05d5\u05dd",
    "nul": "before\x00after",
}


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    rows = [
        {"case_id": f"<b>{name}</b> $x$", "variant": v, "repeat": 0, "answer": text}
        for name, text in HOSTILE.items()
        for v in ("v1", "v2")
    ]
    for row in rows:
        row["checks"] = {"<i>ok</i>": row["variant"] == "v1"}
    return write_run(tmp_path / "hostile", rows)


def test_hostile_text_is_escaped_in_the_static_view(hostile_dir: Path) -> None:
    explorer = explore(hostile_dir)
    page = explorer._repr_mimebundle_()["text/html"]
    assert "<script" not in page and "<img" not in page and "<b>script" not in page
    assert "&lt;b&gt;script&lt;/b&gt; $x$" in page
    assert page.startswith("<div class='evalnb-explore-static tex2jax_ignore mathjax_ignore'>")


def test_hostile_text_reaches_the_page_as_data_clipped(hostile_dir: Path) -> None:
    explorer = explore(hostile_dir, sample_page_size=20)
    explorer.search("")
    samples = {s["case_id"]: s for s in explorer.view.listing["samples"] if s["variant"] == "v1"}
    # The page gets the text itself (and sets it as text); nothing is turned into markup.
    assert samples["<b>script</b> $x$"]["answer"] == ATTACK
    assert samples["<b>nul</b> $x$"]["answer"] == "before\x00after"
    long = samples["<b>long</b> $x$"]
    assert len(long["answer"]) == 20_000 and long["answer_more"] == len(HOSTILE["long"]) - 20_000
    assert explorer.selection["answer"].str.len().max() == len(HOSTILE["long"])
    explorer.side_by_side("<b>long</b> $x$")
    state = json.dumps([explorer.view.header, explorer.view.overview, explorer.view.listing])
    assert len(state.encode()) < 2_000_000


def test_costs_come_from_the_prices(tmp_path: Path) -> None:
    rows = [{"case_id": "a", "variant": "v", "repeat": 0, "checks": {"ok": True}}]
    run_dir = write_run(tmp_path / "priced", rows)
    explorer = explore(run_dir, prices={"m": (1.0, 2.0)})
    explorer.open_cell("a", "v")
    sample = explorer.view.listing["samples"][0]
    # no token counts are stored: the sample is unpriced, its cost is not made up
    assert sample["prompt_tokens"] is None and sample["cost"] in (None, 0.0)


def test_bad_arguments_name_what_is_wrong(counts_dir: Path) -> None:
    with pytest.raises(ArgumentError, match="'check' must be one of 'all', 'ok'; got 'nope'"):
        explore(counts_dir, check="nope")
    with pytest.raises(ArgumentError, match="'b' must be one of 'v1', 'v2'; got 'v3'"):
        explore(counts_dir, b="v3")
    with pytest.raises(ArgumentError, match="'page_size' must be an int from 1 to 500; got 0"):
        explore(counts_dir, page_size=0)
    explorer = explore(counts_dir)
    with pytest.raises(ArgumentError, match="filters must be among"):
        explorer.set_filters(colour="red")


def test_the_word_diff_gives_the_answer_back_and_stays_fast_on_long_answers() -> None:
    from evalnb.explorer._diff import word_diff

    base = "word " * 900 + "the end"
    other = "word " * 400 + "changed " + "word " * 499 + "the end!"
    started = time.monotonic()
    segments = word_diff(base, other)
    assert time.monotonic() - started < 2
    assert "".join(t for op, t in segments if op != "-") == other
    assert "".join(t for op, t in segments if op != "+") == base
    assert any(op == "+" and "changed" in t for op, t in segments)
    # past the tokens compared, the rest is given back unmarked
    longer = word_diff(base * 3, base * 3 + "more")
    assert longer[-1][0] == "?" and longer[-1][1].endswith("the endmore")
    assert "".join(t for op, t in longer if op != "-") == base * 3 + "more"


def test_a_run_of_one_variant_has_no_comparison(tmp_path: Path) -> None:
    rows = [
        {"case_id": c, "variant": "only", "repeat": r, "checks": {"ok": r == 0, "n/a": None}}
        for c in ("a", "b")
        for r in range(3)
    ]
    explorer = explore(write_run(tmp_path / "one", rows))
    assert explorer.view.header["story"] == "one variant: nothing to compare"
    row = explorer.view.overview["rows"][0]
    assert row["diff"] is None and row["cells"][0]["k"] == 1 and row["cells"][0]["n"] == 3
    # a check that never applies: nothing scored, every outcome counted as unscored
    explorer.set_check("n/a")
    cell = explorer.view.overview["rows"][0]["cells"][0]
    assert (cell["k"], cell["n"], cell["unscored"], cell["estimate"]) == (0, 0, 3, None)
    assert "no scored sample" in explorer._repr_mimebundle_()["text/html"]


def test_a_run_stopped_by_its_sequence_is_told_by_that_sequence(tmp_path: Path) -> None:
    import random

    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": f"c{i}", "prompt": f"p{i}", "checks": [{"type": "contains", "text": "yes"}]}
        for i in range(60)
    ]
    cases.write_text("".join(json.dumps(row) + "\n" for row in rows))
    draws = random.Random(0)

    def answer(request: Any) -> str:
        good = 0.9 if request.variant.name == "v2" else 0.3
        return "yes" if draws.random() < good else "no"

    out = tmp_path / "run"
    rule = evalnb.Decided(a="v1", b="v2")
    evalnb.run(
        cases,
        evalnb.Function(answer),
        variants=["v1", "v2"],
        repeats=2,
        out=out,
        progress=False,
        until=rule,
    )
    run = evalnb.load(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few cases: the caution is not what is tested here
        row = evalnb.compare(run, a="v1", b="v2").to_dict("records")[0]
    state = ExploreState(run, a="v1", b="v2")
    # the explorer's line is compare's own on this run: the sequence, never a fixed-n interval
    assert state.story == story(row).line("v1", "v2", "all")
    assert "confidence sequence" in state.story and "stopped early" in state.note


def test_the_explorer_and_the_panel_take_their_shared_options_alike() -> None:
    import inspect

    from evalnb.review import Annotator, ReviewState, annotate

    shared = ["run", "annotator", "check", "a", "b"]
    for widget in (Explorer, Annotator):  # each takes its function's options
        assert list(inspect.signature(widget).parameters) == ["run", "annotator", "options"]
    for function in (explore, ExploreState, annotate, ReviewState):
        parameters = inspect.signature(function).parameters
        names = [name for name in parameters if name in shared]
        assert names == shared, function  # the same names, in the same order
        assert parameters["annotator"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert parameters["check"].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters["check"].default == "all"


def answer_rows(answers: dict[str, dict[str, list[str]]]) -> list[dict[str, Any]]:
    """Samples from answers per case and variant (one per repeat; ``ok`` always passes)."""
    return [
        {"case_id": c, "variant": v, "repeat": r, "answer": text, "checks": {"ok": True}}
        for c, by_variant in answers.items()
        for v, texts in by_variant.items()
        for r, text in enumerate(texts)
    ]


def test_different_answers_keeps_equal_rates_with_other_words(tmp_path: Path) -> None:
    rows = answer_rows(
        {
            "same": {"v1": ["yes", "no"], "v2": ["no ", "yes"]},  # same set, other order
            "spaces": {"v1": ["a b \n"], "v2": [" a b"]},
            "worded": {"v1": ["ships Monday"], "v2": ["ships Friday"]},
            "more": {"v1": ["x", "x"], "v2": ["x", "y"]},
        }
    )
    rows.append({"case_id": "lost", "variant": "v1", "repeat": 0, "answer": "a", "checks": {}})
    rows.append({"case_id": "lost", "variant": "v2", "repeat": 0, "status": "error"})
    rows[-2]["checks"], rows[-1]["checks"] = {"ok": True}, {"ok": False}
    explorer = explore(write_run(tmp_path / "answers", rows))
    # the rates are equal but for the incomplete sample: "variants differ" keeps that one
    explorer.set_filters(different=True)
    assert explorer.overview["case_id"].tolist() == ["lost"]
    explorer.set_filters(different=False, different_answers=True)
    assert sorted(explorer.overview["case_id"]) == ["lost", "more", "worded"]
    assert explorer.view.controls["named"] == ["different answers"]
    assert explorer.view.overview["filters"] == ["different answers"]


def test_filters_are_named_and_reset_goes_back_to_the_overview(counts_dir: Path) -> None:
    explorer = explore(counts_dir, page_size=2)
    first = explorer.view.overview["rows"][0]["case_id"]
    explorer.side_by_side("case-03")
    explorer.set_filters(failing=True, different=True)
    explorer.goto(3)
    assert explorer.view.controls["named"] == ["variants differ", "failing"]
    assert explorer.view.listing["filters"] == ["variants differ", "failing"]
    # failing samples only: half the side-by-side cells are empty, and the page says why
    assert explorer.view.listing["mode"] == "side"
    explorer.reset()
    assert explorer.view.controls["named"] == []
    assert explorer.view.listing == {
        "mode": "none",
        "focus": {},
        "filters": [],
        "samples": [],
        "page": 0,
        "pages": 1,
        "total": 0,
    }
    assert explorer.view.overview["page"] == 0 and explorer.view.overview["total"] == 6
    assert explorer.view.overview["rows"][0]["case_id"] == first
    send(explorer, 1, "filters", filters={"flaky": True})
    send(explorer, 2, "reset")
    assert explorer.view.controls["named"] == [] and explorer.view.answered == 2


def test_goto_a_page_or_a_case_highlights_the_hits(counts_dir: Path) -> None:
    explorer = explore(counts_dir, page_size=2)
    send(explorer, 1, "goto", target="3")
    assert explorer.view.overview["page"] == 2 and not explorer.view.message
    send(explorer, 2, "goto", target="CASE-05")
    page = explorer.view.overview
    order = explorer.overview["case_id"].tolist()
    assert page["page"] == order.index("case-05") // 2
    hits = [r["case_id"] for r in page["rows"] if r["hit"]]
    assert hits == ["case-05"]
    send(explorer, 3, "goto", target="case-0")  # every case: the first one's page
    assert explorer.view.overview["page"] == 0
    assert all(r["hit"] for r in explorer.view.overview["rows"])
    send(explorer, 4, "goto", target="9")
    assert explorer.view.message == "page must be from 1 to 3; got 9"
    send(explorer, 5, "goto", target="nothing")
    assert explorer.view.message == "no case id holds 'nothing'"


def test_each_cell_shows_its_first_answer(tmp_path: Path) -> None:
    long = "word " * 1000
    rows = answer_rows({"c": {"v1": ["first\nline", "second"], "v2": [long, "x"]}})
    explorer = explore(write_run(tmp_path / "first", rows))
    explorer.goto(1)
    (row,) = explorer.view.overview["rows"]
    one, two = row["cells"]
    assert one["answer"] == "first line" and one["answer_tip"] == "first\nline"
    assert len(two["answer"]) == 161 and two["answer"].endswith("…")
    assert len(two["answer_tip"]) == 2001


def test_the_page_asks_for_the_first_answers_after_it_opens(counts_dir: Path) -> None:
    explorer = explore(counts_dir)
    # opening does not wait for the texts; the page's first message brings them
    assert explorer.view.overview["answers"] is False
    assert "answer" not in explorer.view.overview["rows"][0]["cells"][0]
    send(explorer, 1, "grid_page", page=0)
    assert explorer.view.overview["answers"] is True
    assert "answer" in explorer.view.overview["rows"][0]["cells"][0]


def test_side_by_side_marks_words_only_where_answers_are_near(tmp_path: Path) -> None:
    rows = answer_rows(
        {
            "c": {
                "v1": ["the order ships on Monday", "refund issued to your card"],
                "v2": ["the order ships on Friday", "I cannot help with that request at all"],
            }
        }
    )
    explorer = explore(write_run(tmp_path / "near", rows))
    explorer.side_by_side("c")
    near, far = (row["cells"][1] for row in explorer.view.listing["rows"])
    assert near["diff"] == [["=", "the order ships on "], ["-", "Monday"], ["+", "Friday"]]
    assert "diff" not in far and far["similarity"] < 0.5
    send(explorer, 1, "side_view", view="plain")
    assert explorer.view.listing["view"] == "plain"
    assert all("diff" not in row["cells"][1] for row in explorer.view.listing["rows"])
    send(explorer, 2, "side_view", view="fancy")
    assert explorer.view.message == "'view' must be 'diff' or 'plain'; got 'fancy'"


def test_search_hits_are_marked(tmp_path: Path) -> None:
    rows = answer_rows({"c": {"v1": ["Refund sent; the REFUND is final"], "v2": ["no"]}})
    explorer = explore(write_run(tmp_path / "hits", rows))
    explorer.search("refund")
    (sample,) = explorer.view.listing["samples"]
    assert sample["answer_hits"] == [
        [True, "Refund"],
        [False, " sent; the "],
        [True, "REFUND"],
        [False, " is final"],
    ]
    explorer.search(r"is \w+", regex=True)
    (sample,) = explorer.view.listing["samples"]
    assert [p for hit, p in sample["answer_hits"] if hit] == ["is final"]
    assert "".join(p for _, p in sample["answer_hits"]) == sample["answer"]


def test_the_review_button_asks_for_the_annotator(counts_dir: Path) -> None:
    explorer = explore(counts_dir)
    explorer.open_cell("case-01", "v2")
    position = explorer.view.listing["samples"][1]["position"]
    send(explorer, 1, "review", position=position)
    assert explorer.view.message.startswith("'annotator' is needed to review: type your name")
    assert explorer.panel is None
    send(explorer, 2, "review", position=position, annotator=" ana ")
    assert not explorer.view.message
    assert explorer.panel is not None and explorer.view.header["annotator"] == "ana"
    assert explorer.panel.current["repeat"] == 1
    explorer.panel.record("pass")
    assert latest_verdicts(counts_dir)["annotator"].tolist() == ["ana"]
    assert explorer.view.listing["samples"][1]["verdict"] == "pass"
