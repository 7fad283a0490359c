"""evalnb beside its peers on the same work, each step in a fresh process, rounds alternating.

Peers: Inspect AI (PyPI ``inspect-ai``) in ``build/peers-venv`` and promptfoo (npm) in
``build/peers-node``, both installed there by ``make bench-peers``; a peer that is not
installed is skipped and said so. Nothing leaves 127.0.0.1: promptfoo's telemetry and update
check are turned off.

The work: 200 cases x 10 repeats (2,000 samples), each scored by one "includes" check.

(a) a mock model that answers at once: evalnb's ``Function`` target, Inspect's
    ``mockllm/model``, promptfoo's ``echo`` provider;
(b) HTTP against evalnb's stand-in (its own process, echo model) with 64 connections each:
    ``OpenAIChat`` at concurrency 64, Inspect's ``openai/echo`` with ``model_base_url`` and
    ``max_connections=64``, promptfoo's ``openai:chat:echo`` with ``apiBaseUrl`` and ``-j 64``;
(c) the result (b) wrote, read into pandas with the pass rate per case: ``evalnb.load``,
    ``inspect_ai.analysis.samples_df``, promptfoo's JSON output.

Every measurement is a fresh process; a Python child reports the time of its work after its
imports, and the wall time of the whole process is kept too (promptfoo: wall time only).
Rounds rotate the order of the tools; medians are reported, with the ratio of each peer to
evalnb.

    make bench-peers                                    # installs the peers, then runs this
    .venv/bin/python benchmarks/peers.py [--rounds 3] [--cases 200] [--repeats 10]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalnb.standin import StandIn

ROOT = Path(__file__).resolve().parent.parent
PEERS_PYTHON = ROOT / "build" / "peers-venv" / "bin" / "python"
PROMPTFOO = ROOT / "build" / "peers-node" / "node_modules" / ".bin" / "promptfoo"
IN_FLIGHT = 64

# Each Python child: argv = step, out dir, cases, repeats, base url; prints its timings.
EVALNB = """
import json, sys, time
started = time.perf_counter()
import evalnb
# evalnb loads its parts on first use: load them here, so that work is work.
if sys.argv[1] == "c":
    import evalnb.analysis
else:
    import evalnb.runner._session
step, out, base_url = sys.argv[1], sys.argv[2], sys.argv[5]
n, repeats = int(sys.argv[3]), int(sys.argv[4])
imported = time.perf_counter()
if step == "c":
    checks = evalnb.load(out).checks
    rate = checks.groupby("case_id", observed=True)["outcome"].mean()
    done = time.perf_counter()
    print(json.dumps({"work": done - imported, "total": done - started, "rows": len(rate)}))
    raise SystemExit
answer = "Default output from mockllm/model"  # what Inspect's mockllm answers
async def instant(request):
    return answer
if step == "a":
    target, text = evalnb.Function(instant), "output"
else:
    target, text = evalnb.OpenAIChat(base_url, "echo"), "question"
check = {"type": "contains", "text": text}
cases = [evalnb.Case(f"case-{i:05d}", prompt=f"question {i}", checks=[check]) for i in range(n)]
evalnb.run(cases, target, repeats=repeats, out=out, concurrency=IN_FLIGHT, progress=False)
done = time.perf_counter()
print(json.dumps({"work": done - imported, "total": done - started}))
"""

INSPECT = """
import json, sys, time
started = time.perf_counter()
import tiktoken
class Words:
    def encode(self, text, **options):
        return text.split()
# tiktoken downloads its encodings at first use, and this machine reaches no such host.
tiktoken.get_encoding = tiktoken.encoding_for_model = lambda name: Words()
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
step, out, base_url = sys.argv[1], sys.argv[2], sys.argv[5]
n, repeats = int(sys.argv[3]), int(sys.argv[4])
imported = time.perf_counter()
if step == "c":
    from inspect_ai.analysis import samples_df
    frame = samples_df(out)
    score = [c for c in frame.columns if c.startswith("score_")][0]
    rate = (frame[score] == "C").groupby(frame["id"]).mean()
    done = time.perf_counter()
    print(json.dumps({"work": done - imported, "total": done - started, "rows": len(rate)}))
    raise SystemExit
target = "output" if step == "a" else "question"
samples = [Sample(id=f"case-{i:05d}", input=f"question {i}", target=target) for i in range(n)]
task = Task(dataset=MemoryDataset(samples), solver=generate(), scorer=includes(), epochs=repeats)
if step == "a":
    options = {"model": "mockllm/model"}
else:
    # Chat completions, as the stand-in serves them (Inspect would use the Responses API).
    options = {
        "model": "openai/echo",
        "model_base_url": base_url,
        "model_args": {"responses_api": False},
    }
limits = {"max_connections": IN_FLIGHT, "max_samples": IN_FLIGHT}
logs = eval(task, log_dir=out, display="none", **limits, **options)
assert logs[0].status == "success", logs[0].error
done = time.perf_counter()
print(json.dumps({"work": done - imported, "total": done - started}))
"""

PROMPTFOO_RATES = """
import json, sys, time
started = time.perf_counter()
import pandas as pd
imported = time.perf_counter()
results = json.load(open(sys.argv[1]))["results"]["results"]
frame = pd.DataFrame(
    {"case": [r["vars"]["q"] for r in results], "passed": [r["success"] for r in results]}
)
rate = frame.groupby("case")["passed"].mean()
done = time.perf_counter()
print(json.dumps({"work": done - imported, "total": done - started, "rows": len(rate)}))
"""

QUIET = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "true",
    "OPENAI_API_KEY": "unused",
    "NO_PROXY": "127.0.0.1,localhost",
}


def median(values) -> float:
    # Not the statistics module: benchmarks/coverage.py shadows it when a script here runs.
    return float(np.median(list(values)))


def python_step(code: str, python: Path | str, args: list[str], env: dict[str, str]) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [str(python), "-c", code.replace("IN_FLIGHT", str(IN_FLIGHT)), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if done.returncode:
        raise RuntimeError(f"{python} {args[:1]} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - started
    return result


def promptfoo_config(path: Path, step: str, n: int, base_url: str) -> Path:
    if step == "a":
        provider: object = "echo"
    else:
        provider = {
            "id": "openai:chat:echo",
            "config": {"apiBaseUrl": base_url, "apiKey": "unused"},
        }
    text = "question"
    tests = [
        {"vars": {"q": f"question {i}"}, "assert": [{"type": "contains", "value": text}]}
        for i in range(n)
    ]
    config = {"prompts": ["{{q}}"], "providers": [provider], "tests": tests}
    path.write_text(json.dumps(config))  # YAML is a superset of JSON
    return path


def promptfoo_step(config: Path, output: Path, repeats: int, env: dict[str, str]) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(PROMPTFOO),
            "eval",
            "-c",
            str(config),
            "-o",
            str(output),
            "--repeat",
            str(repeats),
            "-j",
            str(IN_FLIGHT),
            "--no-cache",
            "--no-table",
            "--no-progress-bar",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=config.parent,
    )
    wall = time.perf_counter() - started
    # promptfoo 0.121 on Node 20 may crash in its log file's shutdown after writing the
    # results (exit 1, "write after end"); the results count, a missing file does not.
    if not output.exists():
        raise RuntimeError(f"promptfoo wrote no results:\n{done.stderr[-3000:]}")
    return {"wall": wall, "exit": done.returncode}


def version(tool: str) -> str:
    if tool == "evalnb":
        return importlib.metadata.version("evalnb")
    if tool == "inspect":
        code = "import importlib.metadata as m; print(m.version('inspect-ai'))"
        return subprocess.run(
            [str(PEERS_PYTHON), "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
    return subprocess.run(
        [str(PROMPTFOO), "--version"], capture_output=True, text=True, check=True, env=_env()
    ).stdout.strip()


def _env(home: Path | None = None) -> dict[str, str]:
    env = {**os.environ, **QUIET}
    if home is not None:
        env["PROMPTFOO_CONFIG_DIR"] = str(home / "promptfoo-home")
        env["INSPECT_LOG_DIR"] = str(home / "inspect-logs")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    tools = ["evalnb"]
    if PEERS_PYTHON.exists():
        tools.append("inspect")
    else:
        print(f"Inspect AI skipped: {PEERS_PYTHON} missing (make bench-peers installs it)")
    if PROMPTFOO.exists():
        tools.append("promptfoo")
    else:
        print(f"promptfoo skipped: {PROMPTFOO} missing (make bench-peers installs it)")
    versions = {tool: version(tool) for tool in tools}
    print("versions:", versions, f"python {sys.version.split()[0]}", flush=True)
    n, repeats = args.cases, args.repeats
    times: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp, StandIn(process=True) as server:
        tmp = Path(tmp)
        env = _env(tmp)
        for r in range(args.rounds):
            order = tools[r % len(tools) :] + tools[: r % len(tools)]
            for step in ("a", "b"):
                for tool in order:
                    out = tmp / f"{tool}-{step}-{r}"
                    common = [str(n), str(repeats), server.base_url]
                    if tool == "evalnb":
                        result = python_step(EVALNB, sys.executable, [step, str(out), *common], env)
                    elif tool == "inspect":
                        result = python_step(INSPECT, PEERS_PYTHON, [step, str(out), *common], env)
                    else:
                        out.mkdir()
                        config = promptfoo_config(
                            out / "promptfooconfig.yaml", step, n, server.base_url
                        )
                        result = promptfoo_step(config, out / "results.json", repeats, env)
                    times.setdefault((tool, step), []).append(result)
                    print(f"  round {r + 1}, ({step}) {tool}: {result}", flush=True)
            for tool in order:
                written = tmp / f"{tool}-b-{r}"
                common = [str(n), str(repeats), server.base_url]
                if tool == "evalnb":
                    result = python_step(EVALNB, sys.executable, ["c", str(written), *common], env)
                elif tool == "inspect":
                    result = python_step(INSPECT, PEERS_PYTHON, ["c", str(written), *common], env)
                else:
                    result = python_step(
                        PROMPTFOO_RATES, sys.executable, [str(written / "results.json")], env
                    )
                times.setdefault((tool, "c"), []).append(result)
                print(f"  round {r + 1}, (c) {tool}: {result}", flush=True)
            for tool in order:
                for step in ("a", "b"):
                    shutil.rmtree(tmp / f"{tool}-{step}-{r}", ignore_errors=True)
    report(times, tools, versions, args)


def report(times, tools, versions, args) -> None:
    def middle(tool: str, step: str, key: str) -> float | None:
        values = [t[key] for t in times[(tool, step)] if key in t]
        return median(values) if values else None

    steps = {
        "a": "(a) mock model, answers at once",
        "b": f"(b) HTTP, stand-in, {IN_FLIGHT} connections",
        "c": "(c) result into pandas, pass rate per case",
    }
    print(
        f"\n{args.cases} cases x {args.repeats} repeats; medians of {args.rounds} rounds; "
        "work = after the child's imports, wall = whole process"
    )
    print(
        "| step | "
        + " | ".join(tools)
        + " | "
        + " | ".join(f"{t} / evalnb" for t in tools[1:])
        + " |"
    )
    print("|---" * (1 + 2 * len(tools) - 1) + "|")
    for step, name in steps.items():
        cells, ratios = [], []
        base_work, base_wall = middle("evalnb", step, "work"), middle("evalnb", step, "wall")
        for tool in tools:
            work, wall = middle(tool, step, "work"), middle(tool, step, "wall")
            cells.append(
                f"{work:.2f} s (wall {wall:.2f} s)" if work is not None else f"wall {wall:.2f} s"
            )
            if tool != "evalnb":
                if work is not None:
                    ratios.append(f"{work / base_work:.1f}x (wall {wall / base_wall:.1f}x)")
                else:
                    ratios.append(f"wall {wall / base_wall:.1f}x")
        print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    print("\nversions:", versions)


if __name__ == "__main__":
    main()
