"""How fast the review panel moves on a run of 100,000 samples, beside a 200-sample run.

Clicks are made through the widgets themselves (no front end attached), so the figures are
the panel's own work per click: what the kernel spends before the browser can redraw.

    .venv/bin/python benchmarks/annotate.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalnb.analysis import load
from evalnb.annotate import annotate
from tests.test_analysis_runs import write_run


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
        statistics.mean(seconds) * 1e3,
        seconds[len(seconds) // 2] * 1e3,
        seconds[int(0.99 * len(seconds))] * 1e3,
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        write_run(big, rows(100, 500), batch=5000)
        write_run(small, rows(4, 25), batch=5000)
        started = time.perf_counter()
        panel = annotate(load(big), "bench")
        built = time.perf_counter() - started
        little = annotate(load(small), "bench")

        def next_small() -> None:
            little.next_button.click() if little.at + 1 < little.count else little.go(0)

        results = {
            "next, 100,000 samples": timed(panel.next_button.click, 2000),
            "next, 200 samples (baseline)": timed(next_small, 2000),
            "previous, 100,000 samples": timed(panel.previous_button.click, 1000),
            "verdict (Parquet part + fsync)": timed(panel.fail_button.click, 200),
        }
        panel.go(0)

        def flip() -> None:
            panel.failing_only.value = not panel.failing_only.value

        results["filter change, 100,000 samples"] = timed(flip, 20)
    print(f"panel built on 100,000 samples in {built:.2f} s")
    print("| action | mean | median | p99 |")
    print("|---|---|---|---|")
    for name, (mean, median, p99) in results.items():
        print(f"| {name} | {mean:.2f} ms | {median:.2f} ms | {p99:.2f} ms |")


if __name__ == "__main__":
    main()
