"""What promptfoo's expansion adds to ``evalnb import promptfoo``.

Each round imports the same config twice, in alternating order: with promptfoo here (the
config expanded by ``promptfoo eval --providers echo`` and every (test, prompt) pair compared
with evalnb's rendering) and with promptfoo hidden (``EVALNB_PROMPTFOO=off``: evalnb's
translation alone). Configs: the tests' ``promptfoo_features/features`` (4 tests x 2 prompts,
a CSV file) and a generated one of ``--tests`` tests x 2 prompts. Medians of wall seconds.

    .venv/bin/python benchmarks/expand.py [--rounds 5] [--tests 500]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from evalnb.checks import find_promptfoo
from evalnb.interop import import_promptfoo

ROOT = Path(__file__).resolve().parent.parent
FEATURES = ROOT / "tests" / "data" / "promptfoo_features" / "features" / "promptfooconfig.yaml"


def generated(folder: Path, tests: int) -> Path:
    """A config of ``tests`` tests, each with two vars and one assertion, and two prompts."""
    config = {
        "prompts": ["Explain {{ topic }} to a {{ level }} reader.", "Topic: {{ topic }}"],
        "providers": ["openai:chat:gpt-4o-mini"],
        "tests": [
            {
                "vars": {"topic": f"topic {n}", "level": ["new", "expert"][n % 2]},
                "assert": [{"type": "icontains", "value": f"topic {n}"}],
            }
            for n in range(tests)
        ],
    }
    path = folder / "promptfooconfig.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def timed(config: Path, hidden: bool) -> tuple[float, str]:
    if hidden:
        os.environ["EVALNB_PROMPTFOO"] = "off"
    else:
        os.environ.pop("EVALNB_PROMPTFOO", None)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = import_promptfoo(config, Path(out) / "suite")
        seconds = time.perf_counter() - start
    assert result.expansion is not None
    return seconds, str(result.expansion["line"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tests", type=int, default=500)
    args = parser.parse_args()
    engine = find_promptfoo()
    if engine is None:
        raise SystemExit("promptfoo is not installed: `make promptfoo` installs it")
    print(f"{engine.name}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        configs = {"features": FEATURES, f"{args.tests} tests": generated(Path(folder), args.tests)}
        for name, config in configs.items():
            times: dict[bool, list[float]] = {False: [], True: []}
            lines = {}
            for n in range(args.rounds):
                for hidden in (False, True) if n % 2 == 0 else (True, False):
                    seconds, lines[hidden] = timed(config, hidden)
                    times[hidden].append(seconds)
            expanded, hidden = statistics.median(times[False]), statistics.median(times[True])
            print(f"{name}: expanded {expanded:.2f} s, translation only {hidden:.2f} s")
            print(f"  {lines[False]}")


if __name__ == "__main__":
    main()
