"""The quickstart as a newcomer opens it: JupyterLab in Chromium, a fresh kernel, Run All,
and every figure the notebook draws is on the page (not only the first)."""

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
    assert expected == 2
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
        browser.close()
    assert errors_text == []
    assert shown == expected
    assert all(w > 100 for w in widths), widths
