"""What importing evalnb costs, beside pandas measured in the same run.

Each import runs in a fresh interpreter; rounds alternate the statements so load on this
shared machine falls on all of them alike. Reports the median wall time of each, the same
net of a bare interpreter start, and the ratio of ``import evalnb`` to ``import pandas``.

    .venv/bin/python benchmarks/imports.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

STATEMENTS = {
    "python -c pass": "pass",
    "import pandas": "import pandas",
    "import evalnb": "import evalnb",
    "import evalnb.runner._session": "import evalnb.runner._session",
    "evalnb.rates (analysis on first use)": "import evalnb; evalnb.rates",
}


def _once(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(args.rounds):
        for name, statement in STATEMENTS.items():
            times[name].append(_once(statement))
    median = {name: float(np.median(values)) for name, values in times.items()}
    bare = median["python -c pass"]
    print(f"{'statement':<40} {'median':>8} {'net of start':>13}")
    for name, value in median.items():
        print(f"{name:<40} {value * 1000:7.0f}ms {(value - bare) * 1000:11.0f}ms")
    ratio = median["import evalnb"] / median["import pandas"]
    net = (median["import evalnb"] - bare) / (median["import pandas"] - bare)
    print(f"\nimport evalnb / import pandas: {ratio:.2f} (net of start: {net:.2f}); target <= 1.5")


if __name__ == "__main__":
    main()
