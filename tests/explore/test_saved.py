"""The documentation site's page of notebook 07, served from the built site with no network,
shows the explorer's overview, and notebook 04's page the review panel. The site is built as
``make docs`` builds it, with notebooks 04 and 07 executed (the others as stored), and opened
in a real headless Chromium that refuses every request not to 127.0.0.1. The widgets are
drawn from the widget state saved when the build ran the notebooks, by evalnb's own script
(no CDN): the test reads the overview in the page (the verdict line, one row per case with
its first answers, no filter on, no samples listed) and checks the screenshot it takes
(test-artifacts/docs-07-explorer.png) is a drawn picture.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.lab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, require_chromium

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PAGE = "notebooks/07_explore.html"
#: The site's fixed header and "back to top" button would cover part of a screenshot.
HIDE_FIXED = ".md-header, .md-top { display: none; }"


def build_site(out: Path) -> Path:
    """The site, notebooks 04 and 07 executed. They run in notebooks/ and write their runs
    to notebooks/runs/ as ``make docs`` does, so one build at a time: one test builds it."""
    env = {
        **os.environ,
        "EVALNB_DOCS_EXECUTE": "false",
        "EVALNB_DOCS_EXECUTE_ONLY": "04_review.ipynb,07_explore.ipynb",
        "NO_MKDOCS_2_WARNING": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1 (a thread of this process)."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def shop_cases() -> set[str]:
    """The ids of every shop suite notebook 07 may run (the data folder's and the packaged)."""
    files = [ROOT / "data" / "cases" / "shop.jsonl"]
    files += sorted((ROOT / "evalnb" / "cases" / "suites").glob("shop*.jsonl"))
    return {
        json.loads(line)["id"]
        for path in files
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }


@pytest.mark.timeout(900)
def test_the_docs_site_draws_the_widgets_with_no_network(tmp_path: Path) -> None:
    site = build_site(tmp_path / "site")
    the_page_fetches_no_widget_script_from_a_cdn(site)
    the_page_of_notebook_07_shows_the_overview_offline(site)
    the_page_of_notebook_04_shows_the_review_panel_offline(site)


def the_page_fetches_no_widget_script_from_a_cdn(site: Path) -> None:
    page = (site / PAGE).read_text(encoding="utf-8")
    assert "application/vnd.jupyter.widget-state+json" in page  # executed, state saved
    assert "unpkg.com" not in page and "html-manager" not in page
    assert '<script type="module" src="../assets/evalnb-saved.js">' in page
    assert (site / "assets" / "evalnb-saved.js").read_bytes() == (
        ROOT / "evalnb" / "explorer" / "saved.js"
    ).read_bytes()
    # a page rendered as stored (no widget state) gets no script it does not need
    assert "evalnb-saved.js" not in (site / "notebooks" / "00_quickstart.html").read_text()


def the_page_of_notebook_07_shows_the_overview_offline(site: Path) -> None:
    require_chromium()
    from PIL import Image
    from playwright.sync_api import Route, sync_playwright

    cases = shop_cases()
    refused: list[str] = []
    with serve(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.set_default_timeout(30_000)

        def only_loopback(route: Route) -> None:
            if route.request.url.startswith(base + "/"):
                route.continue_()
            else:
                refused.append(route.request.url)
                route.abort()

        page.route("**/*", only_loopback)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        try:
            page.goto(f"{base}/{PAGE}")
            page.wait_for_function("() => document.documentElement.dataset.evalnbSaved")
            explorer = page.locator(".evalnb-explore")
            assert explorer.count() == 1
            explorer.locator("tr.evalnb-x-row").first.wait_for()
            story = explorer.locator(".evalnb-x-story").inner_text()
            assert "v2 vs v1 on all" in story and "paired cases" in story
            rows = explorer.locator("tr.evalnb-x-row")
            pager = explorer.locator(".evalnb-x-gridpager .evalnb-x-pageinfo").inner_text()
            found = re.search(r"page 1 of \d+ · (\d+) of (\d+) cases", pager)
            assert found and found.group(1) == found.group(2), pager  # every case listed
            shown = min(int(found.group(1)), 25)
            assert shown >= 4 and rows.count() == shown
            ids = rows.evaluate_all("rs => rs.map(r => r.dataset.case)")
            assert len(set(ids)) == shown and set(ids) <= cases
            # The overview as it opened: no filter on, none ticked, no samples listed.
            assert explorer.locator(".evalnb-x-filternames").inner_text() == "no filter"
            ticked = explorer.locator(".evalnb-x-filters input[type=checkbox]:checked")
            assert ticked.count() == 0
            assert explorer.locator(".evalnb-x-listing").inner_text().strip() == ""
            assert explorer.locator(".evalnb-x-sample").count() == 0
            # Each cell: k/n with its bar, and the first answer on one line.
            cells = explorer.locator("td.evalnb-x-cell")
            assert cells.count() == 2 * shown
            kn = explorer.locator(".evalnb-x-kn").all_inner_texts()
            assert len(kn) == 2 * shown and all("/" in t for t in kn)
            firsts = explorer.locator(".evalnb-x-first").all_inner_texts()
            assert len(firsts) == 2 * shown and all(t.strip() for t in firsts)
            note = explorer.locator(".evalnb-x-static-note").inner_text()
            assert note.startswith("A saved view, as the notebook left it")
            # A click reaches no kernel, and the page says why instead of doing nothing.
            cells.first.click()
            assert (
                explorer.locator(".evalnb-x-message")
                .inner_text()
                .startswith("This is a saved view")
            )
            assert explorer.locator(".evalnb-x-sample").count() == 0
            page.mouse.move(0, 0)  # no cell under the pointer in the picture
            page.evaluate(
                "() => { for (const m of document.querySelectorAll("
                "'.evalnb-x-message')) m.style.display = 'none'; }"
            )
            ARTIFACTS.mkdir(exist_ok=True)
            shot = ARTIFACTS / "docs-07-explorer.png"
            explorer.scroll_into_view_if_needed()
            page.add_style_tag(content=HIDE_FIXED)
            explorer.screenshot(path=str(shot))
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "docs-07-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert errors == []
    # Nothing of the widget came from outside: whatever the page tried off-host was refused,
    # and none of it was a widget script.
    assert not [u for u in refused if "unpkg" in u or "jsdelivr" in u or "widget" in u]
    with Image.open(shot) as image:
        width, height = image.size
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert width > 500 and height > 300, (width, height)
    assert colours is None or len(colours) > 20  # drawn text and bars, not a blank box


def the_page_of_notebook_04_shows_the_review_panel_offline(site: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    with serve(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.set_default_timeout(30_000)
        page.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url.startswith(base + "/") else route.abort()
            ),
        )
        try:
            page.goto(f"{base}/notebooks/04_review.html")
            page.wait_for_function("() => document.documentElement.dataset.evalnbSaved")
            panel = page.locator(".evalnb-saved-widget", has_text="evalnb review").first
            panel.wait_for()
            text = panel.inner_text()
            titles = text.lower()  # the panel's own style sets its titles in capitals
            assert "prompt as sent" in titles and "answer" in titles and "checks" in titles
            assert "keys: p pass" in text  # the key capture, an anywidget, drawn by its module
            labels = panel.locator("button.evalnb-saved-button").all_inner_texts()
            assert {"Pass", "Fail", "Needs review"} <= set(labels)
            ARTIFACTS.mkdir(exist_ok=True)
            panel.scroll_into_view_if_needed()
            page.add_style_tag(content=HIDE_FIXED)
            panel.screenshot(path=str(ARTIFACTS / "docs-04-panel.png"))
        finally:
            browser.close()
