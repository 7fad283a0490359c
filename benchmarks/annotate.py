"""How fast the review panel is built and moves on a run of 100,000 samples.

Building: each build in a fresh interpreter (a full garbage collection after its imports, as a
notebook's imports are long done when a panel is built), ``evalnb.load`` timed apart from
``annotate``;
the same-run baseline is ``evalnb/review/`` as of ``--before`` (default 5f09da2, before the
build was made lazy), read from git and built against this tree's analysis and store.
Rounds alternate before and after; medians and best are reported.

Clicks are made through the widgets themselves (no front end attached), so the figures are
the panel's own work per click: what the kernel spends before the browser can redraw; a
200-sample run is the baseline.

    .venv/bin/python benchmarks/annotate.py [--rounds 5] [--before REV] [--repeats 500]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalnb.analysis import load
from evalnb.review import annotate
from tests.builders import write_run

ROOT = Path(__file__).resolve().parent.parent

# The child: imports first, then load and build, each timed.
CHILD = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[2])
from evalnb.analysis import load
import ipywidgets
if sys.argv[3] == "before":
    from review_before import annotate
else:
    from evalnb.review import annotate
# The interpreter's first full collection after the imports (about 240,000 objects scanned,
# 0.1 s, nothing freed) would otherwise land in whatever is timed first; in a notebook the
# imports ran long before. Both versions alike.
gc.collect()
started = time.perf_counter()
run = load(sys.argv[1])
loaded = time.perf_counter()
panel = annotate(run, "bench")
built = time.perf_counter()
print(json.dumps({"load": loaded - started, "build": built - loaded, "count": panel.count}))
"""


def median(values) -> float:
    # Not the statistics module: benchmarks/coverage.py shadows it when a script here runs.
    return float(np.median(list(values)))


def mean(values) -> float:
    return float(np.mean(list(values)))


def rows(cases: int, repeats: int) -> list[dict]:
    return [
        {
            "case_id": f"case-{c:03d}",
            "variant": v,
            "repeat": r,
            "answer": f"answer {c} {v} {r} " * 10,
            "checks": {"a": (r + c) % 3 != 0, "b": r % 5 != 0, "c": None},
        }
        for c in range(cases)
        for v in ("v1", "v2")
        for r in range(repeats)
    ]


def timed(action, times: int) -> tuple[float, float, float]:
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    seconds.sort()
    return (
        mean(seconds) * 1e3,
        seconds[len(seconds) // 2] * 1e3,
        seconds[int(0.99 * len(seconds))] * 1e3,
    )


def review_before(revision: str, into: Path) -> None:
    """``evalnb/review/`` as of ``revision``, as the package ``review_before`` in ``into``."""
    package = into / "review_before"
    package.mkdir()
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{revision}:evalnb/review/"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout.split()
    for name in names:
        source = subprocess.run(
            ["git", "show", f"{revision}:evalnb/review/{name}"],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        ).stdout
        (package / name).write_text(source.replace("evalnb.review", "review_before"))


def builds(big: Path, tmp: Path, rounds: int, before: bool = True) -> dict[str, list[dict]]:
    """Load and build times of the panel, before and after, rounds alternating."""
    times: dict[str, list[dict]] = {"before": [], "after": []} if before else {"after": []}
    for r in range(rounds):
        for version in ("before", "after") if r % 2 == 0 else ("after", "before"):
            if version not in times:
                continue
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(big), str(tmp), version],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout
            times[version].append(json.loads(out.strip().splitlines()[-1]))
            print(f"  round {r + 1}: {version}: {times[version][-1]}", flush=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--before",
        default="5f09da2",
        help="git revision of the baseline build ('none': only this tree's; the old panel "
        "reads store modules that have since moved)",
    )
    parser.add_argument(
        "--repeats", type=int, default=500, help="repeats per case and variant (1000: 200,000)"
    )
    args = parser.parse_args()
    big_n = f"{100 * 2 * args.repeats:,}"
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        write_run(big, rows(100, args.repeats), batch=5000)
        write_run(small, rows(4, 25), batch=5000)
        baseline = args.before != "none"
        if baseline:
            review_before(args.before, Path(tmp))
        built = builds(big, Path(tmp), args.rounds, baseline)
        panel = annotate(load(big), "bench")
        little = annotate(load(small), "bench")

        def next_small() -> None:
            little.next_button.click() if little.at + 1 < little.count else little.go(0)

        results = {
            f"next, {big_n} samples": timed(panel.next_button.click, 2000),
            "next, 200 samples (baseline)": timed(next_small, 2000),
            f"previous, {big_n} samples": timed(panel.previous_button.click, 1000),
            "verdict (Parquet part + fsync, the live number redrawn)": timed(
                panel.fail_button.click, 200
            ),
            "verdict, 200 samples (baseline)": timed(little.fail_button.click, 100),
        }
        panel.go(0)

        def flip() -> None:
            panel.failing_only.value = not panel.failing_only.value

        results[f"filter change, {big_n} samples"] = timed(flip, 20)
    print(f"\nbuilding the panel on {big_n} samples, {args.rounds} rounds (before = {args.before})")
    print("| version | annotate(run), median | best | evalnb.load, median |")
    print("|---|---|---|---|")
    for version, values in built.items():
        build = [v["build"] for v in values]
        load_median = median(v["load"] for v in values)
        print(f"| {version} | {median(build):.2f} s | {min(build):.2f} s | {load_median:.2f} s |")
    print()
    print("| action | mean | median | p99 |")
    print("|---|---|---|---|")
    for name, (average, middle, p99) in results.items():
        print(f"| {name} | {average:.2f} ms | {middle:.2f} ms | {p99:.2f} ms |")


if __name__ == "__main__":
    main()
