"""``evalnb report --html`` on runs of 100 and 1,000 cases, this tree beside an earlier one.

Each measurement is a fresh interpreter doing what ``evalnb report RUN --html FILE`` does:
load the run, render the text report and the HTML page, write the page. It reports the time
after its imports (the goal: 100 cases <= 1 s, 1,000 cases <= 5 s, interpreter start and
imports excluded) and the imports apart; the imports end with a full garbage collection (the
interpreter's first after them, which would otherwise land in the work timed). The same-run
baseline is ``evalnb/report/_render.py`` as of ``--before`` (default 5f09da2, the last commit before
the figures were cut to the cases to look at), read from git and run against this tree's
analysis and plots. "after" draws the figures in as many processes as ``evalnb report`` does
(the CPUs it may use); "after, 1 process" draws them all in one. The order of the three
rotates each round; medians and best of the rounds are reported.

The runs: 2 variants x 10 repeats per case, 3 checks (one unscored for a tenth of the
cases), 1% of samples timed out, latencies log-normal, per-case pass rates from a beta
distribution; written by evalnb's own store.

    .venv/bin/python benchmarks/report.py [--rounds 5] [--before REV]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.builders import write_run

ROOT = Path(__file__).resolve().parent.parent

SIZES = (100, 1_000)

# The child: imports first (timed apart), then what `evalnb report RUN --html FILE` does.
CHILD = """
import gc, importlib.util, inspect, json, os, sys, time
started = time.perf_counter()
from evalnb.analysis import load
import evalnb.plots
if sys.argv[2] in ("-", "1"):
    import evalnb.report._report as report
else:
    spec = importlib.util.spec_from_file_location("report_before", sys.argv[2])
    report = sys.modules["report_before"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
# The interpreter's first full collection after the imports (0.1 s, nothing freed) is
# counted with the imports, not with the first thing timed. Both versions alike.
gc.collect()
imported = time.perf_counter()
run = load(sys.argv[1])
if hasattr(report, "render_report"):  # one analysis for both, as `evalnb report --html` does
    # As many drawing processes as `evalnb report` uses ("1": one, for comparison).
    cpus = 1 if sys.argv[2] == "1" else len(os.sched_getaffinity(0))
    takes = "processes" in inspect.signature(report.render_report).parameters
    drawing = {"processes": cpus} if takes else {}
    text, page = report.render_report(run, html=True, **drawing)
else:
    text, page = report.report_text(run), report.report_html(run)
with open(sys.argv[3], "w", encoding="utf-8") as handle:
    handle.write(page)
done = time.perf_counter()
print(json.dumps({"imports": imported - started, "work": done - imported, "bytes": len(page)}))
"""


def median(values) -> float:
    # Not the statistics module: benchmarks/coverage.py shadows it when a script here runs.
    return float(np.median(list(values)))


def rows(cases: int, repeats: int = 10, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    variants = ("v1", "v2")
    rate = {
        (c, v): rng.betavariate(4 + 2 * i, 2) for c in range(cases) for i, v in enumerate(variants)
    }
    out = []
    for c in range(cases):
        for r in range(repeats):
            for v in variants:
                p = rate[(c, v)]
                ok = rng.random() > 0.01
                out.append(
                    {
                        "case_id": f"case-{c:04d}",
                        "variant": v,
                        "repeat": r,
                        "status": "completed" if ok else "timeout",
                        "latency_ms": rng.lognormvariate(6, 0.5),
                        "checks": {
                            "contains": ok and rng.random() < p,
                            "json": ok and rng.random() < (p + 1) / 2,
                            "words": None if c % 10 == 0 else ok and rng.random() < 0.9,
                        },
                    }
                )
    return out


def once(run: Path, module: str, page: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(run), module, str(page)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", default="5f09da2", help="git revision of the baseline")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        before = tmp / "report_before.py"
        before.write_text(
            subprocess.run(
                ["git", "show", f"{args.before}:evalnb/report.py"],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout
        )
        runs = {n: write_run(tmp / f"cases{n}", rows(n), batch=5_000) for n in SIZES}
        versions = {"before": str(before), "after": "-", "after, 1 process": "1"}
        results: dict[tuple[int, str], list[dict]] = {}
        for r in range(args.rounds):
            order = list(versions)[r % 3 :] + list(versions)[: r % 3]
            for n in SIZES:
                for name in order:
                    result = once(runs[n], versions[name], tmp / f"{name}{n}.html")
                    results.setdefault((n, name), []).append(result)
                    print(f"  round {r + 1}: {n} cases, {name}: {result}", flush=True)
    print(f"\n{args.rounds} rounds, fresh interpreter each; before = {args.before}\n")
    print("| cases | version | work, median | work, best | imports, median | page |")
    print("|---|---|---|---|---|---|")
    for (n, name), values in results.items():
        work = [v["work"] for v in values]
        imports = median(v["imports"] for v in values)
        print(
            f"| {n:,} | {name} | {median(work):.2f} s | {min(work):.2f} s "
            f"| {imports:.2f} s | {values[-1]['bytes'] / 1e6:.2f} MB |"
        )
    for n in SIZES:
        ratio = median(v["work"] for v in results[(n, "before")]) / median(
            v["work"] for v in results[(n, "after")]
        )
        print(f"{n:,} cases: before / after (medians) {ratio:.1f}x")


if __name__ == "__main__":
    main()
