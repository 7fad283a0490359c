"""The review panel's side-by-side view of two variants and its sample list, and reasons
that arrive with a key (the front end sends the box's text with each key and click)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalnb.review import Annotator, annotate
from evalnb.review._state import ReviewState
from evalnb.store import latest_verdicts
from tests.builders import ATTACK, shown, tool_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tool_run(tmp_path / "tools")


def key(panel: Annotator, key: str, seq: int, reason: str | None = None, **extra: str) -> None:
    content = {"event": "key", "key": key, "seq": seq, **extra}
    if reason is not None:
        content["reason"] = reason
    panel.key_capture._handle(panel.key_capture, content, [])


def test_compare_pairs_the_same_case_and_repeat(run_dir: Path) -> None:
    panel = annotate(run_dir, "ana", a="v1", b="v2", advance=False)
    order = []
    for _ in range(panel.count):
        order.append(shown(panel))
        panel.next()
    # case, repeat, then v1 before v2: the two samples of a pair are neighbours
    assert order[:4] == [("read", "v1", 0), ("read", "v2", 0), ("read", "v1", 1), ("read", "v2", 1)]
    panel.go(1)
    assert shown(panel) == ("read", "v2", 0)
    assert panel.state.partner.key["variant"] == "v1"
    html = panel.body.value
    # v1 on the left, v2 (shown, outlined) on the right; both answers and their checks
    left, right = html.split("<td class='nb-side")[1:]
    assert "variant <b>v1</b>" in left and "variant <b>v2</b>" in right
    assert "nb-current" in right and "nb-current" not in left
    assert left.count("&lt;b&gt;terms&lt;/b&gt;") == 1 and right.count("&lt;b&gt;terms") == 1
    for side in (left, right):  # the checks above the answer, which scrolls under them
        assert side.index("nb-check-results") < side.index("nb-answer")
    assert ATTACK not in html and "&lt;script&gt;" in html


def test_a_verdict_in_the_pair_is_for_the_shown_sample_and_shows_beside(run_dir: Path) -> None:
    panel = annotate(run_dir, "ana", a="v1", b="v2")
    panel.go(6)  # <i>x</i>, v1, repeat 1
    panel.record("fail")  # advances to its partner
    assert shown(panel) == ("<i>x</i>", "v2", 1)
    left = panel.body.value.split("<td class='nb-side")[1]
    assert "nb-fail'>fail</b>" in left
    latest = latest_verdicts(run_dir)
    assert latest[["case_id", "variant", "repeat", "verdict"]].values.tolist() == [
        ["<i>x</i>", "v1", 1, "fail"]
    ]


def test_compare_names_two_variants_of_the_run(run_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"'a' and 'b' must name two different variants.*'v3'"):
        annotate(run_dir, "ana", a="v1", b="v3")
    with pytest.raises(ValueError, match=r"'a' and 'b' name the two variants.*both or neither"):
        annotate(run_dir, "ana", a="v1")


def test_the_list_searches_sorts_and_jumps(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")
    state.record("pass")
    listed = state.listing()
    assert list(listed.columns) == [
        "at", "case_id", "variant", "repeat", "status", "checks", "verdict"
    ]  # fmt: skip
    assert len(listed) == 8 and listed["verdict"].tolist().count("pass") == 1
    assert state.listing("timeout")[["case_id", "variant", "repeat"]].values.tolist() == [
        ["read", "v2", 1]
    ]
    # failing checks first, then unreviewed first by verdict
    assert state.listing(sort="checks")["checks"].iloc[0] == "fail"
    assert state.listing(sort="verdict")["verdict"].iloc[-1] == "pass"
    assert len(state.listing(limit=3)) == 3
    with pytest.raises(ValueError, match="'sort' must be one of"):
        state.listing(sort="colour")

    panel = annotate(run_dir, "bo", design="queue")
    assert panel.list_box.layout.display == "none"
    panel.press("l")  # the key does what the toggle does
    assert panel.list_button.value and panel.list_box.layout.display == "flex"
    assert len(panel.sample_list.options) == 8
    panel.list_search.value = "TIMEOUT"
    ((label, at),) = panel.sample_list.options
    assert "read" in label and "v2" in label and "timeout" in label
    panel.sample_list.value = at
    assert shown(panel) == ("read", "v2", 1)
    panel.list_search.value = ""
    assert panel.sample_list.value == panel.at


def test_the_list_search_matches_every_word_in_any_order(run_dir: Path) -> None:
    state = ReviewState(run_dir, "ana", advance=False, design="queue")

    def found(search: str) -> list[list[object]]:
        listed = state.listing(search)
        return listed[["case_id", "variant", "repeat"]].values.tolist()

    assert found("v2 read") == [["read", "v2", 0], ["read", "v2", 1]]  # not one substring
    assert found("  READ   v2  R1 ") == [["read", "v2", 1]]  # the repeat as shown: r1
    assert found("read timeout") == [["read", "v2", 1]]
    assert found("read nothing-like-this") == []
    state.record("needs_review")
    assert found("review read v1") == [["read", "v1", 0]]  # the verdict is a word too


def test_the_reason_sent_with_a_key_is_saved_before_the_key(run_dir: Path) -> None:
    panel = annotate(run_dir, "ana", design="queue")
    where = panel.key_capture.shown
    # The box's own update has not come yet: the text comes with the key.
    key(panel, "f", 1, "last characters kept", shown=where)
    latest = latest_verdicts(run_dir)
    assert latest["reason"].tolist() == ["last characters kept"]
    assert panel.reason.value == ""  # the next sample's box
    # ...and the box's late update of that text is not the next sample's draft.
    panel.reason.value = "last characters kept"
    assert panel.reason.value == "" and panel.state.draft == ""
    # A key typed before the front end heard of the move brings no text along.
    key(panel, "j", 2, "stale text", shown=where)
    assert panel.state.draft == ""
    panel.reason.value = "typed here"
    assert panel.state.draft == "typed here"
