"""The documentation site builds without a warning and holds together, and the README stays a
front page that says how to open the notebooks.

The site is built once, as ``make docs`` builds it but with the notebooks rendered as stored
(``tests/test_notebooks.py`` executes them already), into a temporary folder.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = ("http:", "https:", "mailto:", "data:", "javascript:", "//")


def public_names() -> list[str]:
    """Every public name of evalnb (``__all__``, read from ``evalnb/__init__.pyi``)."""
    import evalnb

    return sorted(evalnb.__all__)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "EVALNB_DOCS_EXECUTE": "false", "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    warnings = [line for line in log.splitlines() if re.match(r"(WARNING|ERROR)\b", line)]
    assert warnings == [], "\n".join(warnings)
    return out


class _Page(HTMLParser):
    """The links (href, src) and the anchors (id, name) of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is None:
                continue
            if key in ("href", "src"):
                self.links.append(value)
            elif key == "id" or (key == "name" and tag == "a"):
                self.anchors.add(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_every_public_name_is_in_the_api_reference(site: Path) -> None:
    ids: set[str] = set()
    for page in (site / "reference").glob("*.html"):
        ids |= _parse(page).anchors
    names = public_names()
    assert len(names) > 50  # the stub was read
    missing = [n for n in names if f"evalnb.{n}" not in ids]
    assert missing == [], f"add `::: evalnb.NAME` to a page of docs/reference/: {missing}"


def test_the_guide_documents_calibrate_and_cases_in_python(site: Path) -> None:
    review = (site / "guide" / "review.html").read_text(encoding="utf-8")
    assert "evalnb.calibrate(run" in re.sub(r"<[^>]+>", "", review)
    cases = re.sub(r"<[^>]+>", "", (site / "guide" / "cases.html").read_text(encoding="utf-8"))
    assert "evalnb.Case(" in cases


def test_every_notebook_has_its_page(site: Path) -> None:
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) == 9
    for name in notebooks:
        page = site / "notebooks" / f"{name}.html"
        assert page.is_file(), name
        assert "jupyter-wrapper" in page.read_text(encoding="utf-8"), name


def test_no_internal_link_is_broken(site: Path) -> None:
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    assert len(pages) > 30
    broken = []
    for path, page in pages.items():
        for link in page.links:
            if link.startswith(EXTERNAL) or not link.strip():
                continue
            parts = urlsplit(link)
            if parts.scheme:  # another scheme a browser would hand elsewhere
                continue
            if parts.path.startswith("/"):  # 404.html: served at any depth, rooted links
                target = (site / unquote(parts.path).lstrip("/")).resolve()
            elif parts.path:
                target = (path.parent / unquote(parts.path)).resolve()
            else:
                target = path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site)}: {link}"
            if not target.is_file() or not target.is_relative_to(site.resolve()):
                broken.append(f"{where} (no {target})")
            elif parts.fragment and target.suffix == ".html":
                anchors = pages[target].anchors if target in pages else _parse(target).anchors
                if unquote(parts.fragment) not in anchors:
                    broken.append(f"{where} (no anchor #{parts.fragment})")
    assert broken == [], "\n".join(broken)


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"the README has {len(lines)} lines: move detail into docs/"
    first_screen = "\n".join(lines[:40])
    assert "make lab" in first_screen
    assert "make demo" in first_screen and "make test" in first_screen


def test_the_readmes_links_resolve() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert any(link.startswith("docs/") for link in links)
    missing = [
        link
        for link in links
        if not link.startswith(EXTERNAL) and not (ROOT / link.split("#")[0]).exists()
    ]
    assert missing == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_make_lab_serves_the_notebooks_on_loopback() -> None:
    port = _free_port()
    # -o: use the .venv as it is (the test runs from it), never reinstall it here.
    lab = subprocess.Popen(
        ["make", "-s", "-o", ".venv/bin/.installed", "lab", f"LAB_PORT={port}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert lab.stdout is not None
        first = [lab.stdout.readline() for _ in range(2)]
        urls = re.findall(rf"http://127\.0\.0\.1:{port}/lab\?token=\S+", "".join(first))
        assert urls, first
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(urls[0], timeout=5) as reply:
                    page = reply.read().decode()
                break
            except OSError:
                assert lab.poll() is None, lab.stdout.read()
                assert time.monotonic() < deadline, "JupyterLab did not answer in 90 s"
                time.sleep(0.5)
        assert "JupyterLab" in page
        api = urls[0].replace("/lab?", "/api/contents?")
        with urllib.request.urlopen(api, timeout=10) as reply:
            listing = reply.read().decode()
        assert "00_quickstart.ipynb" in listing  # served from notebooks/
    finally:
        os.killpg(lab.pid, 15)
        lab.wait(timeout=30)
        if lab.stdout is not None:
            lab.stdout.close()


_NUMBERS = {
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip


def test_the_notebooks_table_and_counts_name_every_notebook() -> None:
    """The guide's table lists every notebook in notebooks/, the index links each, and every
    count of notebooks in the README and the docs is the number there is."""
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    guide = (ROOT / "docs" / "guide" / "notebooks.md").read_text(encoding="utf-8")
    table = re.findall(r"^\| \[`(\w+)`\]\(\.\./notebooks/(\w+)\.ipynb\) \|", guide, flags=re.M)
    assert [name for name, _ in table] == notebooks
    assert all(name == target for name, target in table)
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert sorted(set(re.findall(r"\(notebooks/(\w+)\.ipynb\)", index))) == notebooks
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for word in re.findall(r"\b(\w+) (?:notebooks|stories)\b", text, flags=re.I):
            if word.lower() in _NUMBERS:
                assert _NUMBERS[word.lower()] == len(notebooks), (page.name, word)
