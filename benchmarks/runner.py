"""Runner throughput, each figure beside baselines measured in the same run.

(a) 20,000 samples (2,000 cases x 10 repeats) through a Function target that returns at
    once, Parquet writes included; baseline: a bare asyncio loop awaiting the same
    function 20,000 times and writing one Parquet file of the answers.
(b) 5,000 requests through the runner, OpenAIChat against the stand-in (its own process,
    echo model) at concurrency 64: on its default transport (httpx-aiohttp's
    AiohttpTransport) and on httpx's own (``transport="httpx"``, what OpenAIChat used
    before). Baselines: bare loops sending the same bodies, 64 in flight, with an
    ``aiohttp.ClientSession``, an ``httpx.AsyncClient``, and an ``httpx.AsyncClient`` on
    ``AiohttpTransport``; each loop serialises the body and parses the reply, as the
    runner does. (b') the runner on aiohttp again with ``max_in_flight=8``.

Every round runs each contender once, in an order rotated by one each round so that load
on this shared machine falls on all of them alike; the best of the rounds is reported, with
the median beside it.

    .venv/bin/python benchmarks/runner.py [--rounds 3] [--requests 5000]
    .venv/bin/python benchmarks/runner.py --profile     # cProfile of the runner's HTTP path
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
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

IN_FLIGHT = 64


async def instant(request):
    return "ok"


def median(values) -> float:
    # Not the statistics module: benchmarks/statistics.py shadows it when a script here runs.
    return float(np.median(list(values)))


def cases(n):
    return [
        evalnb.Case(
            f"case-{i:05d}", prompt=f"question {i}", checks=[{"type": "contains", "text": "ok"}]
        )
        for i in range(n)
    ]


def function_runner(tmp: Path) -> float:
    started = time.perf_counter()
    evalnb.run(
        cases(2_000),
        evalnb.Function(instant),
        repeats=10,
        out=tmp / f"a-{time.time_ns()}",
        concurrency=8,
        progress=False,
    )
    return time.perf_counter() - started


def function_baseline(tmp: Path) -> float:
    async def loop():
        return [await instant(None) for _ in range(20_000)]

    started = time.perf_counter()
    answers = asyncio.run(loop())
    pq.write_table(pa.table({"answer": answers}), tmp / f"baseline-{time.time_ns()}.parquet")
    return time.perf_counter() - started


def http_runner(tmp: Path, base_url: str, n: int, **options) -> float:
    target = evalnb.OpenAIChat(base_url, "echo", **options)
    suite = cases(n)  # the user's cases, built before the clock starts
    started = time.perf_counter()
    evalnb.run(
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


def profile(base_url: str, tmp: Path, n: int) -> None:
    """Where the runner's time goes, per sample, through OpenAIChat's default transport."""
    http_runner(tmp, base_url, 200)  # warm up the server and the imports
    profiler = cProfile.Profile()
    profiler.enable()
    http_runner(tmp, base_url, n)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--profile", action="store_true", help="profile (b) instead")
    args = parser.parse_args()
    n = args.requests
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.profile:
            with StandIn(process=True) as server:
                profile(server.base_url, tmp, n)
            return
        print("(a)", flush=True)
        a = rotated(
            {"runner": lambda: function_runner(tmp), "baseline": lambda: function_baseline(tmp)},
            args.rounds,
        )
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
                    "bare httpx + AiohttpTransport": lambda: httpx_loop(
                        url, n, aiohttp_transport()
                    ),
                },
                args.rounds,
            )
    best = {name: min(t) for name, t in {**a, **b}.items()}
    medians = {name: median(t) for name, t in {**a, **b}.items()}
    ra, ba = best["runner"], best["baseline"]
    print(f"\nbest of {args.rounds} rounds (median in brackets)\n")
    print(
        f"(a) 20,000 samples, Function target: {ra:.2f} s ({medians['runner']:.2f}), "
        f"{20_000 / ra:,.0f} samples/s; bare loop + Parquet {ba:.2f} s; target >= 5,000/s"
    )
    print(f"\n| (b) {n:,} requests, {IN_FLIGHT} in flight | best | median | req/s (best) |")
    print("|---|---|---|---|")
    for name in b:
        print(f"| {name} | {best[name]:.2f} s | {medians[name]:.2f} s | {n / best[name]:,.0f} |")
    runner = best["runner, aiohttp"]
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
    print(f"\ngoal: runner / bare aiohttp >= 0.5: {best['bare aiohttp'] / runner:.2f}")
    print("\nall rounds (s):", {k: [round(x, 2) for x in v] for k, v in {**a, **b}.items()})


if __name__ == "__main__":
    main()
