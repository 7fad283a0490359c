"""The explorer in a real JupyterLab, driven by a real headless Chromium.

A run made against the stand-in model (the shop assistant, two versions) is opened with
``evalnb.explore`` in a notebook run through the menu. The test clicks a cell and reads its
samples, switches to side by side and to "variants differ", searches a word, a regular
expression and a bad one, opens the review panel from a sample and records a verdict there
and one in place, both of which then show in the grid; a cell printing
``explorer.selection`` agrees with the samples the page lists. A second run of hostile
answers (markup, ``$`` maths, 100 kB, right-to-left, NUL) shows as text in every part.
Each answer's time (the page's own measure, click to redraw) is written to
test-artifacts/explore-timings.json; screenshots of the overview, side by side and the
search go to test-artifacts/.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evalnb
from evalnb.store import latest_verdicts
from tests.browser.lab import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    jupyter_lab,
    require_chromium,
    write_notebook,
)
from tests.builders import ATTACK, write_run

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 60_000
EXPLORER = ".jp-NotebookPanel:not(.lm-mod-hidden) .evalnb-explore"
LONG = "word " * 20_000 + "THE END"
HOSTILE = {
    "script": ATTACK,
    "maths": "it costs $x$ and $$y = 2$$",
    "long": LONG,
    "rtl": "\u05e9\u05dc\u05d5\u05dd order 7731 \u0627\u0644\u0637\u0644\u0628",
    "nul": "before\x00after",
}
#: Generous: the target (150 ms) is for benchmarks; this only catches a page that hangs.
SLOW_MS = 10_000


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Answers:
    """Does what a person does in one explorer and waits for the kernel's answer to be
    drawn; keeps each answer's time as the page measured it."""

    def __init__(self, page: Any, index: int):
        self.page = page
        self.index = index
        self.root = page.locator(EXPLORER).nth(index)
        self.times: dict[str, list[int]] = {}

    def act(self, name: str, action: Callable[[], None]) -> None:
        before = self.root.get_attribute("data-pending") or "0"
        action()
        self.page.wait_for_function(
            "([sel, i, before]) => { const el = document.querySelectorAll(sel)[i];"
            " const d = el.dataset; return d.pending !== before && d.answered === d.pending; }",
            arg=[EXPLORER, self.index, before],
        )
        took = int(self.root.get_attribute("data-answered-ms") or "-1")
        self.times.setdefault(name, []).append(took)

    def samples(self) -> list[tuple[str, str, int]]:
        cards = self.root.locator(".evalnb-x-listing .evalnb-x-sample")
        return [
            (
                card.get_attribute("data-case") or "",
                card.get_attribute("data-variant") or "",
                int(card.get_attribute("data-repeat") or "-1"),
            )
            for card in cards.all()
        ]


def shop_run(path: Path, base_url: str) -> Path:
    target = evalnb.OpenAIChat(base_url, "shop-v1")
    variants = [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]
    evalnb.run(
        ROOT / "data/cases/shop.jsonl",
        target,
        variants=variants,
        repeats=4,
        out=path,
        progress=False,
    )
    return path


def hostile_run(path: Path) -> Path:
    rows = [
        {"case_id": f"<b>{name}</b> $x$", "variant": v, "repeat": 0, "answer": text}
        for name, text in HOSTILE.items()
        for v in ("v1", "v2")
    ]
    for row in rows:
        row["checks"] = {"<img src=x onerror=alert(1)>": row["variant"] == "v1"}
    return write_run(path, rows)


def printed_selection(page: Any, cell: int) -> list[list[Any]]:
    """Run code cell ``cell`` (it prints the selection's keys as JSON) and read its output."""
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
    target = notebook.locator(".jp-CodeCell").nth(cell)
    prompt = target.locator(".jp-InputPrompt")
    before = prompt.inner_text()
    prompt.click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "([i, before]) => { const c = document.querySelectorAll("
        "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')[i];"
        " const p = c.querySelector('.jp-InputPrompt').innerText;"
        " return p !== before && /\\[\\d+\\]/.test(p); }",
        arg=[cell, before],
    )
    return json.loads(target.locator(".jp-OutputArea-output").inner_text().strip())


def check_the_shop(page: Any, shop: Answers, run_dir: Path) -> None:
    root = shop.root
    story = root.locator(".evalnb-x-story").inner_text()
    assert re.search(r"(can't tell yet|v2 better|v1 better) · v2 vs v1 on all", story), story
    assert "paired cases" in story
    assert root.locator("tr.evalnb-x-row").count() == 4
    ARTIFACTS.mkdir(exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / "explore-overview.png"))

    # A cell: its four repeats, each with its checks.
    first = root.locator("tr.evalnb-x-row").first
    case = first.get_attribute("data-case")
    shop.act("cell", lambda: first.locator("td.evalnb-x-cell[data-variant='v2']").click())
    assert shop.samples() == [(case, "v2", r) for r in range(4)]
    title = root.locator(".evalnb-x-title").inner_text()
    assert title == f"samples of {case} · v2"
    assert root.locator(".evalnb-x-sample").first.locator(".evalnb-x-checks tr").count() >= 1
    # What the page lists is explorer.selection.
    listed = [list(k) for k in shop.samples()]
    assert printed_selection(page, 2) == listed

    # Side by side: a row per repeat, a column per variant, v2 diffed against v1.
    shop.act("side", lambda: first.locator("button.evalnb-x-side").click())
    table = root.locator(".evalnb-x-side-table")
    assert table.locator("tr.evalnb-x-siderow").count() == 4
    assert table.locator("tr").first.inner_text().split() == ["repeat", "v1", "v2"]
    root.locator(".evalnb-x-listing").screenshot(path=str(ARTIFACTS / "explore-side-by-side.png"))
    # The plain view marks nothing; the diff view marks only the answers near each other.
    shop.act("plain", lambda: root.locator("button.evalnb-x-view-plain").click())
    assert table.locator("ins, del").count() == 0
    assert root.locator(".evalnb-x-title").inner_text() == f"{case} side by side"
    shop.act("diff", lambda: root.locator("button.evalnb-x-view-diff").click())
    labels = table.locator(".evalnb-x-label").all_inner_texts()
    diffed = table.locator(".evalnb-x-diffed").count()
    unmarked = [t for t in labels if t.startswith("answer (not marked:")]
    assert diffed + len(unmarked) == 4  # each v2 answer: marked, or said why not

    # Go to a case: its page, the row highlighted, and the filter named.
    where = root.locator("input.evalnb-x-goto")
    shop.act("goto", lambda: (where.fill("REFUND"), where.press("Enter")))
    assert root.locator("tr.evalnb-x-hit").get_attribute("data-case") == "refund-request"

    # "Variants differ": only cases whose two rates differ.
    toggle = root.locator("input.evalnb-x-filter-different")
    shop.act("different", lambda: toggle.check())
    for row in root.locator("tr.evalnb-x-row").all():
        rates = row.locator(".evalnb-x-rate").all_inner_texts()
        assert len(set(rates)) > 1, rates
    shop.act("different", lambda: toggle.uncheck())
    assert root.locator("tr.evalnb-x-row").count() == 4
    # "Different answers": cases whose variants' answers differ, named above the grid.
    answers = root.locator("input.evalnb-x-filter-different_answers")
    shop.act("different answers", lambda: answers.check())
    assert root.locator(".evalnb-x-filternames").inner_text() == "different answers"
    assert 1 <= root.locator("tr.evalnb-x-row").count() <= 4
    shop.act("reset", lambda: root.locator("button.evalnb-x-reset").click())
    assert root.locator(".evalnb-x-filternames").inner_text() == "no filter"
    assert root.locator(".evalnb-x-listing").inner_text().strip() == ""

    # Search: a word, a regular expression, a bad one.
    query = root.locator("input.evalnb-x-query")
    shop.act("search word", lambda: (query.fill("refund"), query.press("Enter")))
    cards = root.locator(".evalnb-x-listing .evalnb-x-sample")
    assert "refund-request" in {c for c, _, _ in shop.samples()}
    assert all("refund" in t.lower() for t in cards.all_inner_texts())
    root.locator("label.evalnb-x-regex input").check()
    shop.act("search regex", lambda: (query.fill(r"A-104[23]"), query.press("Enter")))
    assert {"order-status", "refund-request"} <= {c for c, _, _ in shop.samples()}
    assert all(re.search(r"A-104[23]", t) for t in cards.all_inner_texts())
    assert root.locator(".evalnb-x-title").inner_text() == "search (regex): A-104[23]"
    hits = root.locator(".evalnb-x-listing mark.evalnb-x-mark-hit").all_inner_texts()
    assert hits and all(re.fullmatch(r"A-104[23]", h) for h in hits), hits[:5]
    root.screenshot(path=str(ARTIFACTS / "explore-search.png"))
    shop.act("search bad regex", lambda: (query.fill("(unclosed"), query.press("Enter")))
    message = root.locator(".evalnb-x-message").inner_text()
    assert message.startswith("bad regular expression '(unclosed'") and "\n" not in message
    assert root.locator(".evalnb-x-sample").count() == 0
    root.locator("label.evalnb-x-regex input").uncheck()

    # The review panel opens at a sample; its verdict shows in the grid.
    shop.act("cell", lambda: first.locator("td.evalnb-x-cell[data-variant='v1']").click())
    card = root.locator(".evalnb-x-sample").nth(2)
    shop.act("review", lambda: card.locator("button.evalnb-x-review").click())
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .evalnb-annotator")
    panel.locator(".evalnb-header").wait_for()
    assert f"{case} · variant v1 · repeat 2" in panel.locator(".evalnb-header").inner_text()
    panel.locator("button.evalnb-fail").click()
    wait_for(lambda: len(latest_verdicts(run_dir)) == 1, "the panel's verdict on disk")
    human = root.locator(f"td.evalnb-x-cell[data-variant='v1'][data-case='{case}'] .evalnb-x-human")
    human.wait_for()
    assert human.inner_text() == "human ✓0 ✗1"
    page.wait_for_function(
        "([sel]) => document.querySelector(sel).querySelectorAll('.evalnb-x-sample')[2]"
        ".innerText.includes('human: fail (browser)')",
        arg=[EXPLORER],
    )
    # And one in place.
    card = root.locator(".evalnb-x-sample").nth(0)
    shop.act("verdict", lambda: card.locator("button.evalnb-x-mark-pass").click())
    assert "human: pass (browser)" in root.locator(".evalnb-x-sample").nth(0).inner_text()
    assert human.inner_text() == "human ✓1 ✗1"
    assert len(latest_verdicts(run_dir)) == 2
    # The filter "reviewed" with an empty search lists exactly those two.
    shop.act("reviewed", lambda: root.locator("input.evalnb-x-filter-reviewed").check())
    shop.act("search all", lambda: (query.fill(""), query.press("Enter")))
    assert shop.samples() == [(case, "v1", 0), (case, "v1", 2)]
    assert printed_selection(page, 2) == [[case, "v1", 0], [case, "v1", 2]]


def check_the_hostile(page: Any, hostile: Answers) -> None:
    root = hostile.root
    rows = root.locator("tr.evalnb-x-row")
    assert sorted(rows.all_inner_texts())[0].startswith("<b>")
    query = root.locator("input.evalnb-x-query")
    hostile.act("search all", lambda: (query.fill("$x$"), query.press("Enter")))
    assert len(hostile.samples()) == 10
    text = root.inner_text()
    for shown in (ATTACK, "it costs $x$ and $$y = 2$$", "<b>script</b> $x$", "<img src=x"):
        assert shown in text, shown
    answers = root.locator(".evalnb-x-answer").evaluate_all("els => els.map(e => e.textContent)")
    assert "before\x00after" in answers or "before\ufffdafter" in answers, answers[:3]
    assert any(a.startswith("\u05e9\u05dc\u05d5\u05dd order 7731") for a in answers)
    (long,) = [a for a in answers if a.startswith("word word")][:1]
    assert long.startswith(LONG[:20_000] + f"\n… {len(LONG) - 20_000} more characters")
    case = "<b>long</b> $x$"
    long_row = root.locator("tr.evalnb-x-row", has_text=case).first
    hostile.act("side", lambda: long_row.locator("button.evalnb-x-side").click())
    assert root.locator(".evalnb-x-side-table .evalnb-x-answer").count() == 2
    for part in (root, page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")):
        assert part.locator("script, img, mjx-container, .MathJax").count() == 0
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    assert page.evaluate("() => window.__alerted === undefined")


@pytest.mark.timeout(600)
def test_explore_in_jupyterlab(tmp_path: Path, standin: Any) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    root = tmp_path / "lab"
    root.mkdir()
    run_dir = shop_run(root / "shop", standin.base_url)
    hostile_run(root / "hostile")
    write_notebook(
        root / "explore.ipynb",
        "import json\nimport evalnb\n"
        "x = evalnb.explore('shop', annotator='browser', a='v1', b='v2', sample_page_size=10)\nx",
        "h = evalnb.explore('hostile', sample_page_size=10)\nh",
        "print(json.dumps(x.selection[['case_id', 'variant', 'repeat']].values.tolist()))",
    )
    with jupyter_lab(root) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.set_default_timeout(TIMEOUT_MS)
        page.add_init_script("window.alert = () => { window.__alerted = true; };")
        try:
            page.goto(lab.page_url("explore.ipynb"))
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            lab.wait_notebook_idle("explore.ipynb")
            page.locator(".jp-Notebook .jp-Cell").first.click()
            run_all(page)
            page.locator(EXPLORER).nth(1).locator("tr.evalnb-x-row").first.wait_for()
            lab.wait_notebook_idle("explore.ipynb")
            shop, hostile = Answers(page, 0), Answers(page, 1)
            check_the_shop(page, shop, run_dir)
            check_the_hostile(page, hostile)
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "explore-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    times = {
        f"{which}: {name}": ms
        for which, answers in (("shop", shop), ("hostile", hostile))
        for name, ms in answers.times.items()
    }
    (ARTIFACTS / "explore-timings.json").write_text(json.dumps(times, indent=1))
    every = [ms for values in times.values() for ms in values]
    assert every and all(0 <= ms < SLOW_MS for ms in every), times


NOTEBOOK_07 = "07_explore.ipynb"


@pytest.mark.timeout(900)
def test_notebook_07_after_run_all_shows_the_overview_and_reviews(tmp_path: Path) -> None:
    """Notebook 07 as a reader runs it (the tests' small settings): after Run All its explorer
    shows the overview with no filter and no samples listed; a sample's review button asks
    for a name and opens the review panel there, whose verdict is saved under that name."""
    require_chromium()
    import nbformat
    from playwright.sync_api import sync_playwright

    from tests.test_notebooks import NOTEBOOKS, QUICK
    from tests.test_notebooks_browser import run_all as run_all_cells

    root = tmp_path / "lab"
    root.mkdir()
    (tmp_path / "data").symlink_to(NOTEBOOKS.parent / "data")  # the notebook's ../data
    notebook = nbformat.read(NOTEBOOKS / NOTEBOOK_07, as_version=4)
    (at,) = [i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])]
    runs = root / "runs"
    overrides = f"{QUICK[NOTEBOOK_07]}\nRUNS_DIR = {str(runs)!r}"
    notebook.cells.insert(at + 1, nbformat.v4.new_code_cell(overrides))
    nbformat.write(notebook, root / NOTEBOOK_07)
    tracker = root / ".lab-home" / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    with jupyter_lab(root) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.set_default_timeout(TIMEOUT_MS)
        try:
            page.goto(lab.page_url(NOTEBOOK_07))
            cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
            cells.first.wait_for()
            lab.wait_notebook_idle(NOTEBOOK_07)
            cells.first.click()
            run_all_cells(page)
            page.wait_for_function(
                "() => { const p = [...document.querySelectorAll("
                "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')];"
                " return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.innerText)); }",
                timeout=600_000,
            )
            lab.wait_notebook_idle(NOTEBOOK_07)
            errors = page.locator(
                ".jp-NotebookPanel:not(.lm-mod-hidden) "
                ".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']"
            ).all_inner_texts()
            assert [e for e in errors if "Error" in e] == []
            explorer = Answers(page, 0)
            root_el = explorer.root
            root_el.scroll_into_view_if_needed()
            # Run All left it as it opened: the overview, no filter named or ticked, no list.
            root_el.locator(".evalnb-x-first").first.wait_for()
            assert root_el.locator(".evalnb-x-filternames").inner_text() == "no filter"
            assert root_el.locator(".evalnb-x-filters input:checked").count() == 0
            assert root_el.locator(".evalnb-x-listing").inner_text().strip() == ""
            rows = root_el.locator("tr.evalnb-x-row")
            assert rows.count() >= 4
            assert root_el.locator(".evalnb-x-first").count() == 2 * rows.count()
            ARTIFACTS.mkdir(exist_ok=True)
            root_el.screenshot(path=str(ARTIFACTS / "explore-07-after-run-all.png"))

            # The review button asks for a name, then opens the panel at that sample.
            first = rows.first
            case = first.get_attribute("data-case")
            explorer.act(
                "cell", lambda: first.locator("td.evalnb-x-cell[data-variant='v2']").click()
            )
            card = root_el.locator(".evalnb-x-sample").nth(1)
            card.locator("button.evalnb-x-review").click()
            who = card.locator("input.evalnb-x-who")
            who.wait_for()
            assert not page.locator(
                ".jp-NotebookPanel:not(.lm-mod-hidden) .evalnb-annotator"
            ).count()
            who.fill("reader")
            explorer.act("review", lambda: who.press("Enter"))
            assert not root_el.locator(".evalnb-x-message").inner_text()
            panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .evalnb-annotator")
            panel.locator(".evalnb-header").wait_for()
            header = panel.locator(".evalnb-header").inner_text()
            assert f"{case} · variant v2 · repeat 1" in header
            assert "reviewer reader" in panel.inner_text()
            panel.scroll_into_view_if_needed()
            panel.screenshot(path=str(ARTIFACTS / "explore-07-review.png"))
            panel.locator("button.evalnb-pass").click()
            run_dir = runs / "explore"
            wait_for(lambda: len(latest_verdicts(run_dir)) == 1, "the panel's verdict on disk")
            saved = latest_verdicts(run_dir).iloc[0]
            assert (saved["case_id"], saved["variant"], saved["repeat"]) == (case, "v2", 1)
            assert saved["annotator"] == "reader"
            # with a name, the verdict buttons show in place
            root_el.locator("button.evalnb-x-mark-pass").first.wait_for()
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "explore-07-failure.png"), full_page=True)
            raise
        finally:
            browser.close()


@pytest.mark.timeout(900)
def test_a_saved_notebook_07_shows_its_explorer_in_jupyterlab(tmp_path: Path) -> None:
    """Notebook 07 executed and saved with its widget state (as nbclient and JupyterLab save
    it), reopened in JupyterLab with every request off 127.0.0.1 refused: the explorer shows
    its overview from the saved state, before any cell runs again."""
    require_chromium()
    import nbformat
    from nbclient import NotebookClient
    from nbformat.sign import NotebookNotary
    from playwright.sync_api import Route, sync_playwright

    from tests.test_notebooks import NOTEBOOKS, QUICK

    root = tmp_path / "lab"
    root.mkdir()
    notebook = nbformat.read(NOTEBOOKS / NOTEBOOK_07, as_version=4)
    (at,) = [i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])]
    overrides = f"{QUICK[NOTEBOOK_07]}\nRUNS_DIR = {str(root / 'runs')!r}"
    notebook.cells.insert(at + 1, nbformat.v4.new_code_cell(overrides))
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    assert "application/vnd.jupyter.widget-state+json" in notebook.metadata["widgets"]
    # Signed, as JupyterLab signs a notebook its user saves (an untrusted one shows the
    # explorer's plain-table fallback instead of the widget).
    NotebookNotary().sign(notebook)
    nbformat.write(notebook, root / NOTEBOOK_07)
    with jupyter_lab(root) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.set_default_timeout(TIMEOUT_MS)
        refused: list[str] = []

        def only_loopback(route: Route) -> None:
            if route.request.url.startswith(lab.url + "/"):
                route.continue_()
            else:
                refused.append(route.request.url)
                route.abort()

        page.route("**/*", only_loopback)
        try:
            page.goto(lab.page_url(NOTEBOOK_07))
            explorer = page.locator(EXPLORER).first
            explorer.locator("tr.evalnb-x-row").first.wait_for()
            assert "v2 vs v1 on all" in explorer.locator(".evalnb-x-story").inner_text()
            assert explorer.locator("tr.evalnb-x-row").count() >= 4
            assert explorer.locator(".evalnb-x-filternames").inner_text() == "no filter"
            assert explorer.locator(".evalnb-x-listing").inner_text().strip() == ""
            assert explorer.locator(".evalnb-x-first").count() > 0
            ARTIFACTS.mkdir(exist_ok=True)
            explorer.screenshot(path=str(ARTIFACTS / "explore-07-saved-in-lab.png"))
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "explore-07-saved-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert not [u for u in refused if "unpkg" in u or "jsdelivr" in u or "widget" in u]
