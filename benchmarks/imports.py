"""What a fresh process pays before its first result, each beside a baseline measured in the
same run; and, with ``--yaml``, what reading a large YAML suite costs, beside the two-pass
pure-Python reader it replaced.

Every measurement is a fresh interpreter; rounds alternate the commands so load on this
shared machine falls on all of them alike; medians (and the best) are reported.

- imports: each statement's wall time, and net of a bare interpreter start; the ratios of
  ``import evalnb`` and ``import evalnb.analysis`` to ``import pandas`` (targets 1.5 and 1.3).
- read: a 2,000-sample run (200 cases x 10 repeats, one "includes" check, a mock model that
  answers at once) written by evalnb and by Inspect AI; a fresh process loads it and takes
  the pass rate per case: ``evalnb.load`` + ``evalnb.rates(run, by="case_id")`` against
  Inspect's ``samples_df`` grouped by id (target: evalnb <= 0.5x Inspect, whole process).
  Inspect runs from ``build/peers-venv`` (``make bench-peers``; ``--peers-python`` to point
  elsewhere), and is skipped, said so, when missing.
- run: the first ``evalnb.run()`` of those 2,000 instant samples in a fresh process after
  ``import evalnb``, so it loads the runner itself; also the same run() with the runner
  imported first (how ``benchmarks/peers.py`` times work) (target <= 0.25 s).
- report: ``evalnb report RUN --html FILE`` on 100 cases (``benchmarks/report.py``'s run:
  2 variants x 10 repeats, 3 checks), the whole command, and its work after imports as
  ``benchmarks/report.py`` times it (target <= 1 s).

With ``--yaml`` a 10,000-test promptfoo config and the 10,000-case ``cases.yaml`` it imports
to are written to a temporary folder; each round, in fresh interpreters, ``load_cases`` of
the cases file and ``evalnb import promptfoo`` of the config run once with the reader as it
is (libyaml, one pass) and once with the baseline reader (PyYAML's pure-Python ``compose``
then ``safe_load``: two passes), the order alternating. Reports the median CPU seconds and
peak resident memory of each.

    .venv/bin/python benchmarks/imports.py [--rounds 15] [--only imports,read,run,report]
    .venv/bin/python benchmarks/imports.py --yaml [--rounds 3] [--tests 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

STATEMENTS = {
    "python -c pass": "pass",
    "import pandas": "import pandas",
    "import evalnb": "import evalnb",
    "import evalnb.analysis": "import evalnb.analysis",
    "import evalnb.analysis + load, rates": "from evalnb.analysis import load, rates",
    "import evalnb.runner._session": "import evalnb.runner._session",
    "evalnb.rates (analysis on first use)": "import evalnb; evalnb.rates",
}


#: Runs in a fresh interpreter: argv is (what, reader, source, out); prints CPU seconds and
#: peak RSS (MiB) as JSON.
_YAML_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    what, reader, source, out = sys.argv[1:]
    import evalnb.cases._files as files

    def two_passes(path, text):
        # The reader before: PyYAML's pure-Python composer for the lines, then safe_load.
        import yaml
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
        defaults, items = files._split_top(path, data, "YAML")
        nodes = root
        if isinstance(root, yaml.MappingNode):
            nodes = {key.value: value for key, value in root.value}["cases"]
        lines = [node.start_mark.line + 1 for node in nodes.value]
        pairs = ((f"{path}:{line}", item) for line, item in zip(lines, items, strict=True))
        return defaults, str(path), pairs

    if reader == "baseline":
        files._yaml_items = two_passes
    started = time.process_time()
    if what == "load_cases":
        assert len(files.load_cases(source)) > 0
    else:
        from evalnb.cli import main
        assert main(["import", "promptfoo", source, "--out", out]) == 0
    cpu = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"cpu": cpu, "peak_mib": peak}))
    """
)


def _promptfoo_config(folder: Path, tests: int) -> Path:
    """A promptfoo config of ``tests`` tests, two assertions each, as YAML."""
    import yaml  # type: ignore[import-untyped]

    config = {
        "description": f"{tests:,} tests",
        "prompts": ["Answer the question: {{question}}"],
        "providers": ["openai:gpt-4o-mini"],
        "tests": [
            {
                "vars": {"question": f"What is the capital of country {i}?"},
                "assert": [
                    {"type": "contains", "value": f"City{i}"},
                    {"type": "icontains", "value": "capital"},
                ],
            }
            for i in range(tests)
        ],
    }
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def yaml_main(rounds: int, tests: int) -> None:
    """The YAML benchmark (see the module's docstring). promptfoo is hidden from the imports
    (``EVALNB_PROMPTFOO=off``): this measures evalnb's YAML reader, not promptfoo's expansion
    of the config (``benchmarks/expand.py`` measures that)."""
    os.environ["EVALNB_PROMPTFOO"] = "off"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = _promptfoo_config(folder, tests)
        suite = folder / "suite"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "evalnb.cli",
                "import",
                "promptfoo",
                str(config),
                "--out",
                str(suite),
            ],
            check=True,
            capture_output=True,
        )
        cases = suite / "cases.yaml"
        size = cases.stat().st_size / 2**20
        jobs = [
            (what, reader)
            for what in ("load_cases", "import promptfoo")
            for reader in ("libyaml, one pass", "baseline")
        ]
        got: dict[tuple[str, str], list[dict[str, float]]] = {job: [] for job in jobs}
        for round_ in range(rounds):
            for n, (what, reader) in enumerate(jobs[round_ % 2 :] + jobs[: round_ % 2]):
                source = cases if what == "load_cases" else config
                out = folder / f"out-{round_}-{n}"
                kind = "baseline" if reader == "baseline" else "current"
                done = subprocess.run(
                    [sys.executable, "-c", _YAML_CHILD, what, kind, str(source), str(out)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                got[(what, reader)].append(json.loads(done.stdout.splitlines()[-1]))
    print(f"{tests:,} tests, {size:.1f} MiB cases.yaml, median of {rounds}")
    print(f"{'what':<18} {'reader':<20} {'CPU s':>7} {'peak MiB':>9}")
    for (what, reader), values in got.items():
        cpu = float(np.median([v["cpu"] for v in values]))
        peak = float(np.median([v["peak_mib"] for v in values]))
        print(f"{what:<18} {reader:<20} {cpu:7.2f} {peak:9.0f}")


#: A fresh evalnb process reading a run: argv[1] the run; prints the time after imports.
_EVALNB_READ = textwrap.dedent(
    """
    import json, sys, time
    started = time.perf_counter()
    import evalnb
    run = evalnb.load(sys.argv[1])
    rate = evalnb.rates(run, by="case_id")
    done = time.perf_counter()
    assert rate["case_id"].nunique() == 200, rate
    print(json.dumps({"inside": done - started}))
    """
)

#: The same in Inspect's environment: its log folder, ``samples_df``, the rate per id.
_INSPECT_READ = textwrap.dedent(
    """
    import json, sys, time
    started = time.perf_counter()
    from inspect_ai.analysis import samples_df
    frame = samples_df(sys.argv[1])
    score = [c for c in frame.columns if c.startswith("score_")][0]
    rate = (frame[score] == "C").groupby(frame["id"]).mean()
    done = time.perf_counter()
    assert len(rate) == 200, rate
    print(json.dumps({"inside": done - started}))
    """
)

#: The first run() in a fresh process: argv = out, "lazy" (only ``import evalnb`` before)
#: or "imported" (the runner imported first, as benchmarks/peers.py times its work).
_FIRST_RUN = textwrap.dedent(
    """
    import json, sys, time
    started = time.perf_counter()
    import evalnb
    if sys.argv[2] == "imported":
        import evalnb.runner._session
    async def instant(request):
        return "Default output from mockllm/model"
    check = {"type": "contains", "text": "output"}
    cases = [evalnb.Case(f"case-{i:05d}", prompt=f"question {i}", checks=[check])
             for i in range(200)]
    before, cpu = time.perf_counter(), time.process_time()
    evalnb.run(cases, evalnb.Function(instant), repeats=10, out=sys.argv[1], concurrency=64,
               progress=False)
    done = time.perf_counter()
    print(json.dumps({"run": done - before, "run_cpu": time.process_time() - cpu,
                      "inside": done - started}))
    """
)


def _child(command: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``command`` (a fresh process); its JSON last line, with ``wall`` added."""
    start, before = time.perf_counter(), sum(os.times()[2:4])
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    cpu = sum(os.times()[2:4]) - before  # the child's user + system CPU, its children's too
    if done.returncode:
        raise RuntimeError(f"{command[:3]} failed:\n{done.stderr[-3000:]}")
    lines = done.stdout.strip().splitlines()
    got = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return {**got, "wall": wall, "cpu": cpu}


def _row(name: str, values: list[dict[str, float]], key: str, cpu: str) -> str:
    """A table row: the median and best of ``key``, and the median CPU seconds ``cpu``."""
    got = [v[key] for v in values]
    spent = np.median([v[cpu] for v in values])
    return f"| {name} | {np.median(got):.3f} s | {min(got):.3f} s | {spent:.3f} s |"


def imports_main(rounds: int) -> None:
    """Each statement in a fresh interpreter, ``import pandas`` the baseline."""
    got: dict[str, list[dict[str, float]]] = {name: [] for name in STATEMENTS}
    for round_ in range(rounds):
        names = list(STATEMENTS)[:: 1 if round_ % 2 == 0 else -1]
        for name in names:
            got[name].append(_child([sys.executable, "-c", STATEMENTS[name]]))
    median = {
        key: {name: float(np.median([v[key] for v in got[name]])) for name in got}
        for key in ("wall", "cpu")
    }
    bare = median["wall"]["python -c pass"]
    print(f"\n## imports, median of {rounds}\n")
    print("| statement | median | best | net of start | CPU, median |\n|---|---|---|---|---|")
    for name, values in got.items():
        wall, best = median["wall"][name], min(v["wall"] for v in values)
        cells = [f"{x * 1000:.0f} ms" for x in (wall, best, wall - bare, median["cpu"][name])]
        print(f"| `{name}` | {' | '.join(cells)} |")
    for name, target in (("import evalnb", 1.5), ("import evalnb.analysis", 1.3)):
        ratio = median["wall"][name] / median["wall"]["import pandas"]
        net = (median["wall"][name] - bare) / (median["wall"]["import pandas"] - bare)
        cpu = median["cpu"][name] / median["cpu"]["import pandas"]
        print(f"\n{name} / import pandas: {ratio:.2f} (net of start {net:.2f}, CPU {cpu:.2f});")
        print(f"target <= {target}")


def _peers_env(home: Path) -> dict[str, str]:
    """Inspect's environment: no network, logs and config under ``home``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"INSPECT_LOG_DIR": str(home / "inspect-logs"), "NO_PROXY": "127.0.0.1"})
    return env


def read_main(rounds: int, folder: Path, peers_python: Path) -> None:
    """load + rate per case, evalnb against Inspect's samples_df, on the same work."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from peers import INSPECT  # the Inspect child benchmarks/peers.py runs

    ours = folder / "evalnb-run"
    _child([sys.executable, "-c", _FIRST_RUN, str(ours), "lazy"])
    have_inspect = peers_python.exists()
    theirs = folder / "inspect-log"
    if have_inspect:
        code = INSPECT.replace("IN_FLIGHT", "64")
        _child(
            [str(peers_python), "-c", code, "a", str(theirs), "200", "10", "-"], _peers_env(folder)
        )
    else:
        print(f"Inspect AI skipped: {peers_python} missing (make bench-peers installs it)")
    got: dict[str, list[dict[str, float]]] = {"evalnb": [], "Inspect AI": []}
    for round_ in range(rounds):
        order = ["evalnb", "Inspect AI"][:: 1 if round_ % 2 == 0 else -1]
        for tool in order:
            if tool == "evalnb":
                got[tool].append(_child([sys.executable, "-c", _EVALNB_READ, str(ours)]))
            elif have_inspect:
                command = [str(peers_python), "-c", _INSPECT_READ, str(theirs)]
                got[tool].append(_child(command, _peers_env(folder)))
    print(f"\n## read: load + pass rate per case, 2,000 samples, fresh process, {rounds} rounds\n")
    print("| tool | whole process, median | best | CPU, median | after start, median |")
    print("|---|---|---|---|---|")
    for tool, values in got.items():
        if values:
            inside = float(np.median([v["inside"] for v in values]))
            print(f"{_row(tool, values, 'wall', 'cpu')} {inside:.3f} s |")
    if got["Inspect AI"]:
        ours_wall = np.median([v["wall"] for v in got["evalnb"]])
        ratio = ours_wall / np.median([v["wall"] for v in got["Inspect AI"]])
        spent = np.median([v["cpu"] for v in got["evalnb"]]) / np.median(
            [v["cpu"] for v in got["Inspect AI"]]
        )
        print(f"\nevalnb / Inspect AI, whole process: {ratio:.2f} (CPU {spent:.2f}); target 0.5")


def run_main(rounds: int, folder: Path) -> None:
    """The first run() of 2,000 instant samples in a fresh process."""
    bare: list[dict[str, float]] = []
    got: dict[str, list[dict[str, float]]] = {"lazy": [], "imported": []}
    for round_ in range(rounds):
        bare.append(_child([sys.executable, "-c", "pass"]))
        for how in ("lazy", "imported")[:: 1 if round_ % 2 == 0 else -1]:
            out = folder / f"run-{how}-{round_}"
            got[how].append(_child([sys.executable, "-c", _FIRST_RUN, str(out), how]))
    print(f"\n## first run(): 2,000 instant samples, fresh process, {rounds} rounds\n")
    print("| measured | median | best | CPU, median |\n|---|---|---|---|")
    print(_row("`python -c pass` (the baseline: an interpreter's start)", bare, "wall", "cpu"))
    print(_row("run() after `import evalnb` (it loads the runner)", got["lazy"], "run", "run_cpu"))
    imported = got["imported"]
    print(_row("run() after `import evalnb.runner._session`", imported, "run", "run_cpu"))
    print(_row("the whole process (import evalnb, cases, run())", got["lazy"], "wall", "cpu"))
    print("\ntarget: the first run() <= 0.25 s")


#: What ``evalnb report RUN --html FILE`` does, its imports timed apart (ended by a full
#: collection, the interpreter's first after them); argv = run, page.
_REPORT = textwrap.dedent(
    """
    import gc, json, os, sys, time
    started = time.perf_counter()
    from evalnb.analysis import load
    from evalnb.report import Report
    import evalnb.plots
    gc.collect()
    imported, cpu = time.perf_counter(), sum(os.times()[:4])
    report = Report.of(load(sys.argv[1]))
    text = report.text()
    page = report.html(processes=len(os.sched_getaffinity(0)))
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        handle.write(page)
    done = time.perf_counter()
    work_cpu = sum(os.times()[:4]) - cpu  # the forked drawers' too, once waited for
    print(json.dumps({"imports": imported - started, "work": done - imported,
                      "work_cpu": work_cpu}))
    """
)


def report_main(rounds: int, folder: Path) -> None:
    """`evalnb report --html` on 100 cases: the whole command and its work after imports."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from report import rows  # benchmarks/report.py's run

    sys.path.insert(0, str(ROOT))
    from tests.builders import write_run

    run = write_run(folder / "cases100", rows(100), batch=5_000)
    page = folder / "report.html"
    got: dict[str, list[dict[str, float]]] = {"bare": [], "command": [], "work": []}
    commands = {
        "bare": [sys.executable, "-c", "pass"],
        "command": [sys.executable, "-m", "evalnb.cli", "report", str(run), "--html", str(page)],
        "work": [sys.executable, "-c", _REPORT, str(run), str(page)],
    }
    for round_ in range(rounds):
        names = list(commands)
        for name in names[round_ % 3 :] + names[: round_ % 3]:
            got[name].append(_child(commands[name]))
    print(f"\n## report: `evalnb report RUN --html FILE`, 100 cases, {rounds} rounds\n")
    print("| measured | median | best | CPU, median |\n|---|---|---|---|")
    print(_row("`python -c pass` (the baseline)", got["bare"], "wall", "cpu"))
    print(_row("the whole command", got["command"], "wall", "cpu"))
    work = got["work"]
    print(_row("its work after imports (load, analysis, figures, page)", work, "work", "work_cpu"))
    imports = [{"imports": v["imports"], "rest": v["cpu"] - v["work_cpu"]} for v in work]
    print(_row("its imports (CPU: the process but its work)", imports, "imports", "rest"))
    print("\ntarget: <= 1 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--yaml", action="store_true", help="the YAML suite benchmark instead")
    parser.add_argument("--tests", type=int, default=10_000, help="--yaml: tests in the config")
    parser.add_argument(
        "--only",
        default="imports,read,run,report",
        help="comma-separated: imports, read, run, report (default: all)",
    )
    parser.add_argument(
        "--peers-python",
        type=Path,
        default=ROOT / "build" / "peers-venv" / "bin" / "python",
        help="the Python of Inspect AI's environment (make bench-peers)",
    )
    args = parser.parse_args()
    if args.yaml:
        yaml_main(args.rounds, args.tests)
        return
    only = set(args.only.split(","))
    unknown = only - {"imports", "read", "run", "report"}
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "imports" in only:
            imports_main(args.rounds)
        if "read" in only:
            read_main(args.rounds, folder, args.peers_python)
        if "run" in only:
            run_main(args.rounds, folder)
        if "report" in only:
            report_main(args.rounds, folder)


if __name__ == "__main__":
    main()
