"""What CI systems read: gate --junit (parsed by junitparser), report --markdown (rendered by
markdown-it-py), and the progress bar off when stderr is not a terminal."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml
from markdown_it import MarkdownIt

import evalnb
from evalnb.cli import main
from evalnb.cli._ci import show_progress
from evalnb.standin import StandIn

SHOP = evalnb.cases.suites.path("shop.jsonl")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shop_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ci") / "shop"
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1")
        variants = [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]
        evalnb.run(SHOP, target, variants=variants, repeats=10, out=out, progress=False)
    return out


def test_gate_junit_is_read_by_a_junit_consumer(shop_run, tmp_path, capsys):
    path = tmp_path / "gate.xml"
    code = main(
        [
            "gate",
            str(shop_run),
            "--min-rate",
            "0.8",
            "--min-case-rate",
            "0.3",
            "--junit",
            str(path),
            "--junit-cases",
        ]
    )
    out = capsys.readouterr().out
    suites = list(JUnitXml.fromfile(str(path)))
    rules, cases = suites
    assert rules.name == "gate" and cases.name == "gate cases"
    by_name = {case.name: case for case in rules}
    # one test case per rule and variant, as the terminal lists them
    assert set(by_name) == {
        "run_complete",
        "min_rate [v1]",
        "min_rate [v2]",
        "min_case_rate [v1]",
        "min_case_rate [v2]",
    }
    failed = {name for name, case in by_name.items() if not case.is_passed}
    assert failed == {
        line.split()[0] + f" [{line.split()[1]}]"
        for line in out.splitlines()
        if " FAIL " in line and not line.startswith("gate:")
    }
    assert "min_rate [v1]" in failed  # shop-v1's true rate is 0.70
    failure = by_name["min_rate [v1]"].result[0]
    assert isinstance(failure, Failure) and "samples, 4 cases" in failure.message
    assert rules.tests == 5 and rules.failures == len(failed)
    assert code == (1 if failed else 0)
    # one test case per case and variant
    assert cases.tests == 8
    assert {(c.classname, c.name) for c in cases} == {
        (f"evalnb.cases._files.{v}", c.id) for v in ("v1", "v2") for c in evalnb.load_cases(SHOP)
    }


def test_gate_no_flaky_fails_the_flaky_cases_in_junit(shop_run, tmp_path, capsys):
    per_case = evalnb.rates(evalnb.load(shop_run), by=["variant", "case_id"])
    flaky = {(row.variant, row.case_id) for row in per_case.itertuples() if 0 < row.k < row.n}
    assert flaky  # the stand-in's shop assistants pass some repeats and fail others
    path = tmp_path / "gate.xml"
    code = main(["gate", str(shop_run), "--no-flaky", "--junit", str(path), "--junit-cases"])
    out = capsys.readouterr().out
    assert code == 1
    assert "no_flaky" in out
    rules, cases = list(JUnitXml.fromfile(str(path)))
    assert {c.name for c in rules if not c.is_passed} == {f"no_flaky [{v}]" for v, _ in flaky}
    failed = {(c.classname.rsplit(".", 1)[-1], c.name) for c in cases if not c.is_passed}
    assert flaky <= failed


def test_junit_cases_needs_junit(shop_run, capsys):
    assert main(["gate", str(shop_run), "--min-rate", "0.5", "--junit-cases"]) == 2
    assert capsys.readouterr().err.strip() == (
        "evalnb gate: error: --junit-cases needs --junit FILE"
    )


def test_report_markdown_renders_as_tables(shop_run, capsys):
    assert main(["report", str(shop_run), "--markdown"]) == 0
    text = capsys.readouterr().out
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables = [t for t in tokens if t.type == "table_open"]
    assert len(tables) >= 4
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<th>variant</th>" in html and "<td>v1</td>" in html and "<td>v2</td>" in html
    # a check name with an underscore stays literal text, not emphasis
    assert "<td>word_count</td>" in html
    assert text.startswith("## evalnb report: shop")


def test_progress_follows_the_terminal():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plain = Namespace(progress=False, no_progress=False)
    assert show_progress(plain, io.StringIO()) is False
    assert show_progress(plain, Tty()) is True
    assert show_progress(Namespace(progress=True, no_progress=False), io.StringIO()) is True
    assert show_progress(Namespace(progress=False, no_progress=True), Tty()) is False


def _run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "evalnb.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_run_in_a_pipe_draws_no_bar_unless_asked(tmp_path):
    base = ["run", str(SHOP), "--standin", "--model", "shop-v1", "--repeats", "2"]
    quiet = _run_cli([*base, "--out", str(tmp_path / "quiet")])
    assert quiet.returncode == 0, quiet.stderr
    assert "sample/s" not in quiet.stderr and "8/8" not in quiet.stderr
    shown = _run_cli([*base, "--out", str(tmp_path / "shown"), "--progress"])
    assert shown.returncode == 0, shown.stderr
    assert "8/8" in shown.stderr
