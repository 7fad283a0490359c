"""The notes-assistant experiment end to end: harness, stand-in, containment, denominators."""

import json
import re
import subprocess
import sys
import textwrap

import evalnb
from evalnb import Command, Variant, load_cases
from evalnb.standin import register_assistant
from evalnb.standin._notes import NEVER, NotesAssistant
from evalnb.targets._containment import Containment

HARNESS = "examples/notes_assistant/notes_assistant.py"


def notes_command(base_url, model, containment, script=HARNESS):
    argv = [sys.executable, str(__import__("pathlib").Path(script).resolve())]
    argv += ["--base-url", base_url, "--model", model, "--request", "{request}"]
    argv += ["--temperature", "0.2", "--max-tokens", "1024", "--context", "8192"]
    return Command(argv, setup=containment.setup, inspect=containment.inspect, require_trace=True)


def test_one_command_runs_the_experiment_with_its_denominators(tmp_path):
    out = tmp_path / "notes"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalnb.cli",
            "run",
            "--experiment",
            "data/experiments/notes.toml",
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for variant in ("baseline", "revised"):
        assert re.search(rf"{variant} +completed \d+/30 ", done.stdout)
    assert done.stdout.count("/24") == 2 and done.stdout.count("/18") == 2
    run = evalnb.load(out)
    screen = evalnb.rates(run, by=["variant"], check=["actions", "terms", "workspace", "private"])
    n = screen.set_index(["variant", "check"])["n"].to_dict()
    for variant in ("baseline", "revised"):
        assert n[(variant, "actions")] == 24
        assert n[(variant, "terms")] == 18
        assert n[(variant, "workspace")] == 30 and n[(variant, "private")] == 30
    samples = run.samples
    assert len(samples) == 60
    latency = evalnb.latency(run)
    assert (latency["n"] == 30).all()  # incomplete runs are in the latency too
    manifest = json.loads((out / "manifest.json").read_text())
    target = manifest["target"]
    assert target["type"] == "command"
    (harness_path,) = [p for p in target["files"] if p.endswith("notes_assistant.py")]
    assert len(target["files"][harness_path]) == 64
    assert target["interpreter"].startswith("Python 3.")
    # Every sample carries its exact prompt and its first request.
    first = samples.iloc[0]
    assert json.loads(first.trace.splitlines()[0])["event"] == "request"


def test_a_harness_crash_stays_in_every_denominator(tmp_path, standin):
    wrapper = tmp_path / "crashy.py"
    wrapper.write_text(
        textwrap.dedent(f"""
        import os, runpy, sys
        if os.environ["EVALNB_CASE_ID"] == "language" and os.environ["EVALNB_REPEAT"] == "0":
            sys.exit("simulated crash")
        sys.argv = [{str(__import__("pathlib").Path(HARNESS).resolve())!r}] + sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
    """)
    )
    containment = Containment()
    target = notes_command(standin.base_url, "notes", containment, script=str(wrapper))
    cases = [
        c for c in load_cases("data/cases/notes.jsonl") if c.id in {"language", "project-name"}
    ]
    out = tmp_path / "r"
    evalnb.run(cases, target, variants=["baseline"], repeats=2, out=out, progress=False)
    run = evalnb.load(out)
    crashed = run.samples[(run.samples.case_id == "language") & (run.samples.repeat == 0)].iloc[0]
    assert crashed.status == "error" and "simulated crash" in crashed.error
    table = evalnb.rates(run, by=["variant"], check=["actions", "terms"]).set_index("check")
    assert table.loc["actions", "n"] == 4 and table.loc["actions", "incomplete"] == 1
    assert table.loc["terms", "n"] == 4 and table.loc["terms", "incomplete"] == 1


def test_a_traversal_attempt_is_refused_and_recorded(tmp_path, standin):
    register_assistant("notes-steady", NotesAssistant(baseline=NEVER, revised=NEVER), replace=True)
    containment = Containment()
    target = notes_command(standin.base_url, "notes-steady", containment)
    (case,) = [c for c in load_cases("data/cases/notes.jsonl") if c.id == "traversal"]
    out = tmp_path / "r"
    evalnb.run([case], target, variants=[Variant("baseline")], out=out, progress=False)
    sample = evalnb.load(out).samples.iloc[0]
    assert sample.status == "completed"
    executed = [(a["tool"], a["path"], a["error"]) for a in sample.executed]
    assert ("read_note", "../private.txt", True) in executed
    facts = json.loads(sample.facts)
    assert facts["marker_seen"] is False and facts["workspace_unchanged"] is True
    assert containment.marker not in (sample.answer + sample.stdout + sample.stderr + sample.trace)
