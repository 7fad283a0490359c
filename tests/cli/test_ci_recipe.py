"""examples/ci/evals.yml cannot rot: every ``run:`` step runs, in order, in bash, against the
stand-in, with last week's run restored as the baseline.

GitHub-only steps (``uses:``: checkout, setup-python, the cache, upload-artifact) are not
executed; the checkout is played by putting the shop cases where the workflow reads them,
the cache restore by copying the prepared baseline into place. Steps
follow GitHub's ``if:`` rules: after a failed step only ``always()``/``failure()`` steps run.
The install step runs real pip with ``--dry-run`` and ``--no-index`` (from the environment),
so it checks the requirement against the installed evalnb and changes nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

import evalnb
from evalnb.standin import StandIn

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "evals.yml"
SHOP = evalnb.cases.suites.path("shop.jsonl")


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _should_run(condition: str | None, failed: bool) -> bool:
    condition = (condition or "success()").strip().removeprefix("${{").removesuffix("}}").strip()
    outcomes = {"always()": True, "success()": not failed, "failure()": failed}
    if condition not in outcomes:
        raise AssertionError(f"the test cannot evaluate the step condition {condition!r}")
    return outcomes[condition]


def _play(workspace: Path, env: dict[str, str]) -> list[tuple[str, int | None]]:
    """Run the workflow's job in ``workspace``: (step name, exit code or None if skipped)."""
    workflow = _workflow()
    (job,) = workflow["jobs"].values()
    shell = workflow["defaults"]["run"]["shell"]
    assert shell == "bash"
    played: list[tuple[str, int | None]] = []
    failed = False
    for step in job["steps"]:
        name = step.get("name") or step.get("uses")
        if "uses" in step:
            if step["uses"].startswith("actions/checkout"):
                # the repository the workflow lives in: its cases file
                cases = workspace / env["EVALNB_CASES"]
                cases.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(SHOP, cases)
            elif step["uses"].startswith("actions/cache/restore"):
                # what the cache would restore: the baseline prepared by the test
                shutil.copytree(env["TEST_BASELINE"], workspace / step["with"]["path"])
            played.append((name, None))
            continue
        if not _should_run(step.get("if"), failed):
            played.append((name, None))
            continue
        script = step["run"]
        assert "${{" not in script, f"step {name!r} uses a GitHub expression in its script"
        # GitHub runs `shell: bash` as `bash --noprofile --norc -eo pipefail {0}`
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        played.append((name, done.returncode))
        (workspace / f"step-{len(played)}.log").write_text(done.stdout + done.stderr)
        failed = failed or done.returncode != 0
    return played


@pytest.fixture(scope="module")
def server():
    with StandIn(seed=0) as running:
        yield running


@pytest.fixture(scope="module")
def last_week(server, tmp_path_factory):
    """Last week's run: shop-v2 (true pass rate 0.90), written where CI wrote it."""
    out = tmp_path_factory.mktemp("last-week") / "runs" / "current"
    evalnb.run(
        SHOP,
        evalnb.OpenAIChat(server.base_url, "shop-v2"),
        repeats=25,
        out=out,
        progress=False,
    )
    return out


def _environment(server, baseline: Path, model: str, tmp_path: Path) -> dict[str, str]:
    workflow = _workflow()
    given = {
        "EVALNB_BASE_URL": server.base_url,
        "EVALNB_MODEL": model,
        "OPENAI_API_KEY": "sk-test-not-a-secret",
    }
    env = {}
    for key, value in workflow["env"].items():
        if "${{" in str(value):
            assert key in given, f"the test must give {key} (the workflow reads it from GitHub)"
            env[key] = given[key]
        else:
            env[key] = str(value)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        HOME=os.environ.get("HOME", str(tmp_path)),
        PYTHONPATH=str(ROOT),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        PIP_DRY_RUN="1",
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        TEST_BASELINE=str(baseline),
    )
    return env


def test_every_run_step_works_and_the_same_model_passes(server, last_week, tmp_path):
    workspace = tmp_path / "repo"
    workspace.mkdir()
    env = _environment(server, last_week, "shop-v2", tmp_path)
    played = _play(workspace, env)
    ran = [(name, code) for name, code in played if code is not None]
    run_steps = [s for s in _workflow()["jobs"]["evals"]["steps"] if "run" in s]
    assert [name for name, _ in ran] == [s["name"] for s in run_steps]
    assert all(code == 0 for _, code in ran), played
    gate = (workspace / "runs" / "gate.txt").read_text()
    assert re.search(r"^baseline .*(no worse|can't tell yet) \(4 cases x 25 repeats", gate, re.M)
    assert gate.rstrip().endswith("gate: PASS (3 rules)")
    assert (workspace / "runs" / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert (workspace / "runs" / "gate.xml").read_text().startswith("<?xml")
    summary = (tmp_path / "summary.md").read_text()
    assert "### Gate" in summary
    rendered = MarkdownIt("commonmark").enable("table").render(summary)
    assert rendered.count("<table>") >= 4
    # the passing run is next week's baseline
    assert (workspace / "baseline" / "manifest.json").is_file()
    assert evalnb.load(workspace / "baseline").manifests["current"]["status"] == "complete"


def test_a_regression_fails_the_job_but_still_reports(server, last_week, tmp_path):
    workspace = tmp_path / "repo"
    workspace.mkdir()
    env = _environment(server, last_week, "shop-v1", tmp_path)
    played = dict(_play(workspace, env))
    assert played["Gate against the baseline and a minimum rate"] == 1
    assert played["Report"] == 0  # if: always()
    assert played["Make this run the next baseline"] is None  # if: success()
    gate = (workspace / "runs" / "gate.txt").read_text()
    assert re.search(r"^baseline .*FAIL .*: worse \(4 cases x 25 repeats", gate, re.M)
    # the baseline is still last week's run, not the regressed one
    restored = evalnb.load(workspace / "baseline").samples
    assert set(restored["model"].astype(str)) == {"shop-v2"}
    assert "gate: FAIL" in (tmp_path / "summary.md").read_text()


def test_the_recipe_runs_on_prompt_changes_weekly_and_by_hand():
    # PyYAML reads the key `on` as True (YAML 1.1)
    triggers = _workflow()[True]
    assert set(triggers) >= {"push", "schedule", "workflow_dispatch"}
    assert triggers["schedule"][0]["cron"].split()[-1] == "1"  # Mondays
    uses = [s.get("uses", "") for s in _workflow()["jobs"]["evals"]["steps"]]
    assert any(u.startswith("actions/cache/restore") for u in uses)
    assert any(u.startswith("actions/upload-artifact") for u in uses)
