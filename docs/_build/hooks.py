"""MkDocs hooks for the evalnb site (``mkdocs.yml``, ``hooks:``).

The notebooks live in ``notebooks/`` at the top of the repository, outside ``docs/``;
``on_files`` adds them to the site as ``notebooks/NAME.ipynb`` pages, which mkdocs-jupyter
then renders, so the docs link them as ``notebooks/00_quickstart.ipynb``.

``on_page_content`` gives a notebook's repeated heading a unique id: nbconvert gives two
headings of the same text the same id, while the page's table of contents links the second
as ``#id_1``, as MkDocs does.

The widgets need no network: nbconvert's page would fetch the widgets' script (the
``@jupyter-widgets/html-manager`` bundle) from unpkg.com, and nothing on this site comes
from outside. ``on_page_content`` takes that loader out of each notebook page and puts in
evalnb's own (:file:`evalnb/explorer/saved.js`, copied to ``assets/evalnb-saved.js`` by
``on_post_build``), which draws the explorer and the review panel from the widget state
saved with the executed notebook: the same page the kernel drew, without a kernel.

``EVALNB_DOCS_EXECUTE_ONLY`` (notebook file names, comma-separated) executes only those
notebooks and renders the others as stored: the docs test builds the site so, with
notebook 07 executed, to open its explorer in a browser with no network.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
SAVED_JS = ROOT / "evalnb" / "explorer" / "saved.js"
SAVED_URL = "assets/evalnb-saved.js"


def on_config(config: Any) -> Any:
    only = [n.strip() for n in os.environ.get("EVALNB_DOCS_EXECUTE_ONLY", "").split(",")]
    only = [n for n in only if n]
    if only:
        names = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
        unknown = sorted(set(only) - names)
        if unknown:
            raise ValueError(
                f"EVALNB_DOCS_EXECUTE_ONLY must name notebooks of notebooks/; got {unknown!r}"
            )
        jupyter = config["plugins"]["mkdocs-jupyter"].config
        jupyter["execute"] = True
        jupyter["execute_ignore"] = [f"notebooks/{n}" for n in sorted(names - set(only))]
    return config


@event_priority(100)  # before mkdocs-jupyter turns .ipynb files into pages
def on_files(files: Files, config: Any) -> Files:
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        files.append(
            File(
                f"notebooks/{path.name}",
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


_HEADING = re.compile(r'<h([1-6])([^>]*?) id="([^"]+)"(.*?)</h\1>', re.S)


# nbconvert's loader of the widgets' script from a CDN (templates/base/jupyter_widgets.html.j2)
_CDN_LOADER = re.compile(
    r"<script>\s*\(function\(\) \{\s*function addWidgetsRenderer\(\).*?</script>", re.S
)


def on_page_content(html: str, page: Page, **kwargs: Any) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    html = _widgets_offline(html, page)
    seen: dict[str, int] = {}

    def unique(match: re.Match[str]) -> str:
        level, attrs, ident, rest = match.groups()
        count = seen.get(ident, 0)
        seen[ident] = count + 1
        if count == 0:
            return match.group(0)
        new = f"{ident}_{count}"
        rest = rest.replace(f'href="#{ident}"', f'href="#{new}"')
        return f'<h{level}{attrs} id="{new}"{rest}</h{level}>'

    return _HEADING.sub(unique, html)


def _widgets_offline(html: str, page: Page) -> str:
    """``html`` without the CDN loader of the widgets' script, and with evalnb's own when
    the page holds saved widget state."""
    html = _CDN_LOADER.sub("", html)
    if "application/vnd.jupyter.widget-state+json" not in html:
        return html
    depth = page.file.url.count("/")
    src = "../" * depth + SAVED_URL
    return html + f'\n<script type="module" src="{src}"></script>\n'


def on_post_build(config: Any) -> None:
    target = Path(config["site_dir"]) / SAVED_URL
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SAVED_JS, target)
