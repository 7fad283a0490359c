"""Write the guide's pictures of the explorer and the review panel, docs/img/explore-*.png and
docs/img/review-panel.png, from a shop run on the embedded stand-in.

    .venv/bin/python docs/make_widget_images.py

It runs the shop assistant (v1 and v2, the stand-in's fixed seed), opens the explorer in a few
states (the overview; a case side by side; a search) and the review panel, saves each
widget's state as a notebook would, and draws each in a page as the documentation site does
(evalnb/explorer/saved.js, no kernel), served on 127.0.0.1 and shot in headless Chromium
(Debian's /usr/bin/chromium, through Playwright) with every other request refused.
"""

from __future__ import annotations

import functools
import http.server
import json
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import evalnb  # noqa: E402
from evalnb.standin import StandIn  # noqa: E402

IMAGES = ROOT / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
WIDTH = 1100
# The pictures show the widgets, not the note a saved copy carries.
PAGE_CSS = (
    f"body {{ font-family: sans-serif; margin: 12px; width: {WIDTH - 24}px; background: #fff; }}"
    " .evalnb-x-static-note { display: none; }"
)


def shop_run(where: Path) -> Path:
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1")
        variants = [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]
        result = evalnb.run(
            ROOT / "data" / "cases" / "shop.jsonl",
            target,
            variants=variants,
            repeats=5,
            out=where / "shop",
            progress=False,
        )
    return Path(result.path)


def widgets(run_dir: Path) -> dict[str, Any]:
    """The widgets to draw, by picture name, each in the state it shows."""
    run = evalnb.load(run_dir)
    overview = evalnb.explore(run, a="v1", b="v2")
    overview.goto(1)  # the cells' first answers, as the page asks for them once it shows
    side = evalnb.explore(run, a="v1", b="v2", sample_page_size=2)
    side.side_by_side("order-status")
    side.goto(1)
    search = evalnb.explore(run, a="v1", b="v2", sample_page_size=2)
    search.search("A-1042")
    search.goto(1)
    panel = evalnb.annotate(run, "ana", a="v1", b="v2")
    return {
        "explore-overview": overview,
        "explore-side-by-side": side.view,
        "explore-search": search.view,
        "review-panel": panel,
    }


def page(widget: Any) -> str:
    """A page holding ``widget``'s saved state and view, drawn by saved.js."""
    from ipywidgets.embed import dependency_state

    state = {
        "version_major": 2,
        "version_minor": 0,
        "state": dependency_state([widget], drop_defaults=False),
    }
    view = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<style>{PAGE_CSS}</style></head><body><div id='shot'>"
        f"<script type='application/vnd.jupyter.widget-view+json'>{_json(view)}</script>"
        f"</div><script type='application/vnd.jupyter.widget-state+json'>{_json(state)}"
        "</script><script type='module' src='saved.js'></script></body></html>"
    )


def _json(value: Any) -> str:
    """``value`` as JSON inside a script element: ``</`` written ``<\\/`` cannot close it."""
    return json.dumps(value).replace("</", "<\\/")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def shoot(pages: dict[str, str], where: Path) -> dict[str, bytes]:
    from playwright.sync_api import Route, sync_playwright

    (where / "saved.js").write_bytes((ROOT / "evalnb" / "explorer" / "saved.js").read_bytes())
    for name, text in pages.items():
        (where / f"{name}.html").write_text(text, encoding="utf-8")
    handler = functools.partial(_Quiet, directory=str(where))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    shots = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            tab = browser.new_page(viewport={"width": WIDTH, "height": 900})

            def only_loopback(route: Route) -> None:
                if route.request.url.startswith(base):
                    route.continue_()
                else:
                    route.abort()

            tab.route("**/*", only_loopback)
            for name in pages:
                tab.goto(f"{base}{name}.html")
                tab.wait_for_function("() => document.documentElement.dataset.evalnbSaved")
                drawn = tab.locator(".evalnb-saved-widget")
                if drawn.count() != 1 or not drawn.inner_text().strip():
                    sys.exit(f"make_widget_images: {name} was not drawn")
                shots[name] = drawn.screenshot()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return shots


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="evalnb-widget-images-") as tmp:
        where = Path(tmp)
        drawn = {name: page(w) for name, w in widgets(shop_run(where)).items()}
        shots = shoot(drawn, where)
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, data in shots.items():
        path = IMAGES / f"{name}.png"
        path.write_bytes(data)
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
