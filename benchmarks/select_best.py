"""What grading promptfoo's ``select-best`` and ``max-score`` over groups costs.

The promptfoo config of ``tests/data/promptfoo_features/select_best`` (3 prompts, 4 tests,
select-best and max-score in each) is imported and run on the stand-in (``echo`` answers,
the ``judge`` grades) with ``--repeats`` repeats: ``4 x repeats`` groups of 3 answers. Then,
``--rounds`` times, every group is graded again (``evalnb.checks.acompare``) with only
select-best, then only max-score; the promptfoo worker is loaded once before the rounds (its
2-8 s load is a cost of the run, paid by the first promptfoo check). Reports the run's wall
time and the median (and best) milliseconds per group of each.

    .venv/bin/python benchmarks/select_best.py [--repeats 25] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import evalnb
from evalnb.checks import acompare, built_cases
from evalnb.interop import import_promptfoo
from evalnb.runner._compared import stored_results, stored_samples
from evalnb.runner._judging import judging
from evalnb.standin import StandIn
from evalnb.targets import OpenAIChat

CONFIG = (
    Path(__file__).parents[1] / "tests/data/promptfoo_features/select_best/promptfooconfig.yaml"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with StandIn(seed=0) as server, tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        import_promptfoo(CONFIG, tmp / "suite")
        experiment = evalnb.load_experiment(tmp / "suite/experiment.toml")
        judge = OpenAIChat(server.base_url, "judge")
        started = time.perf_counter()
        evalnb.run(
            tmp / "suite/cases.yaml",
            OpenAIChat(server.base_url, "echo"),
            variants=experiment.variants,
            repeats=args.repeats,
            out=tmp / "run",
            judge=judge,
            progress=False,
        )
        wall = time.perf_counter() - started
        samples = stored_samples(tmp / "run")
        groups = len({(s.case_id, s.repeat) for s in samples})
        print(f"run: {len(samples)} samples, {groups} groups of 3, {wall:.2f} s wall")
        others = stored_results(tmp / "run")
        cases = built_cases(evalnb.load_cases(tmp / "suite/cases.yaml"))
        variants = [v.name for v in experiment.variants]
        for only in ("select-best", "max-score"):
            by_case = {c.id: tuple(k for k in c.checks if k.name == only) for c in cases}

            async def grade(by_case: dict[str, tuple[Any, ...]] = by_case) -> float:
                async with judging(judge):
                    clock = time.perf_counter()
                    await acompare(by_case, samples, variants, others)
                    return time.perf_counter() - clock

            times = [asyncio.run(grade()) / groups * 1000 for _ in range(args.rounds)]
            print(
                f"{only}: {statistics.median(times):.2f} ms per group (median of "
                f"{args.rounds}; best {min(times):.2f})"
            )


if __name__ == "__main__":
    main()
