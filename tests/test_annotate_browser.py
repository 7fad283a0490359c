"""The review panel in a real JupyterLab, driven by a real headless Chromium.

The notebook is run through the menu (Run → Run All Cells) as a person would; the
reviewer types a reason, clicks Fail and Next, and uses a key shortcut; the verdicts
are then read back from the run directory. A sample whose answer is an HTML/script
attack must show as literal text, run nothing and open no dialog. On failure a
screenshot is saved under test-artifacts/.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from evalnb.verdicts import latest_verdicts
from tests.browser.lab import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    jupyter_lab,
    require_chromium,
    write_notebook,
)
from tests.test_analysis_runs import write_run

ATTACK = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
REVIEW = "Fails when markup <b>shows</b> as <i>markup</i>"
TIMEOUT_MS = 60_000


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.timeout(240)
def test_review_in_jupyterlab_saves_verdicts_and_runs_no_model_markup(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    root = tmp_path / "lab"
    root.mkdir()
    answers = [ATTACK, "plain answer", "third answer"]
    run_dir = write_run(
        root / "run",
        [
            {
                "case_id": "attack",
                "variant": "v1",
                "repeat": r,
                "answer": answer,
                "checks": {"mentions <order>": r > 0},
            }
            for r, answer in enumerate(answers)
        ],
        cases=[{"id": "attack", "review": REVIEW}],
    )
    write_notebook(
        root / "review.ipynb",
        "from evalnb.annotate import annotate\npanel = annotate('run', annotator='browser')\npanel",
    )
    dialogs: list[str] = []
    with jupyter_lab(root) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(TIMEOUT_MS)
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        try:
            page.goto(lab.page_url("review.ipynb"))
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            lab.wait_kernels_idle(timeout=90)
            cells = page.locator(".jp-Notebook .jp-Cell").count()

            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            body = page.locator(".evalnb-annotator .evalnb-body")
            body.wait_for(state="visible")
            header = page.locator(".evalnb-annotator .evalnb-header")
            page.wait_for_function(
                "() => document.querySelector('.evalnb-header')?.innerText.includes('repeat 0')"
            )

            # The attack shows as literal text and runs nothing.
            text = body.inner_text()
            assert ATTACK in text
            assert REVIEW in text
            assert "mentions <order>" in text
            assert page.locator(".evalnb-annotator img").count() == 0
            assert page.locator(".evalnb-annotator script").count() == 0
            assert page.evaluate("() => typeof window.__pwned") == "undefined"

            # Letters typed into the panel must not reach the notebook's own shortcuts
            # ("d d" deletes a cell in command mode, "a"/"b" insert one).
            reason = "dd ab: shows raw markup"
            page.locator(".evalnb-annotator .evalnb-reason textarea").fill("")
            page.locator(".evalnb-annotator .evalnb-reason textarea").type(reason, delay=20)
            page.locator(".evalnb-annotator button.evalnb-fail").click()
            wait_for(lambda: len(latest_verdicts(run_dir)) == 1, "the Fail verdict on disk")
            saved = latest_verdicts(run_dir)
            page.locator(".evalnb-annotator button.evalnb-next").click()
            page.wait_for_function(
                "() => document.querySelector('.evalnb-header')?.innerText.includes('repeat 1')"
            )
            assert "1 of 3 reviewed" in page.locator(".evalnb-progress").inner_text()

            # One-letter keys in the shortcut box: p gives a pass, then j moves on.
            keys = page.locator(".evalnb-annotator .evalnb-keys input")
            keys.click()
            keys.press("p")
            wait_for(lambda: len(latest_verdicts(run_dir)) == 2, "the Pass given by key")
            keys.press("j")
            page.wait_for_function(
                "() => document.querySelector('.evalnb-header')?.innerText.includes('repeat 2')"
            )
            assert "repeat 2" in header.inner_text()
            assert page.locator(".jp-Notebook .jp-Cell").count() == cells
            assert page.evaluate("() => typeof window.__pwned") == "undefined"
            assert dialogs == []
        except BaseException:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "annotate-browser-failure.png"), full_page=True)
            raise
        finally:
            browser.close()

    verdicts = latest_verdicts(run_dir).set_index("repeat")
    failed = saved.iloc[0]
    assert (failed["case_id"], failed["repeat"], failed["annotator"]) == ("attack", 0, "browser")
    assert (failed["verdict"], failed["reason"]) == ("fail", reason)
    assert verdicts.loc[1, "verdict"] == "pass"
