"""Runner throughput, each figure beside a baseline measured in the same run.

(a) 20,000 samples (2,000 cases x 10 repeats) through a Function target that returns at
    once, Parquet writes included; baseline: a bare asyncio loop awaiting the same
    function 20,000 times and writing one Parquet file of the answers.
(b) OpenAIChat through the runner against the stand-in (its own process) at concurrency
    64, 5,000 requests; baseline: a bare httpx.AsyncClient loop sending the same request
    bodies to the same server. Runs alternate A/B and the best of each is kept.

    .venv/bin/python benchmarks/runner.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

import evalnb
from evalnb.standin import StandIn


async def instant(request):
    return "ok"


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


def http_runner(tmp: Path, base_url: str, n: int, in_flight: int | None) -> float:
    target = evalnb.OpenAIChat(base_url, "echo", max_in_flight=in_flight)
    started = time.perf_counter()
    evalnb.run(
        cases(n), target, repeats=1, out=tmp / f"b-{time.time_ns()}", concurrency=64, progress=False
    )
    return time.perf_counter() - started


def http_baseline(base_url: str, n: int, in_flight: int = 64) -> float:
    bodies = [
        {"model": "echo", "messages": [{"role": "user", "content": f"question {i}"}]}
        for i in range(n)
    ]

    async def loop():
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=512)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            gate = asyncio.Semaphore(in_flight)

            async def one(body):
                async with gate:
                    response = await client.post(f"{base_url}/chat/completions", json=body)
                    response.raise_for_status()
                    return response.json()

            await asyncio.gather(*(one(b) for b in bodies))

    started = time.perf_counter()
    asyncio.run(loop())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        a_run, a_base = [], []
        for _ in range(args.rounds):
            a_run.append(function_runner(tmp))
            a_base.append(function_baseline(tmp))
        b_run, b_base, c_run, c_base = [], [], [], []
        with StandIn(process=True) as server:
            url = server.base_url
            http_baseline(url, 200)  # warm up the server process
            for _ in range(args.rounds):
                b_base.append(http_baseline(url, args.requests))
                b_run.append(http_runner(tmp, url, args.requests, None))
                c_base.append(http_baseline(url, args.requests, in_flight=8))
                c_run.append(http_runner(tmp, url, args.requests, 8))
    ra, ba = min(a_run), min(a_base)
    rb, bb = min(b_run), min(b_base)
    rc, bc = min(c_run), min(c_base)
    n = args.requests
    print("| benchmark | evalnb | baseline | result | target |")
    print("|---|---|---|---|---|")
    print(
        f"| (a) 20,000 samples, Function target | {ra:.2f} s, {20_000 / ra:,.0f} samples/s "
        f"| {ba:.2f} s bare loop + Parquet | {20_000 / ra:,.0f} samples/s | >= 5,000 samples/s |"
    )
    print(
        f"| (b) {n:,} requests, OpenAIChat, concurrency 64 | {rb:.2f} s, {n / rb:,.0f} req/s "
        f"| {bb:.2f} s, {n / bb:,.0f} req/s bare httpx | ratio {bb / rb:.2f} | >= 0.85 |"
    )
    print(
        f"| (b') the same, max_in_flight=8 | {rc:.2f} s, {n / rc:,.0f} req/s "
        f"| {bc:.2f} s, {n / bc:,.0f} req/s bare httpx, 8 in flight | ratio {bc / rc:.2f} "
        "| >= 0.85 |"
    )
    rounds = {"a": a_run, "a_base": a_base, "b": b_run, "b_base": b_base}
    rounds |= {"b'": c_run, "b'_base": c_base}
    print("\nall rounds (s):", {k: [round(x, 2) for x in v] for k, v in rounds.items()})


if __name__ == "__main__":
    main()
