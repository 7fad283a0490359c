"""What importing evalnb costs, beside pandas measured in the same run; and, with ``--yaml``,
what reading a large YAML suite costs, beside the two-pass pure-Python reader it replaced.

Each import runs in a fresh interpreter; rounds alternate the statements so load on this
shared machine falls on all of them alike. Reports the median wall time of each, the same
net of a bare interpreter start, and the ratio of ``import evalnb`` to ``import pandas``.

With ``--yaml`` a 10,000-test promptfoo config and the 10,000-case ``cases.yaml`` it imports
to are written to a temporary folder; each round, in fresh interpreters, ``load_cases`` of
the cases file and ``evalnb import promptfoo`` of the config run once with the reader as it
is (libyaml, one pass) and once with the baseline reader (PyYAML's pure-Python ``compose``
then ``safe_load``: two passes), the order alternating. Reports the median CPU seconds and
peak resident memory of each.

    .venv/bin/python benchmarks/imports.py [--rounds 15]
    .venv/bin/python benchmarks/imports.py --yaml [--rounds 3] [--tests 10000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

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
    """The YAML benchmark (see the module's docstring)."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--yaml", action="store_true", help="the YAML suite benchmark instead")
    parser.add_argument("--tests", type=int, default=10_000, help="--yaml: tests in the config")
    args = parser.parse_args()
    if args.yaml:
        yaml_main(args.rounds, args.tests)
        return
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
