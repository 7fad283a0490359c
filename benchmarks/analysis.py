"""Benchmark of the analysis on large runs written by evalnb's own store.

Measures, each in a fresh Python process (so peak RSS is that of the work alone):

1. ``load`` + ``rates(by=["variant", "case_id"])`` + ``compare`` on a run of
   1,000,000 samples x 3 checks (targets: under 3 s, under 2 GB peak RSS);
2. ``load(...).samples`` (every column) of a 20,000-sample run (target: under 0.2 s).

Reproduce with::

    .venv/bin/python benchmarks/analysis.py            # writes the runs under a temp dir
    .venv/bin/python benchmarks/analysis.py --keep DIR # keep (and reuse) the runs in DIR

Samples are written in batches with ``RunWriter``, and the batch size sets how many
Parquet parts a run has. The large run is measured three times: written in batches of
10,000 (100 parts per table), of 5,000 (200 parts, what the runner writes at full speed:
it flushes every 5,000 samples or 5 seconds) and of 500 (2,000 parts, a runner that flushes
every few hundred samples), because reading many small parts costs more than the
analysis itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalnb._types import CheckResult, Sample
from evalnb.store import RunWriter, create_run_dir, write_json_atomic

T0 = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
VARIANTS = ("baseline", "revised")
CHECKS = ("contains:order id", "avoids:guaranteed", "word_count:3-60")


def write_run(path: Path, samples: int, *, cases: int, batch: int, seed: int = 0) -> None:
    """A synthetic run: ``samples`` samples over ``cases`` cases x 2 variants, 3 checks each.

    Per-case true rates vary (a beta distribution); 1% of samples are incomplete
    (their checks False), and the third check does not apply to a tenth of the cases.
    """
    rng = np.random.default_rng(seed)
    repeats = samples // (cases * len(VARIANTS))
    case_ids = [f"case-{i:05d}" for i in range(cases)]
    rates = {v: rng.beta(6 + 2 * i, 2, size=cases) for i, v in enumerate(VARIANTS)}
    unscored_case = rng.random(cases) < 0.1
    create_run_dir(path)
    manifest = {
        "schema_version": 1,
        "run_id": path.name,
        "status": "complete",
        "started_at": T0.isoformat(),
        "ended_at": T0.isoformat(),
        "evalnb_version": "bench",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "command": ["benchmarks/analysis.py"],
        "cases_file": None,
        "cases": [
            {
                "id": c,
                "prompt": f"question {c}",
                "fixtures": {},
                "checks": [],
                "review": None,
                "group": c,
                "split": "dev" if i % 5 else "heldout",
                "tags": [],
                "metadata": {},
            }
            for i, c in enumerate(case_ids)
        ],
        "variants": [{"name": v, "prefix": None, "system": None, "params": {}} for v in VARIANTS],
        "repeats": repeats,
        "order": {"scheme": "sequential", "seed": seed, "planned": []},
        "target": {"kind": "synthetic"},
        "git_revision": None,
    }
    write_json_atomic(path / "manifest.json", manifest)
    writer = RunWriter(path)
    keys = [(c, v, r) for r in range(repeats) for v in VARIANTS for c in range(cases)]
    for start in range(0, len(keys), batch):
        chunk = keys[start : start + batch]
        draws = rng.random((len(chunk), len(CHECKS)))
        broken = rng.random(len(chunk)) < 0.01
        latency = rng.lognormal(7.5, 0.6, size=len(chunk))
        batch_samples, batch_checks = [], []
        for i, (c, v, r) in enumerate(chunk):
            status = "timeout" if broken[i] else "completed"
            sample = Sample(
                run_id=path.name,
                case_id=case_ids[c],
                variant=v,
                repeat=r,
                order=start + i,
                started_at=T0,
                latency_ms=float(latency[i]),
                status=status,
                error="timed out" if broken[i] else None,
                answer=None if broken[i] else f"Order A-{c} is on its way ({r % 7}).",
                prompt=f"question {case_ids[c]}",
                request=None,
                response=None,
            )
            batch_samples.append(sample)
            for j, name in enumerate(CHECKS):
                if j == 2 and unscored_case[c]:
                    outcome = None
                else:
                    outcome = False if broken[i] else bool(draws[i, j] < rates[v][c] ** 0.3)
                detail = "" if outcome else "timeout" if broken[i] else "failed"
                batch_checks.append(
                    (sample, CheckResult(name, name.split(":")[0], outcome, detail))
                )
        writer.write(batch_samples, batch_checks)


def measure_analysis(path: str) -> dict[str, float]:
    """load + rates by (variant, case) + compare, in this process."""
    import evalnb.analysis as analysis

    start = time.perf_counter()
    run = analysis.load(path)
    per_case = analysis.rates(run, by=["variant", "case_id"])
    comparison = analysis.compare(run, a="baseline", b="revised")
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": len(per_case),
        "verdict": str(comparison["verdict"].iloc[0]),
    }


def measure_samples(path: str) -> dict[str, float]:
    """load(...).samples with every column, first call in this process, then the best of 5."""
    import evalnb.analysis as analysis

    start = time.perf_counter()
    frame = analysis.load(path).samples
    first = time.perf_counter() - start
    times = []
    for _ in range(5):
        start = time.perf_counter()
        frame = analysis.load(path).samples
        times.append(time.perf_counter() - start)
    return {
        "seconds": first,
        "best_seconds": min(times),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": len(frame),
    }


def in_fresh_process(kind: str, path: Path) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument(
        "--batch",
        type=int,
        nargs="+",
        default=[10_000, 5_000, 500],
        help="samples per Parquet part of the large run (one measurement each)",
    )
    parser.add_argument("--keep", metavar="DIR", help="write runs here and reuse them next time")
    parser.add_argument("--repeat", type=int, default=5, help="fresh-process timings to take")
    parser.add_argument("--measure", nargs=2, metavar=("KIND", "RUN_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        kind, path = args.measure
        measure = measure_analysis if kind == "analysis" else measure_samples
        print(json.dumps(measure(path)))
        return 0

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="evalnb-bench-"))
    big = {batch: root / f"big-{args.samples}-b{batch}" for batch in args.batch}
    small = root / "small-20000"
    try:
        plan = [(path, args.samples, args.cases, batch) for batch, path in big.items()]
        for path, samples, cases, batch in [*plan, (small, 20_000, 100, 500)]:
            if not path.exists():
                start = time.perf_counter()
                write_run(path, samples, cases=cases, batch=batch)
                print(f"wrote {path} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        analysis = {
            batch: [in_fresh_process("analysis", path) for _ in range(args.repeat)]
            for batch, path in big.items()
        }
        loading = [in_fresh_process("samples", small) for _ in range(args.repeat)]
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    rows = []
    for batch, results in analysis.items():
        times = sorted(r["seconds"] for r in results)
        parts = -(-args.samples // batch)
        rows.append(
            (
                f"load + rates(variant, case_id) + compare, {args.samples:,} samples x 3 "
                f"checks, {parts:,} parts per table",
                f"{times[len(times) // 2]:.2f} s",
                f"{max(r['peak_rss_mb'] for r in results):,.0f} MB",
                "< 3 s, < 2 GB",
            )
        )
    first = sorted(r["seconds"] for r in loading)
    rows += [
        (
            "load(...).samples, 20,000 samples, all columns (first call in a process)",
            f"{first[len(first) // 2]:.3f} s",
            f"{max(r['peak_rss_mb'] for r in loading):,.0f} MB",
            "< 0.2 s",
        ),
        (
            "load(...).samples, 20,000 samples, all columns (warm, best of 5)",
            f"{min(r['best_seconds'] for r in loading):.3f} s",
            "",
            "",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'time':>8}  {'peak RSS':>9}  target")
    for name, seconds, rss, target in rows:
        print(f"{name:<{width}}  {seconds:>8}  {rss:>9}  {target}")
    print(
        f"\nmedian of {args.repeat} fresh processes; peak RSS is the whole process (Python, "
        f"pandas, pyarrow, statsmodels included); Python {platform.python_version()} on "
        f"{platform.machine()}, {os.cpu_count()} CPUs"
    )
    print("reproduce: .venv/bin/python benchmarks/analysis.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
