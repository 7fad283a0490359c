"""Runner throughput, each figure beside baselines measured in the same run.

(a) 20,000 samples (2,000 cases x 10 repeats, one ``contains`` check each) through a
    ``Function`` whose function returns at once, Parquet writes included: the default
    threaded one (each call on a worker thread) and ``threaded=False``. Baseline: a bare
    asyncio loop calling the same function 20,000 times and writing one Parquet file of the
    answers. A warm-up run first: these are a warm process's figures.
(b) 5,000 requests through the runner, OpenAIChat against the stand-in (its own process,
    echo model) at concurrency 64: on its default transport (httpx-aiohttp's
    AiohttpTransport) and on httpx's own (``transport="httpx"``, what OpenAIChat used
    before). Baselines: bare loops sending the same bodies, 64 in flight, with an
    ``aiohttp.ClientSession``, an ``httpx.AsyncClient``, and an ``httpx.AsyncClient`` on
    ``AiohttpTransport``; each loop serialises the body and parses the reply, as the
    runner does. (b') the runner on aiohttp again with ``max_in_flight=8``.
(d) The vendors' protocols: 5,000 requests through the runner against the stand-in (its own
    process, echo model) at concurrency 64, through each target (Anthropic Messages, OpenAI
    Responses, Gemini, Bedrock Converse signed by botocore, Azure OpenAI) beside OpenAIChat
    and a bare aiohttp chat loop in the same run.
(c) The first ``run()`` of a fresh process: ``import evalnb`` and a 3-sample run, timed in a
    new interpreter, with the heavy modules it loaded.

Every round runs each contender once, in an order rotated by one each round so that load
on this shared machine falls on all of them alike; the best of the rounds is reported, with
the median beside it.

    .venv/bin/python benchmarks/runner.py [--rounds 3] [--requests 5000] [--only function]
    .venv/bin/python benchmarks/runner.py --only targets     # (d) every protocol
    .venv/bin/python benchmarks/runner.py --profile threaded  # cProfile of (a), or http: (b)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from httpx_aiohttp import AiohttpTransport

import evalnb
from evalnb.standin import StandIn
from evalnb.targets._spec import TARGET_TYPES, http_target

IN_FLIGHT = 64


def instant(request):
    return "ok"


def median(values) -> float:
    # Not the statistics module: benchmarks/coverage.py shadows it when a script here runs.
    return float(np.median(list(values)))


def cases(n):
    return [
        evalnb.Case(
            f"case-{i:05d}", prompt=f"question {i}", checks=[{"type": "contains", "text": "ok"}]
        )
        for i in range(n)
    ]


def function_runner(tmp: Path, threaded: bool = True, run: Callable = evalnb.run) -> float:
    suite = cases(2_000)  # the user's cases, built before the clock starts
    started = time.perf_counter()
    run(
        suite,
        evalnb.Function(instant, threaded=threaded),
        repeats=10,
        out=tmp / f"a-{time.time_ns()}",
        concurrency=8,
        progress=False,
    )
    return time.perf_counter() - started


def function_baseline(tmp: Path) -> float:
    async def loop():
        return [instant(None) for _ in range(20_000)]

    started = time.perf_counter()
    answers = asyncio.run(loop())
    pq.write_table(pa.table({"answer": answers}), tmp / f"baseline-{time.time_ns()}.parquet")
    return time.perf_counter() - started


FIRST_RUN = """
import json, sys, tempfile, time
started = time.perf_counter()
import evalnb
imported = time.perf_counter()
with tempfile.TemporaryDirectory() as tmp:
    cases = [evalnb.Case(f"c{i}", prompt="hi") for i in range(3)]
    evalnb.run(cases, evalnb.Function(lambda r: "ok"), out=tmp + "/r", progress=False)
done = time.perf_counter()
heavy = ["pandas", "pyarrow.dataset", "pyarrow.parquet", "httpx", "aiohttp"]
print(json.dumps({"import": imported - started, "run": done - imported,
                  "loaded": [m for m in heavy if m in sys.modules]}))
"""


def first_run() -> dict:
    """``import evalnb`` and the first run() in a fresh interpreter (in an empty folder, so
    that it imports the evalnb this script does, not one in the working directory)."""
    with tempfile.TemporaryDirectory() as empty:
        done = subprocess.run(
            [sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, check=True, cwd=empty
        )
    return json.loads(done.stdout)


def http_runner(
    tmp: Path, base_url: str, n: int, run: Callable = evalnb.run, protocol=None, **options
) -> float:
    if protocol is None:
        target = evalnb.OpenAIChat(base_url, "echo", **options)
    else:
        spec = {"type": protocol, "standin": True, "model": "echo", **options}
        target = http_target(spec, base_url)
    suite = cases(n)  # the user's cases, built before the clock starts
    started = time.perf_counter()
    run(
        suite,
        target,
        repeats=1,
        out=tmp / f"b-{time.time_ns()}",
        concurrency=IN_FLIGHT,
        progress=False,
    )
    return time.perf_counter() - started


def bodies(n: int) -> list[dict]:
    return [
        {"model": "echo", "messages": [{"role": "user", "content": f"question {i}"}]}
        for i in range(n)
    ]


async def _gathered(one: Callable, n: int) -> None:
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def gated(body):
        async with gate:
            return await one(body)

    await asyncio.gather(*(gated(b) for b in bodies(n)))


def httpx_loop(base_url: str, n: int, transport: httpx.AsyncBaseTransport | None = None) -> float:
    async def loop():
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=512)
        async with httpx.AsyncClient(limits=limits, timeout=60, transport=transport) as client:

            async def one(body):
                response = await client.post(f"{base_url}/chat/completions", json=body)
                response.raise_for_status()
                return response.json()

            await _gathered(one, n)

    started = time.perf_counter()
    asyncio.run(loop())
    return time.perf_counter() - started


def aiohttp_loop(base_url: str, n: int) -> float:
    async def loop():
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one(body):
                async with session.post(f"{base_url}/chat/completions", json=body) as response:
                    response.raise_for_status()
                    return await response.json()

            await _gathered(one, n)

    started = time.perf_counter()
    asyncio.run(loop())
    return time.perf_counter() - started


def aiohttp_transport() -> AiohttpTransport:
    # limit=0: no cap on connections, as the other loops (httpx-aiohttp leaves aiohttp's 100).
    return AiohttpTransport(
        client=lambda: aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    )


def rotated(contenders: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each contender in each round; the order rotates by one every round."""
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(contenders[name]())
            print(f"  round {r + 1}: {name}: {times[name][-1]:.2f} s", flush=True)
    return times


def here(*args, **kwargs):
    """evalnb.run on this thread's own loop: cProfile sees only the thread that enables it."""
    return asyncio.run(evalnb.arun(*args, **kwargs))


def profile(what: str, tmp: Path, n: int) -> None:
    """Where the runner's time goes: (a) threaded or unthreaded, or (b) through OpenAIChat's
    default transport."""
    profiler = cProfile.Profile()
    if what == "http":
        with StandIn(process=True) as server:
            http_runner(tmp, server.base_url, 200)  # warm up the server and the imports
            profiler.enable()
            http_runner(tmp, server.base_url, n, run=here)
            profiler.disable()
    else:
        function_runner(tmp)  # warm up the imports
        profiler.enable()
        function_runner(tmp, threaded=what == "threaded", run=here)
        profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(40)


def table(title: str, unit: str, n: int, times: dict[str, list[float]]) -> None:
    print(f"\n| {title} | best | median | {unit}/s (best) | {unit}/s (median) |")
    print("|---|---|---|---|---|")
    for name, t in times.items():
        best, middle = min(t), median(t)
        print(f"| {name} | {best:.2f} s | {middle:.2f} s | {n / best:,.0f} | {n / middle:,.0f} |")
    print("\nall rounds (s):", {k: [round(x, 2) for x in v] for k, v in times.items()})


def report_function(tmp: Path, rounds: int) -> None:
    print("(a)", flush=True)
    function_runner(tmp)  # the imports and the first run: the figures are a warm process's
    times = rotated(
        {
            "Function, threaded (default)": lambda: function_runner(tmp),
            "Function, threaded=False": lambda: function_runner(tmp, threaded=False),
            "bare loop + Parquet": lambda: function_baseline(tmp),
        },
        rounds,
    )
    table(f"(a) 20,000 samples, best of {rounds}", "samples", 20_000, times)
    print("targets: threaded >= 5,000 samples/s; threaded=False >= 9,700 samples/s")


def report_http(tmp: Path, rounds: int, n: int) -> None:
    print("(b)", flush=True)
    with StandIn(process=True) as server:
        url = server.base_url
        aiohttp_loop(url, 200)  # warm up the server process
        b = rotated(
            {
                "runner, aiohttp": lambda: http_runner(tmp, url, n),
                "runner, httpx": lambda: http_runner(tmp, url, n, transport="httpx"),
                "runner, aiohttp, max_in_flight=8": lambda: http_runner(
                    tmp, url, n, max_in_flight=8
                ),
                "bare aiohttp": lambda: aiohttp_loop(url, n),
                "bare httpx": lambda: httpx_loop(url, n),
                "bare httpx + AiohttpTransport": lambda: httpx_loop(url, n, aiohttp_transport()),
            },
            rounds,
        )
    table(f"(b) {n:,} requests, {IN_FLIGHT} in flight, best of {rounds}", "req", n, b)
    best = {name: min(t) for name, t in b.items()}
    medians = {name: median(t) for name, t in b.items()}
    print()
    for of, baseline in [
        ("runner, aiohttp", "bare aiohttp"),
        ("runner, aiohttp", "bare httpx"),
        ("runner, aiohttp", "bare httpx + AiohttpTransport"),
        ("runner, httpx", "bare httpx"),
        ("runner, aiohttp", "runner, httpx"),
    ]:
        ratio, middle = best[baseline] / best[of], medians[baseline] / medians[of]
        print(f"{of} / {baseline}: {ratio:.2f} (medians: {middle:.2f})")
    ratio = best["bare aiohttp"] / best["runner, aiohttp"]
    print(f"\ngoal: runner / bare aiohttp >= 0.5: {ratio:.2f}")


def report_targets(tmp: Path, rounds: int, n: int) -> None:
    print("(d)", flush=True)
    # The stand-in reads a SigV4 signature's form, not its key: any credentials sign.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDBENCHMARK")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "benchmark-secret-key")
    with StandIn(process=True) as server:
        url = server.base_url
        aiohttp_loop(url, 200)  # warm up the server process
        contenders = {
            f"runner, {kind}": (lambda kind=kind: http_runner(tmp, url, n, protocol=kind))
            for kind in TARGET_TYPES
        }
        d = rotated({**contenders, "bare aiohttp": lambda: aiohttp_loop(url, n)}, rounds)
    table(f"(d) {n:,} requests, {IN_FLIGHT} in flight, best of {rounds}", "req", n, d)
    best = {name: min(t) for name, t in d.items()}
    medians = {name: median(t) for name, t in d.items()}
    print()
    for name in contenders:
        ratio, middle = best["bare aiohttp"] / best[name], medians["bare aiohttp"] / medians[name]
        print(f"{name} / bare aiohttp: {ratio:.2f} (medians: {middle:.2f})")


def report_first(rounds: int) -> None:
    print("(c)", flush=True)
    runs = [first_run() for _ in range(rounds)]
    imports = [r["import"] for r in runs]
    firsts = [r["run"] for r in runs]
    print(
        f"\n(c) fresh process, best of {rounds}: import evalnb {min(imports):.3f} s "
        f"(median {median(imports):.3f}); first run() {min(firsts):.3f} s "
        f"(median {median(firsts):.3f}); loaded: {', '.join(runs[0]['loaded'])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--only", choices=["function", "http", "targets", "first"], help="one part")
    parser.add_argument(
        "--profile", choices=["threaded", "unthreaded", "http"], help="profile one instead"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.profile:
            profile(args.profile, Path(tmp), args.requests)
            return
        if args.only in (None, "function"):
            report_function(Path(tmp), args.rounds)
        if args.only in (None, "http"):
            report_http(Path(tmp), args.rounds, args.requests)
        if args.only in (None, "targets"):
            report_targets(Path(tmp), args.rounds, args.requests)
        if args.only in (None, "first"):
            report_first(args.rounds)


if __name__ == "__main__":
    main()
