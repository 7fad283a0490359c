"""The review panel in a real JupyterLab, driven by a real headless Chromium.

One JupyterLab for the whole module; the notebook is run through the menu (Run → Run All
Cells) as a person would. The reviewer types a reason (reached with its key), clicks, and
works with keys: after a click anywhere in the panel, fast (30 keys 10 ms apart, each
stored in order), and never reaching JupyterLab (``d d`` deletes no cell). Undo restores
an earlier verdict, and takes a first one back. Drafts survive moving and a kernel
restart; after a restart the old panel says it is stale. The sample list opens with its
key, finds by every word, and a key pressed at once after choosing in it lands on the
sample chosen last. A sample whose answer is an HTML/script attack shows as literal text
and runs nothing. A key pressed at once after typing keeps every character typed. With a
long answer at 1,400 x 900 the checks (the judge's detail included) are in view beside
it. A second notebook shows a ``compare`` result (its verdict first, model text with
``$`` not typeset) and the side-by-side review of two variants, with a jump from the
sample list. Screenshots of the panel, the panel at 1,400 x 900, the side-by-side view
and the compare result go to test-artifacts/ (and one of the page on failure).

The browser and the kernel each run at their own pace (a loaded machine slows both), so
the test never reads the page or the store at a moment chosen by time: it waits for the
text it expects (a header, a status line) or for the rows on disk.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalnb._types import CheckResult, Sample
from evalnb.store import RunWriter, latest_verdicts, verdict_history
from tests.browser.lab import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    jupyter_lab,
    require_chromium,
    write_notebook,
)
from tests.builders import T0, write_run

ATTACK = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
REVIEW = "Fails when markup <b>shows</b> as <i>markup</i>"
TIMEOUT_MS = 60_000
ROOT = Path(__file__).resolve().parents[2]
FAST = ("pfr" * 10)[:30]
VERDICT = {"p": "pass", "f": "fail", "r": "needs_review"}
LONG_ANSWER = "\n".join(
    f"{i:03d} Your refund for order 7731 is on its way and should reach you soon."
    for i in range(150)
)
JUDGE_DETAIL = (
    "The answer promises the refund 'soon' but the policy gives 14 days and asks for the "
    "date; it never names the order number as the customer's own."
)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def says(page: Any, part: str, text: str) -> None:
    """Wait until the panel's ``part`` (a class: header, status, earlier...) shows ``text``."""
    page.wait_for_function(
        "([part, t]) => document.querySelector(`.evalnb-annotator .evalnb-${part}`)"
        "?.innerText.includes(t)",
        arg=[part, text],
    )


def shows(page: Any, text: str) -> None:
    """Wait until the panel's header names ``text`` (such as 'repeat 2')."""
    says(page, "header", text)


def saved(page: Any, verdict: str, sample: str) -> None:
    """Wait until the status line says ``verdict`` was saved for ``sample``."""
    says(page, "status", f"Saved {verdict} for {sample}.")


def focused_in(page: Any, selector: str) -> None:
    page.wait_for_function(
        "s => !!document.activeElement?.closest(s)", arg=f".evalnb-annotator {selector}"
    )


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def verdicts_of(run_dir: Path, case: str) -> list[str]:
    latest = latest_verdicts(run_dir)
    return latest[latest["case_id"] == case].sort_values("repeat")["verdict"].tolist()


def verdict_on(run_dir: Path, case: str, repeat: int) -> str | None:
    latest = latest_verdicts(run_dir)
    found = latest[(latest["case_id"] == case) & (latest["repeat"] == repeat)]
    return None if found.empty else str(found["verdict"].iloc[-1])


def write_judged_sample(run_dir: Path) -> None:
    """Case ``judged``: one sample with a long answer and a judge's failing check."""
    sample = Sample(
        run_id=run_dir.name,
        case_id="judged",
        variant="v1",
        repeat=0,
        order=1000,
        started_at=T0,
        latency_ms=100.0,
        status="completed",
        error=None,
        answer=LONG_ANSWER,
        prompt="question judged",
        request=None,
        response=None,
    )
    checks = [
        (sample, CheckResult("judge: follows the refund policy", "judge", False, JUDGE_DETAIL)),
        (sample, CheckResult("names the order", "contains", True, "")),
    ]
    RunWriter(run_dir).write([sample], checks)


def checks_in_view(page: Any) -> dict[str, Any]:
    """Where the shown sample's checks are, read from the page: their box, the viewport,
    and whether the page shows them at their corners (nothing scrolled over them)."""
    return page.evaluate(
        """() => {
        const checks = document.querySelector('.evalnb-annotator .nb-judge .nb-check-results');
        const read = document.querySelector('.evalnb-annotator .nb-read');
        const box = checks.getBoundingClientRect();
        const corners = [[box.left + 4, box.top + 4], [box.left + 4, box.bottom - 4],
                         [box.right - 4, box.bottom - 4]];
        return {
          top: box.top, bottom: box.bottom, left: box.left, right: box.right,
          width: window.innerWidth, height: window.innerHeight,
          seen: corners.every(([x, y]) => checks.contains(document.elementFromPoint(x, y))),
          inRead: read.contains(checks),
          readScrolls: read.scrollHeight > read.clientHeight,
          readScrolled: read.scrollTop,
          text: checks.innerText,
        };
    }"""
    )


OPEN = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def compare_and_side_by_side(page: Any, lab: Any) -> None:
    """The compare result and the side-by-side review in a second notebook, on ``page``
    (a new page: leaving the first one would ask about unsaved changes)."""
    # A workspace of its own: the default one would bring the first notebook back to front.
    page.goto(f"{lab.url}/lab/workspaces/compare/tree/compare.ipynb?token={lab.token}")
    notebook = page.locator(f"{OPEN} .jp-Notebook")
    notebook.locator(".jp-Cell").first.wait_for()
    lab.wait_notebook_idle("compare.ipynb")
    notebook.locator(".jp-Cell").first.click()  # the notebook is the widget Run All acts on
    run_all(page)
    result = notebook.locator(".evalnb-result")
    result.wait_for(state="visible")
    said = result.inner_text()
    assert re.search(r"(can't tell yet|v2 better|v1 better) · v2 vs v1 on all", said), said
    assert "pp" in said and "paired cases" in said
    panel = notebook.locator(".evalnb-annotator")
    pair = panel.locator(".nb-pair")
    pair.wait_for(state="visible")
    ARTIFACTS.mkdir(exist_ok=True)
    notebook.locator(".jp-Cell").first.screenshot(path=str(ARTIFACTS / "compare-result.png"))
    sides = pair.locator("td.nb-side")
    assert sides.count() == 2
    assert "variant v1" in sides.nth(0).inner_text() and "v2 says" in sides.nth(1).inner_text()
    # The $ signs in both answers are text, not typeset maths.
    assert pair.locator("mjx-container, .MathJax").count() == 0
    assert "costs $5 and ships for $10" in pair.inner_text()

    # The list: search, choose, and the panel jumps there.
    panel.locator("button.evalnb-list-button").click()
    search = panel.locator(".evalnb-list-search input")
    search.fill("c2 v2")
    choices = panel.locator(".evalnb-list-select select option")
    page.wait_for_function(
        f"() => document.querySelectorAll('{OPEN} .evalnb-list-select option').length === 2"
    )
    assert all("c2" in t and "v2" in t for t in choices.all_inner_texts())
    panel.locator(".evalnb-list-select select").select_option(index=1)
    page.wait_for_function(
        f"() => document.querySelector('{OPEN} .evalnb-header')?.innerText"
        ".includes('case c2 · variant v2 · repeat 1')"
    )
    # A reason typed and a key pressed at once: the reason is saved whole.
    reason = panel.locator(".evalnb-reason textarea")
    reason.click()
    reason.type("costs $5 not $10", delay=5)
    page.keyboard.press("Escape")
    page.keyboard.press("f")
    page.wait_for_function(
        f"() => document.querySelector('{OPEN} .evalnb-status')?.innerText.includes('Saved')"
    )
    page.keyboard.press("k")
    page.wait_for_function(
        f"() => document.querySelector('{OPEN} .evalnb-header')?.innerText"
        ".includes('case c2 · variant v2 · repeat 1')"
    )
    panel.hover(position={"x": 300, "y": 20})
    panel.screenshot(path=str(ARTIFACTS / "review-side-by-side.png"))


@pytest.mark.timeout(600)
def test_review_in_jupyterlab_by_keys_and_clicks(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    root = tmp_path / "lab"
    root.mkdir()
    answers = [ATTACK, "plain answer", "third answer", "fourth answer"]
    rows = [
        {
            "case_id": "attack",
            "variant": "v1",
            "repeat": r,
            "answer": answer,
            "checks": {"mentions <order>": r > 0},
        }
        for r, answer in enumerate(answers)
    ]
    rows += [
        {"case_id": "many", "variant": "v1", "repeat": r, "answer": f"answer {r}\n" * (r % 7 * 9)}
        for r in range(32)
    ]
    run_dir = write_run(
        root / "run",
        rows,
        cases=[{"id": "attack", "review": REVIEW}, {"id": "many"}, {"id": "judged"}],
    )
    write_judged_sample(run_dir)
    write_run(
        root / "pair",
        [
            {
                "case_id": f"c{c}",
                "variant": v,
                "repeat": r,
                "answer": f"{v} says: it costs $5 and ships for $10 (case c{c}, repeat {r})",
                "checks": {"contains": v == "v2" or (c + r) % 2 == 0, "word_count": True},
            }
            for c in range(6)
            for v in ("v1", "v2")
            for r in range(2)
        ],
    )
    write_notebook(
        root / "compare.ipynb",
        "import evalnb\nrun = evalnb.load('pair')\nevalnb.compare(run, a='v1', b='v2')",
        "panel = evalnb.annotate(run, annotator='browser', a='v1', b='v2')\npanel",
    )
    write_notebook(
        root / "review.ipynb",
        "import evalnb\nprint(evalnb.__file__)",
        "panel = evalnb.annotate('run', annotator='browser', design='queue')\npanel",
    )
    dialogs: list[str] = []
    with jupyter_lab(root) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(TIMEOUT_MS)
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        panel = page.locator(".evalnb-annotator")
        try:
            page.goto(lab.page_url("review.ipynb"))
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            lab.wait_kernels_idle(timeout=90)
            cells = page.locator(".jp-Notebook .jp-Cell").count()
            run_all(page)
            body = panel.locator(".evalnb-body")
            body.wait_for(state="visible")
            shows(page, "repeat 0")
            # The kernel imports this checkout's evalnb.
            assert str(ROOT / "evalnb") in page.locator(".jp-OutputArea-output").first.inner_text()

            # The attack shows as literal text and runs nothing.
            text = body.inner_text()
            assert ATTACK in text and REVIEW in text and "mentions <order>" in text
            assert panel.locator("img").count() == 0 and panel.locator("script").count() == 0
            assert page.evaluate("() => typeof window.__pwned") == "undefined"

            # Its key puts the focus in the reason box; a reason typed there ("dd ab"
            # would delete and insert cells in command mode), then the Fail button:
            # saved, and on to the next sample.
            reason = "dd ab: shows raw markup"
            box = panel.locator(".evalnb-reason textarea")
            body.click(position={"x": 40, "y": 40})
            page.keyboard.press("e")
            focused_in(page, ".evalnb-reason")
            page.keyboard.type(reason, delay=20)
            assert box.input_value() == reason
            panel.locator("button.evalnb-fail").click()
            wait_for(lambda: verdicts_of(run_dir, "attack") == ["fail"], "the Fail on disk")
            shows(page, "repeat 1")

            # A click on the answer text, the pointer then leaves the panel: keys still
            # go to the panel, and d d deletes no cell.
            body.click(position={"x": 40, "y": 40})
            page.mouse.move(1390, 1090)
            page.keyboard.press("d")
            page.keyboard.press("d")
            page.keyboard.press("a")
            page.keyboard.press("b")
            page.keyboard.press("p")
            wait_for(lambda: verdicts_of(run_dir, "attack") == ["fail", "pass"], "the Pass")
            shows(page, "repeat 2")
            # The status line after p: b's complaint was never shown last.
            saved(page, "pass", "attack · v1 · repeat 1")
            assert "does nothing" not in panel.locator(".evalnb-status").inner_text()
            assert page.locator(".jp-Notebook .jp-Cell").count() == cells

            # A draft survives Next and Previous; Escape leaves the box for the keys, at
            # once: the text travels with the key, so no character is lost.
            box.click()
            box.type("half a thought", delay=10)
            page.keyboard.press("Escape")
            page.keyboard.press("j")
            shows(page, "repeat 3")
            page.wait_for_function(
                "() => document.querySelector('.evalnb-reason textarea').value === ''"
            )
            page.keyboard.press("k")
            shows(page, "repeat 2")
            page.wait_for_function(
                "() => document.querySelector('.evalnb-reason textarea').value === 'half a thought'"
            )
            panel.locator(".evalnb-unsaved", has_text="reason not saved").wait_for()

            # Skip leaves repeat 2 without a verdict; f on repeat 3, back, p; undo
            # restores repeat 3's fail as a new verdict and shows it again.
            panel.locator("button.evalnb-skip").click()
            shows(page, "repeat 3")
            page.keyboard.press("f")
            wait_for(lambda: len(verdicts_of(run_dir, "attack")) == 3, "the fail on repeat 3")
            page.keyboard.press("ArrowLeft")
            says(page, "earlier", "Your verdict: fail")  # repeat 3 again, as judged
            shows(page, "attack · variant v1 · repeat 3")
            page.keyboard.press("p")
            wait_for(lambda: len(verdict_history(run_dir)) == 4, "the pass on repeat 3")
            page.keyboard.press("z")
            wait_for(lambda: len(verdict_history(run_dir)) == 5, "the undo")
            # The status line is drawn after the header: wait for it, do not read it.
            says(page, "status", "Undone: attack · v1 · repeat 3 is fail again (was pass)")
            shows(page, "repeat 3")
            assert verdicts_of(run_dir, "attack") == ["fail", "pass", "fail"]
            # Undo again: repeat 3's fail was its first verdict, taken back by a new row.
            page.keyboard.press("z")
            wait_for(lambda: len(verdict_history(run_dir)) == 6, "the undo of a first verdict")
            says(page, "status", "Undone: attack · v1 · repeat 3 is unreviewed again (was fail")
            says(page, "earlier", "Not reviewed by browser yet")
            assert verdict_history(run_dir)["verdict"].iloc[-1] == "unreviewed"
            assert verdicts_of(run_dir, "attack") == ["fail", "pass"]  # repeats 0 and 1

            # 30 keys, 10 ms apart, over the "many" case: every one stored, in order.
            panel.locator(".evalnb-filter select").nth(1).select_option(label="many")
            shows(page, "many")
            shows(page, "repeat 0")
            panel.hover(position={"x": 300, "y": 20})
            page.keyboard.type(FAST, delay=10)
            wait_for(lambda: len(verdicts_of(run_dir, "many")) == 30, "30 verdicts by key", 60)
            assert verdicts_of(run_dir, "many") == [VERDICT[k] for k in FAST]
            saved(page, "needs_review", "many · v1 · repeat 29")
            shows(page, "repeat 30")
            assert page.locator(".jp-Notebook .jp-Cell").count() == cells
            ARTIFACTS.mkdir(exist_ok=True)
            panel.screenshot(path=str(ARTIFACTS / "review-panel.png"))

            # A draft on repeat 30, then a kernel restart: the old panel says it is
            # stale, and the panel made again shows the draft.
            box.click()
            box.type("kept across a restart", delay=10)
            panel.locator(".evalnb-unsaved", has_text="reason not saved").wait_for()
            page.keyboard.press("Escape")
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Restart Kernel…$")).click()
            page.locator(".jp-Dialog-footer button", has_text="Restart").click()
            lab.wait_kernels_idle(timeout=90)
            panel.locator("button.evalnb-next").click(force=True)
            stale = panel.locator(".evalnb-stale")
            stale.wait_for(state="visible", timeout=20_000)
            # Either the send fails (stale for certain) or no answer comes (busy or stale).
            said = stale.inner_text().lower()
            assert "this panel is stale" in said and "cell" in said and "again" in said
            panel.screenshot(path=str(ARTIFACTS / "review-panel-stale.png"))
            run_all(page)
            page.wait_for_function(
                "() => !document.querySelector('.evalnb-annotator .evalnb-stale')"
                " || document.querySelector('.evalnb-annotator .evalnb-stale')"
                ".style.display === 'none'"
            )
            panel.locator(".evalnb-filter select").nth(1).select_option(label="many")
            shows(page, "repeat 30")
            page.wait_for_function(
                "() => document.querySelector('.evalnb-annotator .evalnb-reason textarea')"
                "?.value === 'kept across a restart'"
            )
            assert page.evaluate("() => typeof window.__pwned") == "undefined"

            # The list opens with its key and its search box takes the keys typed next;
            # every word must match, in any order and case: many's repeats 3, 30, 31.
            panel.hover(position={"x": 300, "y": 20})
            page.keyboard.press("l")
            focused_in(page, ".evalnb-list-search")
            page.keyboard.type("R3 many", delay=10)
            options = panel.locator(".evalnb-list-select select option")
            page.wait_for_function(
                "() => document.querySelectorAll('.evalnb-annotator .evalnb-list-select"
                " option').length === 3"
            )
            listed = options.all_inner_texts()
            assert [re.search(r"r(\d+)", t).group(1) for t in listed] == ["3", "30", "31"]
            # Three moves in the list, then Escape and f at once. The first move's update
            # goes to the kernel at once; ipywidgets holds the later ones back until it
            # is answered, and the key must not overtake them: f is for repeat 31.
            listbox = panel.locator(".evalnb-list-select select")
            listbox.focus()
            page.keyboard.press("ArrowUp")  # repeat 3
            page.keyboard.press("ArrowDown")  # repeat 30
            page.keyboard.press("ArrowDown")  # repeat 31
            page.keyboard.press("Escape")
            page.keyboard.press("f")
            wait_for(lambda: verdict_on(run_dir, "many", 31) == "fail", "the f on repeat 31")
            saved(page, "fail", "many · v1 · repeat 31")
            assert verdict_on(run_dir, "many", 3) == VERDICT[FAST[3]]  # untouched
            assert len(verdict_history(run_dir)) == 6 + 30 + 1
            page.keyboard.press("l")
            panel.locator(".evalnb-list").wait_for(state="hidden")

            # A long answer and a judge's detail at 1,400 x 900: the answer scrolls in
            # its box, and the checks beside it are in view without scrolling anything.
            panel.locator(".evalnb-filter select").nth(1).select_option(label="judged")
            shows(page, "case judged")
            page.set_viewport_size({"width": 1400, "height": 900})
            # The notebook scrolled to the panel, as a reviewer would; then two frames drawn.
            panel.evaluate(
                "el => new Promise(done => { el.scrollIntoView({block: 'start'}); "
                "requestAnimationFrame(() => requestAnimationFrame(done)); })"
            )
            where = checks_in_view(page)
            assert JUDGE_DETAIL in where["text"] and "names the order" in where["text"]
            assert not where["inRead"] and where["readScrolls"] and where["readScrolled"] == 0
            assert 0 <= where["top"] < where["bottom"] <= where["height"] == 900, where
            assert 0 <= where["left"] < where["right"] <= where["width"] == 1400, where
            assert where["seen"], where
            page.screenshot(path=str(ARTIFACTS / "review-panel-1400x900.png"))

            second = browser.new_page(viewport={"width": 1400, "height": 1100})
            second.set_default_timeout(TIMEOUT_MS)
            second.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            try:
                compare_and_side_by_side(second, lab)
            except BaseException:
                ARTIFACTS.mkdir(exist_ok=True)
                second.screenshot(path=str(ARTIFACTS / "annotate-browser-failure-compare.png"))
                raise
            assert dialogs == []
        except BaseException:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "annotate-browser-failure.png"), full_page=True)
            raise
        finally:
            browser.close()

    history = verdict_history(run_dir)
    pair = latest_verdicts(root / "pair")
    assert pair[["case_id", "variant", "repeat", "verdict"]].values.tolist() == [
        ["c2", "v2", 1, "fail"]
    ]
    assert pair["reason"].tolist() == ["costs $5 not $10"]
    first = history.iloc[0]
    assert (first["case_id"], first["repeat"], first["verdict"]) == ("attack", 0, "fail")
    assert first["reason"] == reason
