"""Write the README's plot images, docs/img/*.png, from demo runs on the embedded stand-in.

    .venv/bin/python docs/make_images.py

It makes the runs ``evalnb demo`` and the extraction example make (in a temporary
directory, with the stand-in's fixed seed) and draws each plot from them. Every image
but the latency one comes out the same each time; latencies are measured wall-clock
times, so that one varies a little from machine to machine.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import warnings
from pathlib import Path

import evalnb
from evalnb.cli import main
from evalnb.plots import (
    plot_agreement,
    plot_compare,
    plot_intervals,
    plot_latency,
    plot_power,
    render_png,
)

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "img"
SEED = 0


def make_runs(where: Path) -> tuple[Path, Path]:
    """The shop comparison (v1 vs v2) and the extraction run (agreement minimums)."""
    shop, extract = where / "shop", where / "extract"
    commands = [
        ["demo", "--out", str(shop), "--seed", str(SEED), "--no-progress"],
        [
            "run", str(ROOT / "data" / "cases" / "extract.jsonl"), "--standin",
            "--model", "extractor", "--param", "temperature=0.7", "--repeats", "10",
            "--out", str(extract), "--no-progress",
        ],
    ]  # fmt: skip
    for argv in commands:
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        if code:
            sys.exit(f"make_images: evalnb {' '.join(argv)} failed with exit code {code}")
    return shop, extract


def draw(shop_dir: Path, extract_dir: Path) -> dict[str, bytes]:
    shop, extract = evalnb.load(shop_dir), evalnb.load(extract_dir)
    with warnings.catch_warnings():
        # Four cases are few, and suite_rate says so; the picture shows how wide that is.
        warnings.simplefilter("ignore", UserWarning)
        suite = evalnb.suite_rate(shop)
    return {
        "intervals": render_png(plot_intervals, evalnb.rates(shop), suite=suite),
        "compare": render_png(plot_compare, evalnb.compare(shop), evalnb.compare_cases(shop)),
        "agreement": render_png(plot_agreement, evalnb.agreement(extract)),
        "latency": render_png(plot_latency, shop),
        "power": render_png(plot_power, evalnb.power(shop, repeats=[1, 2, 5, 10, 25, 50, 100])),
    }


def write(images: dict[str, bytes]) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, data in images.items():
        path = IMAGES / f"{name}.png"
        path.write_bytes(data)
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="evalnb-images-") as tmp:
        write(draw(*make_runs(Path(tmp))))
