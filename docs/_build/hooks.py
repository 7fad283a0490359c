"""MkDocs hooks for the evalnb site (``mkdocs.yml``, ``hooks:``).

The notebooks live in ``notebooks/`` at the top of the repository, outside ``docs/``;
``on_files`` adds them to the site as ``notebooks/NAME.ipynb`` pages, which mkdocs-jupyter
then renders, so the docs link them as ``notebooks/00_quickstart.ipynb``.

``on_page_content`` gives a notebook's repeated heading a unique id: nbconvert gives two
headings of the same text the same id, while the page's table of contents links the second
as ``#id_1``, as MkDocs does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]


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


def on_page_content(html: str, page: Page, **kwargs: Any) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return html
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
