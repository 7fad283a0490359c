"""The review panel, driven from Python as a reviewer would drive it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnb.analysis import calibrate, load, rates
from evalnb.review import Annotator, annotate
from evalnb.review._panel import KEYS
from evalnb.store import VerdictStore, latest_verdicts, verdict_history
from tests.builders import shown, tool_run, write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tool_run(tmp_path / "tools")


def visible_html(panel: Annotator) -> str:
    return "".join(
        w.value
        for w in (panel.header, panel.body, panel.earlier, panel.status, panel.progress_label)
    )


def test_the_panel_shows_everything_a_reviewer_needs(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    assert isinstance(panel, Annotator)
    assert shown(panel) == ("read", "v1", 0)
    assert panel.count == 8 and panel.reviewed == 0
    header, body = panel.header.value, panel.body.value
    assert ">read<" in header and ">v1<" in header and ">0<" in header and "completed" in header
    assert "prompt &lt;u&gt;read&lt;/u&gt;" in body
    assert "Pass if notes.txt was read &lt;and&gt; the project named." in body
    assert "read_note({&quot;path&quot;: &quot;&lt;notes&gt;.txt&quot;})" in body
    assert "requested by the model" in body and "executed by the application" in body
    assert "more characters" in body  # a long tool result is cut
    assert "&lt;b&gt;terms&lt;/b&gt;" in body and "&lt;i&gt;why&lt;/i&gt;" in body
    assert "unscored" in body
    assert "0</b> of 8 reviewed" in panel.progress_label.value
    assert "Not reviewed by ana yet" in panel.earlier.value


def test_every_model_and_case_string_is_escaped_before_the_front_end(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="<b>ana</b>", advance=False, design="queue")
    seen = []
    for at in range(panel.count):
        panel.go(at)
        panel.reason.value = "<script>alert(1)</script>"
        panel.record("fail")
        seen.append(visible_html(panel) + panel.children[0].value)
    page = "".join(seen)
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # no tag of the model's or the case's survives: only the panel's own markup
    for tag in ("<script", "<img", "<i>", "<u>", "<notes>", "<and>", "<b>took", "<b>ana"):
        assert tag not in page, tag
    assert "&lt;b&gt;took&lt;/b&gt; too long" in page  # the error of the timeout
    assert "&lt;i&gt;x&lt;/i&gt;" in page  # the case id
    # the dropdowns get the case id as a label, which ipywidgets renders as text
    assert "<i>x</i>" in [label for label, _ in panel.case_filter.options]


def test_a_click_saves_at_once_and_a_new_panel_resumes(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    panel.reason.value = "  answer is markup, not a project name "
    panel.fail_button.click()
    saved = latest_verdicts(run_dir)
    assert saved[
        ["case_id", "variant", "repeat", "annotator", "verdict", "reason"]
    ].values.tolist() == [["read", "v1", 0, "ana", "fail", "answer is markup, not a project name"]]
    assert panel.fail_button.description == "Fail ✓"
    assert "Your verdict: <b class='nb-fail'>fail</b>" in panel.earlier.value
    assert "1</b> of 8 reviewed" in panel.progress_label.value
    panel.next_button.click()
    panel.pass_button.click()
    panel.next_button.click()
    panel.needs_review_button.click()
    assert panel.reviewed == 3

    again = annotate(run_dir, annotator="ana", advance=False, design="queue")
    assert shown(again) == ("read", "v2", 1)  # the first one without a verdict
    assert again.reviewed == 3
    again.previous_button.click()
    assert shown(again) == ("read", "v2", 0)
    assert again.needs_review_button.description == "Needs review ✓"
    again.previous_button.click()
    again.previous_button.click()
    assert again.reason.value == "answer is markup, not a project name"
    assert "fail" in again.earlier.value and again.previous_button.disabled


def test_changing_a_verdict_keeps_the_history_and_counts_once(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    panel.pass_button.click()
    panel.reason.value = "on second reading, no"
    assert "reason not saved" in panel.unsaved.value
    panel.fail_button.click()
    assert panel.unsaved.value == ""
    assert panel.reviewed == 1
    assert len(verdict_history(run_dir)) == 2
    assert latest_verdicts(run_dir)["verdict"].tolist() == ["fail"]
    assert panel.pass_button.description == "Pass"


def test_navigation_and_next_unreviewed_wraps_round(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    assert panel.previous_button.disabled and not panel.next_button.disabled
    panel.go(7)
    assert panel.next_button.disabled
    panel.next()
    assert shown(panel) == ("<i>x</i>", "v2", 1)
    panel.record("pass")
    panel.next_unreviewed_button.click()
    assert shown(panel) == ("read", "v1", 0)
    for _ in range(7):
        panel.record("pass")
        panel.next_unreviewed()
    assert panel.reviewed == 8
    panel.next_unreviewed()
    assert "Every sample in this selection has a verdict" in panel.status.value
    with pytest.raises(ValueError, match=r"'at' must be between 0 and 7; got 8"):
        panel.go(8)


def test_advance_moves_on_after_a_verdict(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=True, design="queue")
    panel.fail_button.click()
    assert shown(panel) == ("read", "v1", 1)
    assert panel.reason.value == ""
    # The confirmation stays after moving on, naming the sample left behind.
    assert "Saved <b>fail</b> for read · v1 · repeat 0." in panel.status.value


def test_filters(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    panel.variant_filter.value = 1  # v2
    assert panel.count == 4 and shown(panel)[1] == "v2"
    panel.case_filter.value = dict(panel.case_filter.options)["read"]
    assert panel.count == 2
    panel.variant_filter.value = -1
    panel.case_filter.value = -1
    panel.failing_only.value = True  # "<b>terms</b>" fails on repeat 1
    assert panel.count == 4
    assert {shown(panel)[2]} == {1}
    panel.record("pass")  # the check fails, the person passes: a disagreement
    panel.failing_only.value = False
    panel.disagreements_only.value = True
    assert panel.count == 1
    panel.disagreements_only.value = False
    panel.unreviewed_only.value = True
    assert panel.count == 7
    panel.record("fail")
    # the selection stays put until a filter changes, so a verdict can be revisited...
    assert panel.count == 7 and panel.reviewed == 1
    panel.unreviewed_only.value = False
    panel.unreviewed_only.value = True
    assert panel.count == 6  # ...and then reviewed samples drop out
    panel.variant_filter.value = 0
    panel.case_filter.value = dict(panel.case_filter.options)["read"]
    panel.failing_only.value = True
    panel.unreviewed_only.value = False
    assert panel.count == 1


def test_an_empty_selection_disables_the_verdicts(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    for _ in range(8):
        panel.record("pass")
        panel.next()
    panel.unreviewed_only.value = True
    assert panel.count == 0 and panel.current is None
    assert panel.pass_button.disabled and panel.fail_button.disabled
    assert "No samples match" in panel.header.value
    panel.record("fail")
    assert "No sample is shown" in panel.status.value
    assert len(verdict_history(run_dir)) == 8


def test_the_check_compared_in_the_disagreement_filter_can_be_chosen(run_dir: Path) -> None:
    VerdictStore(run_dir).save("read", "v1", 0, annotator="ana", verdict="fail")
    # "<b>terms</b>" passes on repeat 0, so fail disagrees with it...
    panel = annotate(run_dir, annotator="ana", check="<b>terms</b>", design="queue")
    panel.disagreements_only.value = True
    assert panel.count == 1
    # ...while "unscored" never scores, so nothing can disagree with it
    panel = annotate(run_dir, annotator="ana", check="unscored", design="queue")
    panel.disagreements_only.value = True
    assert panel.count == 0


def test_keys_do_what_the_buttons_do(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    panel.press("f")
    assert latest_verdicts(run_dir)["verdict"].tolist() == ["fail"]
    panel.press("j")
    assert shown(panel) == ("read", "v1", 1)
    panel.press("P")
    panel.press("r")
    panel.press("ArrowLeft")
    assert shown(panel) == ("read", "v1", 0)
    panel.press("u")
    assert shown(panel) == ("read", "v2", 0)
    panel.press("Escape")
    assert panel.status.value == ""
    panel.press("x")
    assert "Key x does nothing" in panel.status.value
    assert latest_verdicts(run_dir)["verdict"].tolist() == ["fail", "needs_review"]


def test_a_key_opens_the_reason_box_and_one_the_list_and_the_help_names_them(
    run_dir: Path,
) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    assert KEYS["e"] == "reason box" and KEYS["l"] == "sample list"
    assert len(KEYS) == 10 and not {"e", "l"} & {"ArrowLeft", "ArrowRight", "Escape"}
    hint = panel.key_capture.hint
    for key, label in KEYS.items():
        assert f"{key} {label}" in hint
    assert "Esc leaves a box" in hint
    # The page does these two itself, at once; from Python they ask the front end.
    assert panel.key_capture.local == {"e": "reason", "l": "list"}
    sent: list[object] = []
    panel.reason.send = sent.append  # type: ignore[method-assign]
    panel.press("e")
    assert sent == [{"do": "focus"}]
    panel.press("L")
    assert panel.list_button.value and panel.list_box.layout.display == "flex"
    panel.press("l")
    assert not panel.list_button.value and panel.list_box.layout.display == "none"
    assert panel.status.value == "" and latest_verdicts(run_dir).empty


def test_the_checks_sit_beside_the_answer_outside_its_scroll_box(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", advance=False, design="queue")
    read, judge = panel.body.value.split("<div class='nb-judge'>")
    assert "class='nb-read'" in read and "Answer" in read and "Prompt as sent" in read
    assert "nb-check-results" not in read
    assert "nb-check-results" in judge and "Review instruction" in judge
    assert "height:24em; overflow:auto" in panel.children[0].value  # the box that scrolls


def test_keys_from_the_front_end_are_handled_in_order_and_answered(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", design="queue")
    answers: list[object] = []
    panel.key_capture.send = answers.append  # type: ignore[method-assign]
    for seq, key in enumerate("pfr", start=1):
        panel.key_capture._handle(panel.key_capture, {"event": "key", "key": key, "seq": seq}, [])
    panel.key_capture._handle(panel.key_capture, {"event": "ping", "seq": 4}, [])
    history = verdict_history(run_dir)
    assert history["verdict"].tolist() == ["pass", "fail", "needs_review"]
    assert history["repeat"].tolist() == [0, 1, 0]  # advance: one sample per key
    assert answers == [{"ack": 1}, {"ack": 2}, {"ack": 3}, {"ack": 4}]
    assert panel.key_capture.received == 3


def test_skip_leaves_a_sample_without_a_verdict(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", design="queue")
    panel.skip_button.click()
    assert shown(panel) == ("read", "v1", 1) and panel.reviewed == 0
    panel.pass_button.click()
    assert shown(panel) == ("read", "v2", 0)
    assert latest_verdicts(run_dir)["repeat"].tolist() == [1]


def test_undo_appends_the_earlier_verdict_and_goes_back(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", design="queue")
    assert panel.undo_button.disabled
    panel.reason.value = "too vague"
    panel.fail_button.click()  # read v1 0, then on to read v1 1
    panel.previous_button.click()
    panel.reason.value = "fine after all"
    panel.pass_button.click()
    assert shown(panel) == ("read", "v1", 1)
    panel.undo_button.click()
    assert shown(panel) == ("read", "v1", 0)
    assert "fail</b> again" in panel.status.value
    history = verdict_history(run_dir)
    assert history["verdict"].tolist() == ["fail", "pass", "fail"]  # nothing is erased
    assert history["reason"].tolist() == ["too vague", "fine after all", "too vague"]
    panel.undo_button.click()  # the first verdict: the sample is unreviewed again
    assert "<b>unreviewed</b> again (was fail" in panel.status.value
    assert shown(panel) == ("read", "v1", 0) and panel.undo_button.disabled
    history = verdict_history(run_dir)
    assert history["verdict"].tolist() == ["fail", "pass", "fail", "unreviewed"]
    assert latest_verdicts(run_dir).empty
    assert panel.reviewed == 0 and "Not reviewed by ana yet" in panel.earlier.value
    assert panel.fail_button.description == "Fail"  # no ✓ on any verdict button
    # The reason given with the verdict taken back is a draft again, not lost.
    assert panel.reason.value == "too vague" and "draft kept" in panel.unsaved.value
    panel.unreviewed_only.value = True
    assert panel.count == 8 and shown(panel) == ("read", "v1", 0)


def test_a_first_verdict_undone_is_no_verdict_for_every_reader(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", design="queue")
    other = annotate(run_dir, annotator="ana", advance=False, design="queue")  # the same reviewer's
    panel.fail_button.click()
    assert other.reviewed == 1
    panel.press("z")
    assert panel.reviewed == 0 and other.reviewed == 0
    assert "Not reviewed by ana yet" in other.earlier.value
    assert latest_verdicts(run_dir).empty
    assert latest_verdicts(verdict_history(run_dir)).empty  # a frame of rows too
    assert calibrate(run_dir, check="all").summary.empty
    assert (
        annotate(run_dir, annotator="ana", design="queue").reviewed == 0
    )  # a new panel resumes there
    # A new verdict after the undo counts as usual.
    panel.pass_button.click()
    assert latest_verdicts(run_dir)["verdict"].tolist() == ["pass"]
    assert calibrate(run_dir, check="all").summary["annotator"].tolist() == ["ana"]


def test_rates_of_verdicts_count_a_first_verdict_undone_as_unreviewed(run_dir: Path) -> None:
    panel = annotate(run_dir, annotator="ana", design="queue")
    panel.fail_button.click()
    panel.pass_button.click()
    panel.press("z")
    counted = rates(load(run_dir), source="verdicts", by=[])
    assert counted["n"].sum() == 1 and counted["unreviewed"].sum() == 7


def test_annotators_are_kept_apart(run_dir: Path) -> None:
    annotate(run_dir, annotator="ana", advance=False, design="queue").record("fail")
    bo = annotate(run_dir, annotator="bo", design="queue")
    assert shown(bo) == ("read", "v1", 0) and bo.reviewed == 0
    bo.record("pass")
    latest = latest_verdicts(run_dir).set_index("annotator")
    assert latest.loc["ana", "verdict"] == "fail" and latest.loc["bo", "verdict"] == "pass"


def test_where_narrows_the_samples(run_dir: Path) -> None:
    assert annotate(run_dir, "ana", where="status != 'completed'", design="queue").count == 1
    assert annotate(run_dir, "ana", where=lambda s: s["repeat"] == 1, design="queue").count == 4
    run = load(run_dir)
    assert annotate(run, "ana", where=run.samples["variant"] == "v2", design="queue").count == 4
    keys = pd.DataFrame({"case_id": ["read"], "variant": ["v1"], "repeat": [1]})
    panel = annotate(run, "ana", where=keys, design="queue")
    assert panel.count == 1 and shown(panel) == ("read", "v1", 1)
    with pytest.raises(ValueError, match=r"'where' query 'nope ==' failed"):
        annotate(run, "ana", where="nope ==", design="queue")
    with pytest.raises(
        ValueError, match=r"'where' must be a boolean mask with one value per sample \(8\)"
    ):
        annotate(run, "ana", where=np.ones(3, dtype=bool), design="queue")
    with pytest.raises(TypeError, match=r"'where' must be None, a query string.*got int"):
        annotate(run, "ana", where=3, design="queue")
    with pytest.raises(ValueError, match=r"missing \['repeat'\]"):
        annotate(run, "ana", where=keys.drop(columns="repeat"), design="queue")


def test_review_the_samples_calibration_found(run_dir: Path) -> None:
    store = VerdictStore(run_dir)
    store.save("read", "v1", 0, annotator="ana", verdict="fail")
    store.save("read", "v1", 1, annotator="ana", verdict="fail")
    found = calibrate(run_dir, check="<b>terms</b>").disagreements
    panel = annotate(run_dir, "ana", where=found, design="queue")
    assert panel.count == 1 and shown(panel) == ("read", "v1", 0)


def test_the_run_sees_new_verdicts_at_once(run_dir: Path) -> None:
    run = load(run_dir)
    assert rates(run, by="variant", source="verdicts")["k"].sum() == 0
    panel = annotate(run, "ana", advance=False, design="queue")
    panel.record("pass")
    assert rates(run, by="variant", source="verdicts")["k"].sum() == 1


def test_several_runs_save_into_their_own_directory(tmp_path: Path) -> None:
    one = write_run(tmp_path / "one", [{"case_id": "c", "variant": "v", "repeat": 0}])
    two = write_run(tmp_path / "two", [{"case_id": "c", "variant": "v", "repeat": 0}])
    panel = annotate(load([one, two]), "ana", advance=False, design="queue")
    assert panel.count == 2 and "run <b>one</b>" in panel.header.value
    panel.next()
    panel.record("fail")
    assert latest_verdicts(one).empty
    assert latest_verdicts(two)["verdict"].tolist() == ["fail"]


def test_bad_arguments_are_named(run_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"'annotator' must be a non-empty string .*got ''"):
        annotate(run_dir, "", design="queue")
    with pytest.raises(TypeError, match=r"'advance' must be True or False; got 1"):
        annotate(run_dir, "ana", advance=1, design="queue")
    with pytest.raises(ValueError, match=r"'check' must be a check type or name"):
        annotate(run_dir, "ana", check="nope", design="queue")
    panel = annotate(run_dir, "ana", advance=False, design="queue")
    with pytest.raises(ValueError, match=re.escape("'verdict' must be one of 'pass', 'fail'")):
        panel.record("maybe")


def test_a_failed_save_says_so_and_changes_nothing(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    panel = annotate(run_dir, "ana", advance=False, design="queue")

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(VerdictStore, "save", disk_full)
    panel.fail_button.click()
    assert "NOT SAVED" in panel.status.value and "No space left" in panel.status.value
    assert panel.reviewed == 0 and panel.fail_button.description == "Fail"
