"""A CPU-bound ``Command`` harness on a Dask LocalCluster: 1 worker against 2 workers.

Each sample runs a Python harness that spins until its process has used about 50 ms of
CPU (interpreter start-up included) and prints ``ok``. 400 samples (20 cases x 20
repeats) run as shards of ``--shard-size`` on a LocalCluster of worker processes with one
thread each and ``concurrency=1`` (one harness at a time per worker, so a worker is one
core's worth of harness), first with 1 worker, then with 2; the plain runner at
``concurrency=1`` with no cluster is the baseline.

Per-shard overhead, from the 1-worker run (its shards run one after another): the wall
time less the summed sample latencies, divided by the number of shards. It holds Dask's
scheduling, sending the shard, the shard's Parquet parts and its commit marker.

The machine is shared and noisy: the load average is printed beside the figures.

    .venv/bin/python benchmarks/cluster.py [--samples 400] [--shard-size 20] [--rounds 1]
        [--keep-dask-profiler]

(Named ``cluster.py``: a script named ``dask.py`` would shadow the ``dask`` package.)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import distributed

import evalnb
from evalnb import Case, Command
from evalnb.store import read_table

HARNESS = """\
import time
while time.process_time() < 0.050:
    pass
print("ok")
"""


def _run(out: Path, target: Command, cases: list[Case], repeats: int, **options: Any) -> float:
    clock = time.perf_counter()
    evalnb.run(cases, target, repeats=repeats, out=out, concurrency=1, progress=False, **options)
    return time.perf_counter() - clock


def _on_cluster(
    workers: int, out: Path, target: Command, cases: list[Case], repeats: int, shard_size: int
) -> float:
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        return _run(out, target, cases, repeats, cluster=client, shard_size=shard_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--shard-size", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--keep-dask-profiler",
        action="store_true",
        help="leave Dask's statistical profiler on in the workers (its default)",
    )
    args = parser.parse_args()
    if not args.keep_dask_profiler:
        # Each worker samples its threads every 10 ms by default; with a CPU-bound harness on
        # every core that sampling competes with it. Workers read this from the environment.
        os.environ["DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"] = "False"
    profiler = "on" if args.keep_dask_profiler else "off"
    repeats = 20
    cases = [Case(f"c{i:03d}", prompt=f"task {i}") for i in range(args.samples // repeats)]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "harness.py"
        script.write_text(HARNESS)
        target = Command([sys.executable, str(script)])
        print(
            f"{len(cases) * repeats} samples, shards of {args.shard_size}, {os.cpu_count()} CPUs, "
            f"Dask worker profiler {profiler}"
        )
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for round_ in range(args.rounds):
            base = Path(tmp) / f"round{round_}"
            local = _run(base / "local", target, cases, repeats)
            one = _on_cluster(1, base / "one", target, cases, repeats, args.shard_size)
            two = _on_cluster(2, base / "two", target, cases, repeats, args.shard_size)
            latency = read_table(base / "one", "samples", ["latency_ms"]).column(0)
            busy = sum(latency.to_pylist()) / 1000
            shards = -(-len(cases) * repeats // args.shard_size)
            print(
                f"round {round_ + 1}: no cluster {local:.1f} s | 1 worker {one:.1f} s | "
                f"2 workers {two:.1f} s | speed-up 1->2 workers {one / two:.2f}x | "
                f"per-shard overhead {(one - busy) / shards * 1000:.0f} ms "
                f"(1-worker wall {one:.1f} s - sample latencies {busy:.1f} s, / {shards} shards)"
            )
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
