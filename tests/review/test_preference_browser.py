"""The pairwise review and two reviewers' queues in a real JupyterLab, driven by a real
headless Chromium.

One notebook opens the preference panel on two variants: the reviewer answers with keys
(2, 1, t, x, then z to take the last back), and the preferences read back from the run
directory are the ones the keys meant, said of the variants through the sides the panel
drew. A second notebook deals a run to two reviewers and opens each one's panel: each shows
only its own samples and counts "of your samples", and the verdicts typed in each land under
its reviewer, inside its share. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalnb.review import PreferenceState
from evalnb.store import latest_preferences, latest_verdicts
from tests.browser.lab import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    jupyter_lab,
    require_chromium,
    write_notebook,
)
from tests.builders import write_run

TIMEOUT_MS = 60_000
OPEN = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def part_says(page: Any, panel: str, part: str, text: str) -> None:
    """Wait until ``part`` (a class) of the panel ``panel`` (a selector) shows ``text``."""
    page.wait_for_function(
        "([panel, part, t]) => document.querySelector(`${panel} .evalnb-${part}`)"
        "?.innerText.includes(t)",
        arg=[f"{OPEN} {panel}", part, text],
    )


def open_notebook(page: Any, lab: Any, name: str) -> Any:
    page.goto(f"{lab.url}/lab/workspaces/{name.split('.')[0]}/tree/{name}?token={lab.token}")
    notebook = page.locator(f"{OPEN} .jp-Notebook")
    notebook.locator(".jp-Cell").first.wait_for()
    lab.wait_notebook_idle(name)
    notebook.locator(".jp-Cell").first.click()
    run_all(page)
    return notebook


def preference_review(page: Any, lab: Any, run_dir: Path) -> None:
    notebook = open_notebook(page, lab, "prefer.ipynb")
    panel = notebook.locator(".evalnb-prefer")
    panel.locator(".nb-pair").wait_for(state="visible")
    expected = PreferenceState(run_dir, "someone else", compare=("v1", "v2"), seed=3)
    pairs = expected.pairs
    first = pairs[0]
    part_says(page, ".evalnb-prefer", "header", f"case {first.case_id} · repeat {first.repeat}")
    body = panel.locator(".evalnb-body")
    # Blind: both answers, no variant named beside them; the left one is the drawn side's.
    left, right = body.locator("td.nb-side").all_inner_texts()
    assert left.startswith("Answer 1") and right.startswith("Answer 2")
    assert f"{first.left} says" in left and f"{first.right} says" in right
    assert "variant" not in body.inner_text().lower()
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "preference-panel.png"))

    panel.locator(".evalnb-header").click()
    keys = ["2", "1", "t", "x"]
    said = ["answer 2 better", "answer 1 better", "tie", "both bad"]
    for i, (key, words) in enumerate(zip(keys, said, strict=True)):
        page.keyboard.press(key)
        pair = pairs[i]
        part_says(
            page,
            ".evalnb-prefer",
            "status",
            f"Saved {words} for {pair.case_id} · repeat {pair.repeat}.",
        )
    part_says(page, ".evalnb-prefer", "progress", "4 of 8 pairs chosen")
    page.keyboard.press("z")
    part_says(page, ".evalnb-prefer", "status", "Undone")
    part_says(page, ".evalnb-prefer", "progress", "3 of 8 pairs chosen")
    panel.screenshot(path=str(ARTIFACTS / "preference-panel-after-keys.png"))

    def stored() -> dict[tuple[str, int], str]:
        saved = latest_preferences(run_dir, annotator="browser")
        return {(r.case_id, int(r.repeat)): str(r.preference) for r in saved.itertuples()}

    # The three choices left, said of the variants through the sides drawn for each pair.
    def of_variants(pair: Any, side: str) -> str:
        if side == "tie":
            return "tie"
        chosen = pair.left if side == "left" else pair.right
        return "a_better" if chosen == "v1" else "b_better"

    want = {
        (pairs[0].case_id, pairs[0].repeat): of_variants(pairs[0], "right"),
        (pairs[1].case_id, pairs[1].repeat): of_variants(pairs[1], "left"),
        (pairs[2].case_id, pairs[2].repeat): "tie",
    }
    wait_for(lambda: stored() == want, f"the preferences {want} on disk")
    history = latest_preferences(run_dir)
    assert set(history["left"]) <= {"v1", "v2"} and (history["seed"] == 3).all()


def two_reviewers(page: Any, lab: Any, run_dir: Path) -> None:
    notebook = open_notebook(page, lab, "team.ipynb")
    panels = notebook.locator(".evalnb-annotator")
    wait_for(lambda: panels.count() == 2, "two review panels")
    from evalnb.review import review_assignment

    dealt = review_assignment(run_dir)
    share = {who: dealt[dealt["reviewer"] == who] for who in ("ana", "ben")}
    for i, who in enumerate(("ana", "ben")):
        page.wait_for_function(
            "([i, t]) => document.querySelectorAll(`" + OPEN + " .evalnb-annotator`)[i]"
            "?.querySelector('.evalnb-progress')?.innerText.includes(t)",
            arg=[i, f"0 of {len(share[who])} of your samples reviewed"],
        )
        assert f"reviewer {who}" in panels.nth(i).locator(".evalnb-title").inner_text()
    # ana gives two verdicts by keys, ben one: each in their own panel.
    for i, presses in ((0, "pp"), (1, "f")):
        panels.nth(i).locator(".evalnb-header").click()
        for key in presses:
            page.keyboard.press(key)
            page.wait_for_function(
                "i => document.querySelectorAll(`" + OPEN + " .evalnb-annotator`)[i]"
                "?.querySelector('.evalnb-status')?.innerText.includes('Saved')",
                arg=i,
            )
    for i, (who, done) in enumerate((("ana", 2), ("ben", 1))):
        page.wait_for_function(
            "([i, t]) => document.querySelectorAll(`" + OPEN + " .evalnb-annotator`)[i]"
            "?.querySelector('.evalnb-progress')?.innerText.includes(t)",
            arg=[i, f"{done} of {len(share[who])} of your samples reviewed"],
        )
        panels.nth(i).screenshot(path=str(ARTIFACTS / f"reviewer-{who}.png"))

    def saved(who: str) -> set[tuple[str, str, int]]:
        latest = latest_verdicts(run_dir, annotator=who)
        return set(zip(latest["case_id"], latest["variant"], latest["repeat"], strict=True))

    wait_for(lambda: len(saved("ana")) == 2 and len(saved("ben")) == 1, "three verdicts")
    for who in ("ana", "ben"):
        mine = set(
            zip(share[who]["case_id"], share[who]["variant"], share[who]["repeat"], strict=True)
        )
        assert saved(who) <= mine, who
    assert set(latest_verdicts(run_dir)["verdict"]) == {"pass", "fail"}


@pytest.mark.timeout(600)
def test_preference_review_by_keys_and_two_reviewers_queues(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    root = tmp_path / "lab"
    root.mkdir()
    pair_dir = write_run(
        root / "pair",
        [
            {
                "case_id": f"c{c}",
                "variant": v,
                "repeat": r,
                "answer": f"{v} says: case c{c}, repeat {r}",
            }
            for c in range(4)
            for v in ("v1", "v2")
            for r in range(2)
        ],
        cases=[{"id": f"c{c}", "review": "Which reply is kinder?"} for c in range(4)],
    )
    team_dir = write_run(
        root / "team",
        [
            {"case_id": f"t{c}", "variant": "v1", "repeat": r, "checks": {"ok": r % 2 == 0}}
            for c in range(5)
            for r in range(4)
        ],
    )
    write_notebook(
        root / "prefer.ipynb",
        "import evalnb\nrun = evalnb.load('pair')",
        "panel = evalnb.annotate(run, 'browser', compare=('v1', 'v2'), ask='preference', "
        "seed=3)\npanel",
    )
    write_notebook(
        root / "team.ipynb",
        "import evalnb\nevalnb.assign_review('team', ['ana', 'ben'], overlap=0.25, seed=1)",
        "evalnb.annotate('team', 'ana')",
        "evalnb.annotate('team', 'ben')",
    )
    with jupyter_lab(root) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(TIMEOUT_MS)
        page.on("dialog", lambda dialog: dialog.dismiss())
        try:
            preference_review(page, lab, pair_dir)
            second = browser.new_page(viewport={"width": 1400, "height": 1600})
            second.set_default_timeout(TIMEOUT_MS)
            second.on("dialog", lambda dialog: dialog.dismiss())
            page = second
            two_reviewers(page, lab, team_dir)
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "preference-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
