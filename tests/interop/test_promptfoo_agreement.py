"""Differential agreement with promptfoo: for every promptfoo config in the tests' data,
promptfoo itself (``promptfoo eval --providers echo``, its model-graded assertions on the
stand-in's ``judge``) and evalnb (the imported suite, run on promptfoo's very answers through
a fixed-answer target, its judge the same stand-in) give the same verdict for every (sample,
assertion) pair. Any difference fails the test, naming the pair."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

import evalnb
from evalnb.checks._promptfoo import find_promptfoo, quiet_env
from evalnb.interop import import_promptfoo
from evalnb.interop._promptfoo import _loader
from evalnb.targets import Function, OpenAIChat

DATA = Path(__file__).parents[1] / "data"
PEERS = DATA / "peers"
CONFIGS = [
    PEERS / "shared/promptfoo/getting-started/promptfooconfig.yaml",
    PEERS / "shared/promptfoo/json-output/promptfooconfig.yaml",
    PEERS / "shared/promptfoo/simple-test/promptfooconfig.yaml",
    PEERS / "promptfoo/simple-csv/promptfooconfig.yaml",
    PEERS / "promptfoo/simple-test/promptfooconfig.yaml",
    PEERS / "promptfoo/graders/promptfooconfig.yaml",
    PEERS / "more/promptfoo/self-grading/promptfooconfig.yaml",
    PEERS / "more/promptfoo/simple-csv/promptfooconfig.yaml",
    PEERS / "more/promptfoo/named-metrics/promptfooconfig.yaml",
    PEERS / "more/promptfoo/claude-vs-gpt/promptfooconfig.yaml",
    PEERS / "more/promptfoo/summarization/promptfooconfig.yaml",
    PEERS / "more/promptfoo_results/greeting-4-providers/promptfooconfig.yaml",
    DATA / "promptfoo_features/features/promptfooconfig.yaml",
    DATA / "promptfoo_features/chat/promptfooconfig.yaml",
    DATA / "promptfoo_features/select_best/promptfooconfig.yaml",
]
#: What a fixed answer cannot share: the price promptfoo's echo provider reports (0) is not
#: the price of evalnb's fixed-answer target (none), so a cost assertion is left out.
NOT_COMPARED = {"cost"}
ERROR = 2  # promptfoo's failureReason for an error row
#: The promptfoo type of a check evalnb's own translation grades (see imported.json).
KEPT_TYPES = {"python_code": "python", "javascript": "javascript", "similar": "similar"}

#: The installed promptfoo is seen here (tests/interop/conftest.py hides it elsewhere).
ENGINE = True

needs_promptfoo = pytest.mark.skipif(
    find_promptfoo() is None, reason="promptfoo is not installed (make promptfoo installs it)"
)


def graded_on_standin(config: Path, tmp: Path) -> Path:
    """A copy of ``config``'s folder whose ``defaultTest`` sends promptfoo's grading to the
    stand-in: its ``judge`` for text, its embeddings for similarity."""
    folder = tmp / "promptfoo-suite"
    shutil.copytree(config.parent, folder)
    data = yaml.load(config.read_text(encoding="utf-8"), Loader=_loader())
    default = data.setdefault("defaultTest", {})
    provider = {"text": "openai:chat:judge", "embedding": "openai:embedding:judge"}
    default["options"] = {**(default.get("options") or {}), "provider": provider}
    copy = folder / config.name
    copy.write_text(yaml.safe_dump(json.loads(json.dumps(data)), sort_keys=False), "utf-8")
    return copy


def promptfoo_eval(config: Path, standin: Any, tmp: Path) -> dict[str, Any]:
    """promptfoo's own results for ``config`` with the echo provider."""
    engine = find_promptfoo()
    assert engine is not None
    out = tmp / "promptfoo-output.json"
    env = {**quiet_env(tmp), "OPENAI_BASE_URL": standin.base_url, "OPENAI_API_KEY": "standin"}
    config = graded_on_standin(config, tmp)
    argv = ["eval", "-c", str(config), "--providers", "echo"]
    argv += ["-o", str(out), "--no-cache", "--no-table", "--no-write", "--no-progress-bar"]
    done = subprocess.run(
        [*engine.command(), *argv],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def _messages(messages: Any) -> tuple[tuple[str, str], ...]:
    """Chat messages as comparable ``(role, text)`` pairs."""
    return tuple((str(m.get("role")), str(m.get("content")).strip()) for m in messages)


def _sent(row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """What promptfoo sent for ``row``: its rendered prompt read as promptfoo's chat
    providers read it (``parseChatPrompt``: YAML ``- role:`` lines, else JSON; a message
    list is the messages), other text as one user message."""
    raw = row["prompt"]["raw"]
    try:
        parsed = yaml.safe_load(raw) if raw.strip().startswith("- role:") else json.loads(raw)
    except (ValueError, yaml.YAMLError):
        parsed = None
    if isinstance(parsed, list) and all(isinstance(m, dict) and "role" in m for m in parsed):
        return _messages(parsed)
    return (("user", raw.strip()),)


def evalnb_run(
    config: Path, results: dict[str, Any], standin: Any, tmp: Path
) -> tuple[evalnb.Run, dict[tuple[str, str], dict[str, Any]]]:
    """evalnb's run of the imported suite on promptfoo's answers, and the promptfoo row
    each sample took its answer from: the row of the same prompt whose rendered messages
    are the ones evalnb sent (so the prompts must render alike too)."""
    import_promptfoo(config, tmp / "suite")
    experiment = evalnb.load_experiment(tmp / "suite/experiment.toml")
    rows = results["results"]["results"]
    prompts = len(results["results"]["prompts"])
    index = {v.name: i for i, v in enumerate(experiment.variants)}
    chosen: dict[tuple[str, str], dict[str, Any]] = {}

    def fixed(request: evalnb.Request) -> str:
        wanted = index[request.variant.name] % prompts
        sent = _messages(request.messages)
        # The row of the same prompt, else (evalnb refused a prompt) of the same messages.
        for row in sorted(rows, key=lambda r: r["promptIdx"] != wanted):
            if _sent(row) == sent:
                chosen[(request.case.id, request.variant.name)] = row
                # An error row (promptfoo's transform failed on it) keeps the echo's answer.
                response = row.get("response") or {}
                return str(response.get("output", row["prompt"]["raw"]))
        raise AssertionError(f"promptfoo sent no prompt {wanted} as evalnb did: {sent}")

    judge = OpenAIChat(standin.base_url, "judge")
    evalnb.run(
        tmp / "suite/cases.yaml",
        Function(fixed),
        variants=experiment.variants,
        repeats=1,
        out=tmp / "run",
        judge=judge,
        progress=False,
        trust_code=True,  # the graders are these tests' own files
    )
    return evalnb.load(tmp / "run"), chosen


def _assertions(tmp: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Each stored check's promptfoo assertion (type and value), by case and check name."""
    cases = evalnb.load_cases(tmp / "suite/cases.yaml")
    out = {}
    for case in cases:
        for check in case.checks:
            spec = check.spec
            assertion = spec.get("assertion") or {"type": KEPT_TYPES.get(check.type, check.type)}
            out[(case.id, check.name)] = assertion
    return out


def disagreements(
    run: evalnb.Run, chosen: dict[tuple[str, str], dict[str, Any]], tmp: Path
) -> tuple[int, list[str]]:
    """``(pairs compared, differences)``: each stored check against promptfoo's verdict on
    the same answer for the same assertion (matched by type and value, in order)."""
    specs = _assertions(tmp)
    compared, differences = 0, []
    missing = [s for s in run.samples.to_dict("records") if s["status"] != "completed"]  # type: ignore[union-attr]
    differences += [f"{s['case_id']}/{s['variant']}: no answer ({s['error']})" for s in missing]
    by_sample: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for check in run.checks.to_dict("records"):  # type: ignore[union-attr]
        by_sample[(check["case_id"], check["variant"])].append(check)
    for (case_id, variant), checks in sorted(by_sample.items()):
        row = chosen.get((case_id, variant))
        if row is None:
            continue  # listed above: promptfoo rendered no such prompt
        components = list((row.get("gradingResult") or {}).get("componentResults") or [])
        for check in checks:
            assertion = specs[(case_id, check["check"])]
            if assertion.get("type") in NOT_COMPARED:
                continue
            found = _take(components, assertion)
            if found is None and row.get("failureReason") == ERROR:
                found = {"pass": False}  # promptfoo's error row: no assertion passes
            compared += 1
            if found is None or bool(found["pass"]) is not check["outcome"]:
                verdict = None if found is None else found["pass"]
                differences.append(
                    f"{case_id}/{variant}/{check['check']}: evalnb {check['outcome']} "
                    f"({check['detail'][:80]!r}), promptfoo {verdict}"
                )
    return compared, differences


def _take(components: list[dict[str, Any]], assertion: dict[str, Any]) -> dict[str, Any] | None:
    """promptfoo's result for ``assertion``: the first of its type and value, else the first
    of its type (a CSV value promptfoo parsed into a list)."""
    for exact in (True, False):
        for i, component in enumerate(components):
            given = component.get("assertion") or {}
            if not given and str(component.get("reason", "")).startswith("Aggregate score"):
                given = {"type": "assert-set"}  # promptfoo stores a set's result so
            same = not exact or "value" not in assertion or given.get("value") == assertion["value"]
            if given.get("type") == assertion.get("type") and same:
                return components.pop(i)
    return None


@needs_promptfoo
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: Path(str(p)).parent.name)
def test_evalnb_agrees_with_promptfoo_on_every_pair(config, fresh_standin, tmp_path, monkeypatch):
    # A stand-in of the test's own: its judge's draws (it errs now and then, by design)
    # follow its seed alone, not what other tests asked it before.
    standin = fresh_standin
    monkeypatch.setenv("EVALNB_EMBEDDINGS_URL", standin.base_url)
    results = promptfoo_eval(config, standin, tmp_path)
    run, chosen = evalnb_run(config, results, standin, tmp_path)
    compared, differences = disagreements(run, chosen, tmp_path)
    assert differences == [], f"{len(differences)} of {compared} pairs differ:\n" + "\n".join(
        differences
    )
    assert len(run.samples) == len(chosen) > 0


RESULTS = [
    PEERS / "promptfoo_results/simple-test-output.json",
    PEERS / "promptfoo_results/v3-repeat-output.json",
    PEERS / "promptfoo_results/echo-failed/failed-output.json",
    PEERS / "shared/promptfoo/simple-test/output.json",
    PEERS / "more/promptfoo_results/greeting-4-providers/results.json",
]


@pytest.mark.parametrize("source", RESULTS, ids=lambda p: p.name)
def test_imported_results_keep_every_verdict_promptfoo_wrote(source, tmp_path):
    """A results file holds promptfoo's own verdicts on fixed answers: each stored check of
    a completed sample is the verdict of its assertion, in the file's order."""
    from evalnb.interop import import_promptfoo_results

    import_promptfoo_results(source, tmp_path / "run")
    run = evalnb.load(tmp_path / "run")
    data = json.loads(source.read_text(encoding="utf-8"))
    rows = data["results"]["results"] if isinstance(data["results"], dict) else data["results"]
    samples = run.samples.sort_values("order").to_dict("records")  # type: ignore[union-attr]
    checks = run.checks
    assert len(samples) == len(rows)
    compared = 0
    for row, sample in zip(rows, samples, strict=True):
        stored = checks[
            (checks["case_id"] == sample["case_id"])
            & (checks["variant"] == sample["variant"])
            & (checks["repeat"] == sample["repeat"])
        ]
        components = (row.get("gradingResult") or {}).get("componentResults") or []
        if sample["status"] != "completed":
            assert row.get("failureReason") == ERROR or not components
            assert not stored["outcome"].any()
            continue
        verdicts = [c["pass"] for c in components] or [row["success"]]
        assert stored["outcome"].tolist() == verdicts
        compared += len(verdicts)
    assert compared > 0
