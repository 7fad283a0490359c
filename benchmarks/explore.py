"""How fast the explorer opens and answers on a run of 100,000 samples, and how big its page is.

The run: 1,000 cases x 2 variants x 50 repeats (``--cases``, ``--repeats``), three checks per
sample, written by evalnb's store (real Parquet). Each round runs in a fresh interpreter (a
full garbage collection after its imports, as a notebook's imports are long done when a
widget is made) and times, beside each other, ``evalnb.load`` (the baseline: reading the
run), ``evalnb.rates`` per case and variant (the analysis the overview is made of) and
``explore(run)`` (the kernel side of opening). Then the clicks, through the widget's own
message handler (no front end: the kernel's work per click), and the size of the synced
state (the JSON of the widget's traits) after each one. Rounds are reported as medians.

    .venv/bin/python benchmarks/explore.py [--rounds 3] [--cases 1000] [--repeats 50]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.builders import write_run

CHILD = r"""
import gc, json, sys, threading, time
sys.path.insert(0, sys.argv[2])
import evalnb
from evalnb.analysis import load, rates
from evalnb.explorer import explore
import ipywidgets, anywidget, regex
gc.collect()
out = {}
def timed(name, action):
    wall, cpu = time.perf_counter(), time.process_time()
    value = action()
    out[name] = time.perf_counter() - wall
    out[name + "_cpu"] = time.process_time() - cpu
    return value

run = timed("load", lambda: load(sys.argv[1]))
timed("rates", lambda: rates(run, by=["case_id", "variant"], check="all"))
run = load(sys.argv[1])
x = timed("open", lambda: explore(run, annotator="bench"))

def size():
    v = x.view
    return len(json.dumps([v.header, v.overview, v.listing, v.controls, v.message]).encode())

out["state_open"] = size()
# The widget reads and lower-cases the text columns on a worker thread once it shows; the
# clicks below come after it, as a person's do (they read the overview first).
wall, cpu = time.perf_counter(), time.process_time()
for thread in threading.enumerate():
    if thread.name == "evalnb-explore-warm":
        thread.join()
out["warm"] = time.perf_counter() - wall
out["warm_cpu"] = time.process_time() - cpu
seq = 0
def click(name, **fields):
    global seq
    seq += 1
    t, cpu = time.perf_counter(), time.process_time()
    x._handle(x.view, {"seq": seq, "action": name, **fields}, [])
    took, cpu = time.perf_counter() - t, time.process_time() - cpu
    assert x.view.answered == seq and not x.view.message, x.view.message
    out.setdefault("clicks", []).append([name + json.dumps(fields)[:60], took, size(), cpu])

# The page asks for the overview once more as it shows, for the cells' first answers.
click("grid_page", page=0)
click("cell", case_id="case-0007", variant="v1")
click("cell", case_id="case-0420", variant="v2")
click("list_page", page=1)
click("list_page", page=4)
click("side", case_id="case-0420")
click("side_view", view="plain")
click("side_view", view="diff")
click("grid_page", page=3)
click("goto", target="40")
click("goto", target="case-0999")
click("sort", sort="rate:v1", descending=False)
click("filters", filters={"failing": True})
click("search", query="answer 7", regex=False)
click("search", query="answer 8 v2", regex=False)
click("search", query=r"answer 9\d v2", regex=True)
click("filters", filters={"failing": False, "flaky": True})
# The first verdict also opens the run's verdict store.
click("verdict", position=int(x.view.listing["samples"][0]["position"]), verdict="fail")
click("verdict", position=int(x.view.listing["samples"][1]["position"]), verdict="pass")
click("check", check="a")
click("filters", filters={"different_answers": True})
click("filters", filters={"different_answers": False, "different": True})
click("reset")
print(json.dumps(out))
"""


def rows(cases: int, repeats: int) -> list[dict]:
    return [
        {
            "case_id": f"case-{c:04d}",
            "variant": v,
            "repeat": r,
            "answer": f"answer {c} {v} {r} " * 10,
            "checks": {"a": (r + c) % 3 != 0, "b": (r * (v == "v2") + c) % 5 != 0, "c": None},
        }
        for c in range(cases)
        for v in ("v1", "v2")
        for r in range(repeats)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--repeats", type=int, default=50, help="repeats per case and variant (100: 200,000)"
    )
    parser.add_argument("--cases", type=int, default=1000, help="cases (2,000: 80 pages)")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        big = write_run(Path(tmp) / "big", rows(args.cases, args.repeats), batch=5000)
        results = []
        for _ in range(args.rounds):
            # A fresh copy of the verdicts each round: every round starts with none.
            for part in (big / "verdicts").glob("*.parquet"):
                part.unlink()
            child = subprocess.run(
                [sys.executable, "-c", CHILD, str(big), str(root)],
                check=True,
                capture_output=True,
                text=True,
            )
            results.append(json.loads(child.stdout.strip().splitlines()[-1]))
    print("| step | wall, median | best | CPU, median |")
    print("|---|---|---|---|")
    for key, label in (
        ("load", "`evalnb.load(run)` (baseline)"),
        ("rates", "`evalnb.rates(run, by=[case_id, variant])`"),
        ("open", "**`explore(run)`** (kernel side of opening)"),
        ("warm", "then, on a worker thread: the texts read and lower-cased, every check tallied"),
    ):
        values = [r[key] for r in results]
        cpu = np.median([r[key + "_cpu"] for r in results])
        print(f"| {label} | {np.median(values):.3f} s | {min(values):.3f} s | {cpu:.3f} s |")
    print(f"\nsynced state after opening: {results[0]['state_open'] / 1e3:.1f} kB\n")
    print("| click | wall, median | best | CPU, median | synced state after |")
    print("|---|---|---|---|---|")
    for i, (name, _, state, _) in enumerate(results[0]["clicks"]):
        values = [r["clicks"][i][1] * 1e3 for r in results]
        cpu = np.median([r["clicks"][i][3] * 1e3 for r in results])
        timing = f"{np.median(values):.1f} ms | {min(values):.1f} ms | {cpu:.1f} ms"
        print(f"| {name} | {timing} | {state / 1e3:.1f} kB |")


if __name__ == "__main__":
    main()
