"""The quickstart as a newcomer opens it: JupyterLab in Chromium, a fresh kernel, Run All,
and every figure the notebook draws is on the page (not only the first); its comparison is
decided and told with one p and an interval named by its test, the same words on the
display, in the explorer's header and in the report (screenshots of each, and of the
figure, in test-artifacts/)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.lab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, jupyter_lab, require_chromium
from tests.test_notebooks import NOTEBOOKS, QUICK, figures_drawn

pytestmark = pytest.mark.slow

NAME = "00_quickstart.ipynb"


def quick_copy(root: Path) -> int:
    """The quickstart with the tests' small settings, in ``root``; how many figures it draws."""
    notebook = nbformat.read(NOTEBOOKS / NAME, as_version=4)
    (index,) = [
        i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])
    ]
    overrides = f"{QUICK[NAME]}\nRUNS_DIR = {str(root / 'runs')!r}"
    notebook.cells.insert(index + 1, nbformat.v4.new_code_cell(overrides))
    nbformat.write(notebook, root / NAME)
    return sum(figures_drawn(c.source) for c in notebook.cells if c.cell_type == "code")


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


@pytest.mark.timeout(600)
def test_the_quickstart_shows_every_figure_in_jupyterlab(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    root = tmp_path / "lab"
    root.mkdir()
    shutil.copytree(NOTEBOOKS.parent / "data", tmp_path / "data")  # the notebook's ../data
    expected = quick_copy(root)
    assert expected == 3
    # Every cell in the page, not only those scrolled into view (JupyterLab's windowing
    # leaves cells out of the DOM until they are shown): the count is of the whole notebook.
    tracker = root / ".lab-home" / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    with jupyter_lab(root) as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(lab.page_url(NAME))
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
        notebook.locator(".jp-Cell").first.wait_for()
        lab.wait_notebook_idle(NAME)
        notebook.locator(".jp-Cell").first.click()
        run_all(page)
        # Done when every code cell has its execution number and the kernel is idle again.
        ARTIFACTS.mkdir(exist_ok=True)
        try:
            page.wait_for_function(
                "() => { const p = [...document.querySelectorAll("
                "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')];"
                " return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.innerText)); }",
                timeout=300_000,
            )
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "quickstart-stuck.png"), full_page=True)
            prompts = notebook.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
            raise AssertionError(f"the notebook did not finish: prompts {prompts}") from None
        lab.wait_notebook_idle(NAME)
        errors = notebook.locator(
            ".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']"
        )
        figures = notebook.locator(".jp-RenderedImage img")
        figures.nth(expected - 1).scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "quickstart-figures.png"))
        shown = figures.count()
        widths = [figures.nth(i).evaluate("img => img.naturalWidth") for i in range(shown)]
        errors_text = errors.all_inner_texts()
        told = told_in_lab(page, notebook)
        report = root / "runs" / "shop40-report.html"
        page.goto(report.as_uri())
        # the Verdicts section: everything from its heading to the next
        in_report = " ".join(
            page.evaluate(
                """() => { const h = [...document.querySelectorAll('h2')]
                  .find(e => e.textContent === 'Verdicts'); let text = '';
                  for (let e = h.nextElementSibling; e && e.tagName !== 'H2';
                       e = e.nextElementSibling) text += ' ' + e.innerText;
                  return text; }"""
            ).split()
        )
        page.screenshot(path=str(ARTIFACTS / "quickstart-report.png"))
        browser.close()
    assert errors_text == []
    assert shown == expected
    assert all(w > 100 for w in widths), widths
    display, few_display, header = told
    # decided, one p, the interval named by the test that made it; the same words everywhere
    found = re.search(
        r"v2 better · v2 vs v1 on all: \+\d+\.\d pp, (95% CI \+\d+\.\d to \+\d+\.\d pp and "
        r"p (?:=|<) 0\.\d{3} \(paired t across cases\)); ",
        display,
    )
    assert found, display
    said = found[1]
    assert len(re.findall(r"\bp (?:=|<) ", display)) == 1, display
    assert said in header, header
    assert said in in_report, in_report
    few = re.search(r"4 cases cannot bound the difference at 95% and p = 0\.\d{3}", few_display)
    assert few and "on these 4 cases only: 95% CI" in few_display, few_display
    assert "-100.0" not in few_display


def told_in_lab(page: Any, notebook: Any) -> tuple[str, str, str]:
    """What the page shows of the comparisons: compare's displays (screenshot of the first),
    the figure of the decided one and the 4-case one, and the explorer's header line."""

    def output_of(code: str) -> Any:
        cell = notebook.locator(".jp-CodeCell").filter(
            has=page.locator(".jp-InputArea", has_text=code)
        )
        return cell.first.locator(".jp-OutputArea")

    shown = output_of("comparison = evalnb.compare(run, a=")
    shown.scroll_into_view_if_needed()
    shown.screenshot(path=str(ARTIFACTS / "quickstart-display.png"))
    display = " ".join(shown.locator(".evalnb-result").first.inner_text().split())
    plot = output_of("evalnb.plot_compare(comparison,")
    plot.scroll_into_view_if_needed()
    plot.screenshot(path=str(ARTIFACTS / "quickstart-plot.png"))
    few = output_of("few = evalnb.compare(four")
    few_display = " ".join(few.locator(".evalnb-result").first.inner_text().split())
    few_plot = output_of("evalnb.plot_compare(few,")
    few_plot.scroll_into_view_if_needed()
    few_plot.screenshot(path=str(ARTIFACTS / "quickstart-plot-4-cases.png"))
    explorer = output_of('evalnb.explore(run, a="v1", b="v2")')
    line = explorer.get_by_text("v2 vs v1 on all").first  # the explorer's header line
    line.wait_for(timeout=60_000)
    line.scroll_into_view_if_needed()
    line.screenshot(path=str(ARTIFACTS / "quickstart-explorer-header.png"))
    header = " ".join(line.inner_text().split())
    return display, few_display, header
