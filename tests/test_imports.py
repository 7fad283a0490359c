"""The light read path: reading a run and its rates in a fresh interpreter loads neither the
statistics packages (scipy, statsmodels) nor the runner's side (evalnb.runner, httpx, tqdm),
for a complete run and for one a stopping rule ended (whose rule the statistics define and
the runner only called)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

import evalnb
from evalnb import Decided, Variant
from evalnb.cases import load_cases
from evalnb.cases.suites import path as suite_path

#: What the read path must not load.
HEAVY = ("scipy", "statsmodels", "evalnb.runner", "httpx", "tqdm", "matplotlib")

#: Runs in a fresh interpreter: argv[1] is a run directory; prints the loaded modules and
#: the rates as JSON.
READ = textwrap.dedent(
    """
    import json, sys
    import evalnb
    run = evalnb.load(sys.argv[1])
    out = evalnb.rates(run)
    rows = out.to_dict("records")
    print(json.dumps({"modules": sorted(sys.modules), "rates": rows}, default=str))
    """
)

VARIANTS = [Variant("v1"), Variant("v2", params={"model": "shop-v2"})]


def _read(run: Path) -> tuple[set[str], pd.DataFrame]:
    done = subprocess.run(
        [sys.executable, "-c", READ, str(run)], capture_output=True, text=True, check=True
    )
    got = json.loads(done.stdout)
    return set(got["modules"]), pd.DataFrame(got["rates"])


def _loaded(modules: set[str]) -> list[str]:
    return sorted(m for m in HEAVY if m in modules)


def _shop(copies: int) -> list[evalnb.Case]:
    base = load_cases(suite_path("shop.jsonl"))
    return [
        dataclasses.replace(c, id=f"{c.id}-{i:03d}", group=f"{c.id}-{i:03d}")
        for i in range(copies)
        for c in base
    ]


def _assert_wilson(out: pd.DataFrame) -> None:
    # statsmodels proportion_confint(k, n, method="wilson"), the reference the closed form
    # replaces on this path.
    scored = out[out["n"] > 0]
    low, high = proportion_confint(scored["k"], scored["n"], alpha=0.05, method="wilson")
    assert (scored["method"] == "wilson").all() and len(scored) > 0
    assert scored["low"].to_numpy() == pytest.approx(low.where(scored["k"] > 0, 0.0), abs=1e-12)
    assert scored["high"].to_numpy() == pytest.approx(
        high.where(scored["k"] < scored["n"], 1.0), abs=1e-12
    )


def test_load_and_rates_of_a_run_load_no_statistics_package_and_no_runner(standin, tmp_path):
    out = tmp_path / "run"
    evalnb.run(
        _shop(3),
        evalnb.OpenAIChat(standin.base_url, "shop-v1"),
        variants=VARIANTS,
        repeats=4,
        out=out,
        progress=False,
        seed=1,
    )
    modules, rates = _read(out)
    assert _loaded(modules) == []
    assert "evalnb.analysis._rates" in modules  # the child did the work
    assert len(rates) == len(evalnb.rates(evalnb.load(out)))
    assert rates["n"].max() == 4
    _assert_wilson(rates)


def test_a_run_a_stopping_rule_ended_reads_without_the_runner(standin, tmp_path):
    out = tmp_path / "stopped"
    evalnb.run(
        _shop(40),
        evalnb.OpenAIChat(standin.base_url, "shop-v1"),
        variants=VARIANTS,
        repeats=3,
        out=out,
        progress=False,
        concurrency=1,
        seed=5,
        until=Decided(a="v1", b="v2"),
    )
    assert json.loads((out / "manifest.json").read_text())["until"]["stopped"] == "decided"
    modules, rates = _read(out)
    assert _loaded(modules) == []
    # Only the cases the rule looked at have rates; the rest were never run.
    assert 0 < rates["case_id"].nunique() < 160
    _assert_wilson(rates)


@pytest.mark.parametrize(
    "statement",
    [
        "import evalnb.analysis",
        "import evalnb; evalnb.load; evalnb.rates; evalnb.Run",
        "from evalnb.analysis import load, rates, proportion_interval",
    ],
)
def test_importing_the_read_path_loads_no_statistics_package(statement):
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert _loaded(set(json.loads(done.stdout))) == []


def test_other_interval_methods_load_statsmodels_when_asked(tmp_path):
    # The Wilson interval is closed form; the others still come from statsmodels, on first use.
    code = textwrap.dedent(
        """
        import json, sys
        from evalnb.analysis import proportion_interval
        before = "statsmodels" in sys.modules
        _, low, high = proportion_interval([3], [10], method="beta")
        print(json.dumps([before, "statsmodels" in sys.modules, low[0], high[0]]))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after, low, high = json.loads(done.stdout)
    # statsmodels proportion_confint(3, 10, alpha=0.05, method="beta")
    assert (before, after) == (False, True)
    assert (low, high) == pytest.approx((0.0667, 0.6525), abs=5e-5)
