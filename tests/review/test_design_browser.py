"""The random design's order and the live number, in a real JupyterLab and Chromium.

The notebook opens ``evalnb.annotate(run, annotator=...)`` with no design: the panel walks
the seeded random order (the same one :class:`ReviewState` makes with the same seed, not
the run, case, variant, repeat order), and after each key the live number in the panel
counts one more label and shows the human pass rate per variant with its interval and the
labels to go. A screenshot of the panel goes to test-artifacts/review-design-live.png.
The test waits for the text it expects, never for a time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalnb.review import ReviewState
from evalnb.store import latest_verdicts
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
HEADER = re.compile(r"case (\S+) · variant (\S+) · repeat (\d+)")


def order(run_dir: Path, design: str) -> list[tuple[str, str, int]]:
    state = ReviewState(run_dir, "reader", design=design, advance=False)
    keys = []
    for position in state.queue.positions.tolist():
        key = state.index.key(position)
        keys.append((key["case_id"], key["variant"], key["repeat"]))
    return keys


@pytest.mark.timeout(600)
def test_the_random_order_and_the_live_number_after_each_key(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    root = tmp_path / "lab"
    root.mkdir()
    run_dir = write_run(
        root / "run",
        [
            {
                "case_id": f"case{c}",
                "variant": v,
                "repeat": r,
                "checks": {"judge": (c + r) % 3 != 0},
            }
            for c in range(30)
            for v in ("v1", "v2")
            for r in range(2)
        ],
    )
    write_notebook(
        root / "design.ipynb",
        "import evalnb\npanel = evalnb.annotate('run', annotator='browser')\npanel",
    )
    random_order = order(run_dir, "random")
    assert random_order != order(run_dir, "queue")
    with jupyter_lab(root) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(TIMEOUT_MS)
        panel = page.locator(".evalnb-annotator")
        try:
            page.goto(lab.page_url("design.ipynb"))
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            lab.wait_notebook_idle("design.ipynb", timeout=90)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            header = panel.locator(".evalnb-header")
            live = panel.locator(".evalnb-live")
            header.wait_for(state="visible")
            page.wait_for_function(
                "() => document.querySelector('.evalnb-annotator .evalnb-live')"
                "?.innerText.includes('no verdict yet')"
            )
            seen, numbers = [], [live.inner_text()]
            panel.locator(".evalnb-body").click(position={"x": 30, "y": 30})
            # the reviewer agrees with the judge: the rates are the judge's, with intervals
            keys = ["p" if (int(c[4:]) + r) % 3 else "f" for c, _, r in random_order[:8]]
            for step, key in enumerate(keys, start=1):
                shown = header.inner_text()
                found = HEADER.search(shown)
                assert found is not None
                seen.append((found[1], found[2], int(found[3])))
                page.keyboard.press(key)
                # the verdict moves on: the header names the next sample
                page.wait_for_function(
                    "t => document.querySelector('.evalnb-annotator .evalnb-header')"
                    "?.innerText !== t",
                    arg=shown,
                )
                # the live number counts the new label (drawn before the header)
                page.wait_for_function(
                    "n => document.querySelector('.evalnb-annotator .evalnb-live')"
                    "?.innerText.includes(`${n} labels`)",
                    arg=step,
                )
                numbers.append(live.inner_text())
            # the panel walked the seeded random order, not the queue's
            assert seen == random_order[: len(seen)]
            assert len({case for case, _, _ in seen}) > 2
            # every key changed the number, and it names both variants with an interval
            assert len(set(numbers)) == len(numbers)
            last = numbers[-1]
            assert "judge corrected by your verdicts (PPI), 8 labels" in last
            assert re.search(r"v\d [01]\.\d\d \[[01]\.\d\d, [01]\.\d\d\]", last), last
            assert "v1" in last and "v2" in last
            assert re.search(r"about \d+ more labels for ±\d+ pp|no number of labels", last)
            saved = latest_verdicts(run_dir)
            assert len(saved) == 8 and set(saved["design"]) == {"random"}
            assert sorted(saved["rank"]) == list(range(8))
            ARTIFACTS.mkdir(exist_ok=True)
            panel.screenshot(path=str(ARTIFACTS / "review-design-live.png"))
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "design-browser-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
