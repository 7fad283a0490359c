"""What each real file of ``tests/data/peers/more`` becomes when a new user imports it.

Every folder there holds real files from a public project (its ``SOURCES.md`` names the
repository, path and commit): promptfoo configs and a results file, DeepEval goldens,
Inspect datasets and logs, lm-eval tasks and an openai/evals registry entry. Each test
imports one of them as ``evalnb import`` does and pins what it becomes: the cases, the
variants, each check by type, and every line of the import report (approximated, refused,
graded by evalnb's translation rather than the tool's engine). Where a file can run
cheaply, a fixed-answer target answers it correctly and the stored checks pass: a check
that cannot pass on a right answer is the worst an import can do.

promptfoo is seen here (``ENGINE``); a test that hides it sets ``EVALNB_PROMPTFOO=off``.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

import evalnb
from evalnb.checks import build_check, run_checks
from evalnb.checks._promptfoo import find_promptfoo
from evalnb.cli import main
from evalnb.interop import (
    ImportResult,
    import_inspect,
    import_inspect_log,
    import_lm_eval,
    import_openai_evals_registry,
    import_promptfoo,
    import_promptfoo_results,
)
from evalnb.targets import Function
from tests.builders import sample

#: The installed promptfoo is seen here (tests/interop/conftest.py hides it elsewhere).
ENGINE = True

MORE = Path(__file__).parents[1] / "data" / "peers" / "more"
ENGINE_FOUND = find_promptfoo()
needs_promptfoo = pytest.mark.skipif(
    ENGINE_FOUND is None, reason="promptfoo is not installed (make promptfoo installs it)"
)


def _names(notes: list[Any]) -> list[str]:
    return [n.name for n in notes]


def _run(suite: Path, out: Path, answer: Any, **kwargs: Any) -> evalnb.Run:
    """The imported suite run once per case and variant by a target answering
    ``answer(request)``."""
    experiment = evalnb.load_experiment(suite / "experiment.toml")
    evalnb.run(
        suite / "cases.yaml",
        Function(answer, threaded=False),
        variants=experiment.variants,
        repeats=1,
        out=out,
        progress=False,
        **kwargs,
    )
    return evalnb.load(out)


# -- promptfoo configs ------------------------------------------------------------------

#: promptfoo's assertion types and the check evalnb's own translation makes of each.
TRANSLATED = {
    "icontains": "contains",
    "contains": "contains",
    "icontains-any": "contains_any",
    "equals": "regex",
    "not-starts-with": "regex",
    "not-contains": "avoids",
    "is-json": "is_json",
    "llm-rubric": "judge",
    "javascript": "javascript",
    "python": "python_code",
    "similar": "similar",
    "latency": "latency",
    "cost": "cost",
}
#: The assertions evalnb grades even where promptfoo is here (imported.json's fallback).
KEPT = {"cost", "python", "similar"}

#: Each config: its cases and variants, its assertions by type (the tests' own, then
#: ``defaultTest``'s), and the import report's lines by name.
CONFIGS: dict[str, dict[str, Any]] = {
    "claude-vs-gpt": {
        "path": MORE / "promptfoo/claude-vs-gpt/promptfooconfig.yaml",
        "cases": 15,
        "variants": ["anthropic-claude-3-7-sonnet-20250219", "openai-chat-gpt-4o"],
        "assertions": {"icontains": 11, "llm-rubric": 2, "icontains-any": 1, "contains": 1},
        "default": ["cost", "latency", "javascript"],
        "approximated": [
            "provider anthropic:claude-3-7-sonnet-20250219",
            "provider openai:chat:gpt-4o",
            "cost",
        ],
        "unsupported": ["provider anthropic:claude-3-7-sonnet-20250219 config"],
    },
    "named-metrics": {
        "path": MORE / "promptfoo/named-metrics/promptfooconfig.yaml",
        "cases": 5,
        "variants": ["prompt-1", "prompt-2"],
        "assertions": {
            "equals": 1,
            "icontains": 1,
            "is-json": 1,
            "javascript": 1,
            "python": 1,
            "similar": 1,
            "llm-rubric": 1,
        },
        "default": [],
        "approximated": ["provider openai:gpt-4o-mini"],
        "unsupported": ["derivedMetrics DoubleConsistency"],
    },
    "self-grading": {
        "path": MORE / "promptfoo/self-grading/promptfooconfig.yaml",
        "cases": 10,
        "variants": ["prompts-1", "prompts-2"],
        "assertions": {},
        "default": ["llm-rubric", "javascript"],
        "approximated": ["provider openai:chat:gpt-4o"],
        "unsupported": [],
    },
    "simple-csv": {
        "path": MORE / "promptfoo/simple-csv/promptfooconfig.yaml",
        "cases": 4,
        "variants": ["prompts-2"],
        "assertions": {"icontains": 4},
        "default": [],
        "approximated": ["provider openai:gpt-4o-mini"],
        # The first prompt of prompts.txt uses promptfoo's own Nunjucks filter 'load': refused
        # by the translation; with promptfoo here, imported as promptfoo renders each case.
        "unsupported": ["prompt 1"],
        "with_promptfoo": {"variants": ["prompts-1", "prompts-2"], "unsupported": []},
    },
    "summarization": {
        "path": MORE / "promptfoo/summarization/promptfooconfig.yaml",
        "cases": 19,  # file://articles/*: one case per article
        "variants": ["openai-gpt-4o-mini", "openai-gpt-4o"],
        "assertions": {"not-starts-with": 19, "not-contains": 19, "javascript": 19},
        "default": [],
        "approximated": ["provider openai:gpt-4o-mini", "provider openai:gpt-4o"],
        "unsupported": [],
    },
    "greeting-4-providers": {
        "path": MORE / "promptfoo_results/greeting-4-providers/promptfooconfig.yaml",
        "cases": 1,
        "variants": 8,  # four providers x two prompts
        "assertions": {"icontains": 1},
        "default": [],
        "approximated": [
            "provider openai:gpt-4.1",
            "provider openai:gpt-4o",
            "provider anthropic:messages:claude-opus-4-1-20250805",
            "provider anthropic:messages:claude-sonnet-4-20250514",
        ],
        "unsupported": [],
    },
}


#: Providers are approximated when their vendor's key is unset where the import runs.
VENDOR_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY")


@pytest.fixture
def no_vendor_keys(monkeypatch):
    for key in VENDOR_KEYS:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="module")
def with_engine(tmp_path_factory):
    """Each config imported once with promptfoo here (an import may run promptfoo), shared
    by the tests that read it: ``with_engine(name)`` is ``(result, suite folder)``."""
    imported: dict[str, tuple[ImportResult, Path]] = {}

    def get(name: str) -> tuple[ImportResult, Path]:
        if name not in imported:
            dest = tmp_path_factory.mktemp(name) / "suite"
            with pytest.MonkeyPatch.context() as patch:
                for key in VENDOR_KEYS:
                    patch.delenv(key, raising=False)
                imported[name] = (import_promptfoo(CONFIGS[name]["path"], dest), dest)
        return imported[name]

    return get


def _suite_checks(dest: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The checks the written cases.yaml holds: every case's, and ``defaults``'."""
    data = yaml.safe_load((dest / "cases.yaml").read_text(encoding="utf-8"))
    cases = data["cases"]
    checks = [check for case in cases for check in case.get("checks") or []]
    return checks, list((data.get("defaults") or {}).get("checks") or [])


def _kind(check: dict[str, Any]) -> tuple[str, str | None]:
    """A check's evalnb type and, for a check promptfoo grades, its assertion's type."""
    return check["type"], (check.get("assertion") or {}).get("type")


def _check_report(result: ImportResult, expected: dict[str, Any]) -> None:
    assert result.counts["cases"] == expected["cases"]
    variants = expected["variants"]
    assert result.counts["variants"] == (variants if isinstance(variants, int) else len(variants))
    assert _names(result.approximated) == expected["approximated"]
    assert _names(result.unsupported) == expected["unsupported"]
    assert result.unchecked == []


@needs_promptfoo
@pytest.mark.parametrize("name", CONFIGS)
def test_promptfoo_config_with_promptfoo_here(name, with_engine):
    """promptfoo grades every assertion but cost, python and similar, each check naming it."""
    assert ENGINE_FOUND is not None
    expected = {**CONFIGS[name], **CONFIGS[name].get("with_promptfoo", {})}
    result, suite = with_engine(name)
    _check_report(result, expected)
    engine = f"promptfoo {ENGINE_FOUND.version}"
    assert result.engine == engine
    checks, defaults = _suite_checks(suite)
    want = Counter(
        {
            (TRANSLATED[t] if t in KEPT else "promptfoo", None if t in KEPT else t): n
            for t, n in expected["assertions"].items()
        }
    )
    assert Counter(_kind(c) for c in checks) == want
    assert [
        c["name"] if c["type"] != "promptfoo" else c["assertion"]["type"] for c in defaults
    ] == (expected["default"])
    graded_here = [c for c in checks + defaults if c["type"] == "promptfoo"]
    assert graded_here and {c["engine"] for c in graded_here} == {engine}
    kept = [t for t in expected["assertions"] if t in KEPT] + [
        t for t in expected["default"] if t in KEPT
    ]
    assert sorted(_names(result.fallback)) == sorted(kept)
    record = json.loads((suite / "imported.json").read_text())
    assert record["engine"] == engine and len(record["fallback"]) == len(kept)
    variants = evalnb.load_experiment(suite / "experiment.toml").variants
    if isinstance(expected["variants"], list):
        assert [v.name for v in variants] == expected["variants"]


@pytest.mark.parametrize("name", CONFIGS)
def test_promptfoo_config_without_promptfoo(name, tmp_path, monkeypatch, no_vendor_keys):
    """With promptfoo hidden every assertion is translated, and each is listed as graded by
    evalnb's translation, by its place in the config."""
    monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    expected = CONFIGS[name]
    result = import_promptfoo(expected["path"], tmp_path / "suite")
    _check_report(result, expected)
    assert result.engine is None
    checks, defaults = _suite_checks(tmp_path / "suite")
    translated: Counter[str] = Counter()
    for kind, n in expected["assertions"].items():
        translated[TRANSLATED[kind]] += n
    assert Counter(c["type"] for c in checks) == translated
    assert [c["type"] for c in defaults] == [TRANSLATED[t] for t in expected["default"]]
    every = Counter(expected["assertions"]) + Counter(expected["default"])
    assert Counter(_names(result.fallback)) == every
    assert all(n.how.startswith("graded by evalnb's translation") for n in result.fallback)


def test_claude_vs_gpt_keeps_its_chat_prompt_and_says_what_it_loses(
    tmp_path, monkeypatch, no_vendor_keys
):
    monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    config = CONFIGS["claude-vs-gpt"]["path"]
    result = import_promptfoo(config, tmp_path / "suite")
    first, second = evalnb.load_experiment(tmp_path / "suite/experiment.toml").variants
    # prompt.yaml: a system and a user message.
    assert first.system == second.system == "Be concise"
    assert first.template == "Answer this riddle:\n{{riddle}}\n"
    assert dict(first.params) == {"max_tokens": 2500} and not second.params
    (refused,) = result.unsupported
    assert "thinking" in refused.reason
    cost = next(n for n in result.approximated if n.name == "cost")
    assert "price table" in cost.how and cost.where.endswith("defaultTest.assert[0]")
    # The riddle with no assertion of its own is still graded by defaultTest's three.
    data = yaml.safe_load((tmp_path / "suite/cases.yaml").read_text())
    assert "checks" not in data["cases"][12] and len(data["defaults"]["checks"]) == 3
    assert result.unchecked == []


def test_named_metrics_keep_their_metric_names(tmp_path, monkeypatch, no_vendor_keys):
    monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    import_promptfoo(CONFIGS["named-metrics"]["path"], tmp_path / "suite")
    checks, _ = _suite_checks(tmp_path / "suite")
    assert Counter(c["name"] for c in checks) == {"Tone": 4, "Consistency": 2, "javascript": 1}


def test_summarization_runs_and_its_checks_tell_answers_apart(tmp_path, monkeypatch):
    """The 19 articles as cases; without promptfoo, a concise summary passes every check and
    one that starts with 'Sure' fails exactly not-starts-with."""
    monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    config = CONFIGS["summarization"]["path"]
    import_promptfoo(config, tmp_path / "suite")
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    articles = sorted((config.parent / "articles").glob("*.txt"))
    # Each var holds its file's text, trimmed as promptfoo trims a file:// var.
    assert sorted(c.vars["article"] for c in cases) == sorted(
        p.read_text().strip() for p in articles
    )

    def answer(request: evalnb.Request) -> str:
        polite = request.variant.name == "openai-gpt-4o"
        return ("Sure! " if polite else "") + "The article reports three findings in brief."

    run = _run(tmp_path / "suite", tmp_path / "run", answer)
    checks = run.checks
    assert len(checks) == 19 * 2 * 3
    failed = checks[~checks["outcome"].astype(bool)]
    assert set(failed["variant"]) == {"openai-gpt-4o"} and set(failed["check"]) == {
        "not-starts-with"
    }
    assert len(failed) == 19


@needs_promptfoo
def test_simple_csv_is_graded_by_promptfoo_and_passes_right_answers(tmp_path, with_engine):
    """The CSV's ``__expected`` (``icontains:bonjour``) graded by promptfoo's own
    runAssertion: right translations pass, under both prompts (the first, which reads a
    JSON var with promptfoo's filter ``load``, sent as promptfoo renders it)."""
    _, suite = with_engine("simple-csv")
    right = {
        ("French", "Hello world"): "Bonjour le monde !",
        ("French", "I'm hungry"): "J'ai faim.",
        ("Pirate", "Hello world"): "Ahoy, world!",
        ("Pirate", "I'm hungry"): "Arr, me belly wants grub!",
    }

    def answer(request: evalnb.Request) -> str:
        return right[(request.case.vars["language"], request.case.vars["body"])]

    run = _run(suite, tmp_path / "run", answer)
    assert len(run.checks) == 4 * 2 and run.checks["outcome"].astype(bool).all()
    rendered = {s.variant: s.prompt for s in run.samples.itertuples() if s.case_id == "test-1"}
    assert "skilled translator" in json.dumps(rendered["prompts-1"])
    assert set(run.checks["check_type"]) == {"promptfoo"}
    evidence = [json.loads(e) for e in run.checks["evidence"]]
    assert {e["engine"] for e in evidence} == {f"promptfoo {ENGINE_FOUND.version}"}  # type: ignore[union-attr]


# -- promptfoo results --------------------------------------------------------------------

RESULTS = MORE / "promptfoo_results/greeting-4-providers/results.json"


def test_promptfoo_results_keep_every_row(tmp_path):
    """Eight rows (four providers x two prompts): each a completed sample with promptfoo's
    verdict, its answer, latency, tokens and cost, at the time the eval ran."""
    result = import_promptfoo_results(RESULTS, tmp_path / "run")
    assert result.counts == {"cases": 1, "variants": 8, "samples": 8}
    assert result.unsupported == [] and result.approximated == []
    run = evalnb.load(tmp_path / "run")
    rows = json.loads(RESULTS.read_text())["results"]["results"]
    samples = run.samples.sort_values("order")
    assert list(samples["answer"]) == [r["response"]["output"] for r in rows]
    assert list(samples["latency_ms"]) == [r["latencyMs"] for r in rows]
    assert list(samples["total_tokens"]) == [r["response"]["tokenUsage"]["total"] for r in rows]
    costs = [json.loads(r)["cost"] for r in samples["response"]]
    assert costs == [r["cost"] for r in rows]
    assert set(samples["status"]) == {"completed"}
    assert list(run.checks["check"]) == ["icontains"] * 8 and run.checks["outcome"].all()
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["started_at"].startswith("2025-10-30T22:34:26")
    assert {s.isoformat()[:19] for s in samples["started_at"]} == {"2025-10-30T22:34:26"}
    assert sorted(manifest["provenance"]["providers"]) == [
        "Anthropic Claude Opus 4-1",
        "Anthropic Claude Sonnet 4",
        "OpenAI GPT-4.1",
        "OpenAI GPT-4o",
    ]


# -- DeepEval goldens, read as Inspect datasets ------------------------------------------

GOLDENS = MORE / "deepeval/goldens"


@pytest.mark.parametrize("name", ["goldens.csv", "goldens.json"])
def test_deepeval_goldens_say_what_no_check_reads(name, tmp_path):
    """Goldens hold inputs, expected outputs, recorded answers and contexts: the import keeps
    each, makes the expected output the target, and lists what no check reads."""
    source = GOLDENS / name
    result = import_inspect(source, tmp_path / "suite", fields={"target": "expected_output"})
    assert result.counts == {"cases": 15, "variants": 1}
    # The JSON goldens hold no tool calls; the CSV's do.
    ungraded = ["actual_output", "retrieval_context", "context"]
    if name.endswith(".csv"):
        ungraded[1:1] = ["tools_called", "expected_tools"]
    assert _names(result.approximated) == ["scorer includes", *ungraded]
    recorded = next(n for n in result.approximated if n.name == "actual_output")
    assert recorded.how.startswith("kept as metadata, graded by no check")
    assert "a run asks the target again" in recorded.how
    metadata = next(n for n in result.mapped if n.name == "metadata")
    assert all(k in metadata.how for k in [*ungraded, "name", "comments", "source_file"])
    assert result.unsupported == []
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    if name.endswith(".json"):
        records = json.loads(source.read_text())
    else:
        with source.open(encoding="utf-8", newline="") as handle:
            records = list(csv.DictReader(handle))
    assert [c.prompt for c in cases] == [r["input"] for r in records]
    assert [c.target for c in cases] == [r["expected_output"] for r in records]
    assert [c.metadata["actual_output"] for c in cases] == [r["actual_output"] for r in records]
    # Inspect's includes(): case folded, spaces and punctuation as they are.
    assert {json.dumps(c.checks[0].spec) for c in cases} == {
        '{"type": "includes", "ignore_whitespace": false, "ignore_punctuation": false}'
    }
    # The answers the goldens recorded, given back, pass every check.
    recorded = {c.id: c.metadata["actual_output"] for c in cases}
    run = _run(tmp_path / "suite", tmp_path / "run", lambda r: recorded[r.case.id])
    assert len(run.checks) == 15 and run.checks["outcome"].astype(bool).all()


def test_deepeval_goldens_without_a_target_say_which_field_holds_it(tmp_path):
    result = import_inspect(GOLDENS / "goldens.json", tmp_path / "suite")
    expected = next(n for n in result.approximated if n.name == "expected_output")
    assert "--field target=expected_output" in expected.how
    assert len(result.unchecked) == 15  # no target: the default includes has nothing to find


# -- Inspect datasets ---------------------------------------------------------------------


def test_inspect_biology_qa_with_and_without_a_scorer(tmp_path):
    source = MORE / "inspect/biology_qa/biology_qa.jsonl"
    fields = {"input": "question", "target": "answer"}
    default = import_inspect(source, tmp_path / "default", fields=fields)
    assert default.counts == {"cases": 20, "variants": 1}
    # The dataset names no scorer: evalnb's default is said to be one.
    (scorer,) = default.approximated
    assert scorer.name == "scorer includes" and "--scorer" in scorer.how
    graded = import_inspect(source, tmp_path / "graded", fields=fields, scorer="model_graded_fact")
    assert _names(graded.mapped) == ["field input", "field target"]
    (judge,) = graded.approximated
    assert judge.name == "scorer model_graded_fact" and "its own prompt" in judge.how
    assert graded.unsupported == []
    cases = evalnb.load_cases(tmp_path / "graded/cases.yaml")
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    assert [(c.id, c.prompt, c.target) for c in cases] == [
        (r["id"], r["question"], r["answer"]) for r in rows
    ]
    assert {c.checks[0].type for c in cases} == {"judge"}
    assert "[judge]" in (tmp_path / "graded/experiment.toml").read_text()


def test_inspect_images_send_the_pictures_and_match_passes_right_answers(tmp_path):
    folder = MORE / "inspect/images"
    result = import_inspect(folder / "images.jsonl", tmp_path / "suite", scorer="match")
    assert result.counts == {"cases": 2, "variants": 1}
    assert _names(result.mapped) == ["scorer match", "image parts"]
    assert result.approximated == [] and result.unsupported == []
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    for case, picture in zip(cases, ["ballons.png", "bike.png"], strict=True):
        text, image = case.messages[0]["content"]
        url = image["image_url"]["url"]
        assert text["type"] == "text" and url.startswith("data:image/png;base64,")
        assert base64.b64decode(url.split(",", 1)[1]) == (folder / picture).read_bytes()
    assert cases[1].target == ("bike", "bicycle")
    # Answers in the brackets images.py's system message asks for.
    right = {"1": "[3]", "2": "[Bicycle]"}
    run = _run(tmp_path / "suite", tmp_path / "run", lambda r: right[r.case.id])
    assert len(run.checks) == 2 and run.checks["outcome"].astype(bool).all()


#: Answers and what Inspect's match() (inspect_ai 0.3.285's ``match_str``, location "end",
#: ignore_case and ignore_punctuation) makes of them for images.jsonl's two targets.
INSPECT_MATCH = [
    ("[3]", True, False),
    ("There are 3", True, False),
    ("13", True, False),  # a suffix, as Inspect's endswith reads it
    ("3 balloons", False, False),
    ("[Bicycle]", False, True),
    ("a bike!", False, True),
    ("bike_", False, True),  # '_' is punctuation to Inspect
    (" bicycle \n", False, True),
    ("bikes", False, False),
    ("It's a bicycle.", False, True),
]


@pytest.fixture(scope="module")
def images_match(tmp_path_factory) -> list[evalnb.Case]:
    """images.jsonl imported once with ``--scorer match``."""
    dest = tmp_path_factory.mktemp("images") / "suite"
    import_inspect(MORE / "inspect/images/images.jsonl", dest, scorer="match")
    return evalnb.load_cases(dest / "cases.yaml")


@pytest.mark.parametrize(
    ("answer", "three", "bike"),
    INSPECT_MATCH,
    ids=[
        "brackets",
        "sentence",
        "suffix",
        "words-after",
        "bracketed-word",
        "exclaimed",
        "underscore",
        "spaces",
        "plural",
        "full-stop",
    ],
)
def test_inspect_match_reads_answers_as_inspect_does(answer, three, bike, images_match):
    balloons, bicycle = images_match
    for case, expected in ((balloons, three), (bicycle, bike)):
        (result,) = run_checks([build_check(case.checks[0].spec)], sample(answer))
        assert result.outcome is expected, (case.target, answer)


def test_inspect_langchain_dataset_keeps_its_chat_input(tmp_path):
    source = MORE / "inspect/langchain_research/dataset.json"
    result = import_inspect(source, tmp_path / "suite", scorer="model_graded_fact")
    assert result.counts == {"cases": 3, "variants": 1}
    assert _names(result.approximated) == ["scorer model_graded_fact"]
    assert result.unsupported == []
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    rows = json.loads(source.read_text())
    assert [list(c.messages) for c in cases] == [r["input"] for r in rows]
    assert [c.target for c in cases] == [r["target"] for r in rows]
    assert {c.checks[0].type for c in cases} == {"judge"}


# -- Inspect logs -------------------------------------------------------------------------


def test_inspect_log_of_a_two_message_input_keeps_transcript_and_scorer_instructions(tmp_path):
    """input_task's solver adds a second user message; the scorer is a model_graded_fact
    with its own instructions (Gen Z lingo), kept with the metrics Inspect reported."""
    (log,) = (MORE / "inspect/log_input_task").glob("*.eval")
    result = import_inspect_log(log, tmp_path / "run", reader="evalnb")
    assert result.counts == {"cases": 1, "epochs": 1, "samples": 1, "scorers": 1}
    assert result.unsupported == [] and result.approximated == []
    run = evalnb.load(tmp_path / "run")
    (sample,) = run.samples.to_dict("records")
    request = json.loads(sample["trace"].splitlines()[0])["body"]["messages"]
    assert [m["role"] for m in request] == ["user", "user"]
    assert request[1]["content"].startswith("What is the average temperature in International")
    assert sample["answer"].startswith("Yo, fam!") and sample["total_tokens"] == 113
    (check,) = run.checks.to_dict("records")
    assert check["check"] == "model_graded_fact" and check["outcome"] is True
    assert json.loads(check["evidence"])["explanation"].endswith("GRADE: C")
    provenance = json.loads((tmp_path / "run/manifest.json").read_text())["provenance"]
    instructions = provenance["scorer_options"]["model_graded_fact"]["instructions"]
    assert "Gen Z" in instructions
    assert provenance["inspect_metrics"] == {"model_graded_fact": {"accuracy": 1.0, "stderr": 0.0}}
    assert [s["solver"] for s in provenance["plan"]["steps"]] == ["input_solver", "generate"]


def test_inspects_own_reader_stores_the_input_task_log_alike(tmp_path, monkeypatch):
    """Read by Inspect's ``read_eval_log`` (the Python ``INSPECT_AI_PYTHON`` names; ``make
    test`` sets it), the log gives the same samples, verdicts and scorer instructions."""
    python = os.environ.get("INSPECT_AI_PYTHON")
    if not python:
        pytest.skip("Inspect is not here: set INSPECT_AI_PYTHON (make test does)")
    (log,) = (MORE / "inspect/log_input_task").glob("*.eval")
    theirs = import_inspect_log(log, tmp_path / "inspect", reader="inspect")
    assert str(theirs.reader).startswith("inspect_ai ")
    import_inspect_log(log, tmp_path / "evalnb", reader="evalnb")
    stored = {}
    for name in ("inspect", "evalnb"):
        run = evalnb.load(tmp_path / name)
        (sample,) = run.samples.to_dict("records")
        (check,) = run.checks.to_dict("records")
        provenance = json.loads((tmp_path / name / "manifest.json").read_text())["provenance"]
        kept = ["answer", "prompt", "trace", "status", "total_tokens", "model"]
        stored[name] = (
            {k: sample[k] for k in kept},
            (check["check"], check["outcome"], json.loads(check["evidence"])["explanation"]),
            provenance["scorer_options"],
            provenance["inspect_metrics"],
        )
    assert stored["inspect"] == stored["evalnb"]


def test_inspect_json_log_keeps_system_message_verdicts_and_explanations(tmp_path):
    (log,) = (MORE / "inspect/log_security_guide").glob("*.json")
    result = import_inspect_log(log, tmp_path / "run")
    assert result.counts == {"cases": 3, "epochs": 1, "samples": 3, "scorers": 1}
    assert result.reader == "evalnb's reader (json)"
    data = json.loads(log.read_text())
    run = evalnb.load(tmp_path / "run")
    samples = run.samples.sort_values("case_id").to_dict("records")
    for row, source in zip(samples, data["samples"], strict=True):
        request = json.loads(row["trace"].splitlines()[0])["body"]["messages"]
        assert [m["role"] for m in request] == ["system", "user"]
        assert "computer security expert" in request[0]["content"]
        assert row["answer"] == source["output"]["choices"][0]["message"]["content"]
        assert row["latency_ms"] == pytest.approx(source["output"]["time"] * 1000)
    checks = run.checks.sort_values("case_id").to_dict("records")
    assert [c["outcome"] for c in checks] == [True, True, True]
    explanations = [json.loads(c["evidence"])["explanation"] for c in checks]
    assert explanations == [
        s["scores"]["model_graded_fact"]["explanation"] for s in data["samples"]
    ]
    assert json.loads((tmp_path / "run/manifest.json").read_text())["provenance"][
        "inspect_metrics"
    ] == {"model_graded_fact": {"accuracy": 1.0, "stderr": 0.0}}


# -- lm-evaluation-harness tasks --------------------------------------------------------

#: ARC-Easy documents in the hub dataset's shape (written by hand: the task's documents
#: live on the Hugging Face hub); the third has numeric labels, as some ARC rows do.
ARC_DOCS = [
    {
        "id": "Mercury_7220990",
        "question": "Which factor will most likely cause a person to develop a fever?",
        "choices": {
            "text": [
                "a leg muscle relaxing after exercise",
                "a bacterial population in the bloodstream",
                "several viral particles on the skin",
                "carbohydrates being digested in the stomach",
            ],
            "label": ["A", "B", "C", "D"],
        },
        "answerKey": "B",
    },
    {
        "id": "NYSEDREGENTS_2015_4_8",
        "question": "An example of a renewable resource is",
        "choices": {"text": ["coal", "oil", "trees", "natural gas"], "label": ["1", "2", "3", "4"]},
        "answerKey": "3",
    },
]
#: BIG-Bench Hard boolean_expressions documents in the hub dataset's shape.
BBH_DOCS = [
    {"input": "not ( ( not not True ) ) is", "target": "False"},
    {"input": "True and False and not True and True is", "target": "False"},
    {"input": "not not ( not ( False ) ) is", "target": "True"},
]


def _docs(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def test_lm_eval_arc_easy_needs_its_documents_and_says_it_generates_letters(tmp_path, capsys):
    task = MORE / "lmeval/arc_easy/arc_easy.yaml"
    argv = ["import", "lm-eval", str(task), "--out", str(tmp_path / "none")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'allenai/ai2_arc'" in err and "--data FILE" in err
    docs = _docs(tmp_path / "docs.jsonl", ARC_DOCS)
    result = import_lm_eval(task, tmp_path / "suite", data=docs)
    assert _names(result.approximated) == [
        "dataset_path",
        "metric acc",
        "metric acc_norm",
        "output_type multiple_choice",
    ]
    assert _names(result.unsupported) == ["should_decontaminate"]
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert [c.prompt for c in cases] == [f"Question: {d['question']}\nAnswer:" for d in ARC_DOCS]
    # doc_to_target '{{choices.label.index(answerKey)}}': the index of the answer's label.
    assert [c.target for c in cases] == ["a bacterial population in the bloodstream", "trees"]
    assert [[k.type for k in c.checks] for c in cases] == [["choice"], ["choice"]]
    run = _run(tmp_path / "suite", tmp_path / "run", lambda r: str(r.case.target))
    assert list(run.checks["outcome"]) == [True, True]


def test_lm_eval_bbh_cot_keeps_description_filters_and_stops(tmp_path):
    task = MORE / "lmeval/bbh_cot_zeroshot_boolean_expressions/boolean_expressions.yaml"
    docs = _docs(tmp_path / "docs.jsonl", BBH_DOCS)
    result = import_lm_eval(task, tmp_path / "suite", data=docs)
    assert _names(result.mapped) == [
        "include",
        "metric exact_match",
        "generation_kwargs",
        "filter flexible-extract",
        "filter strict-match",
        "description",
        "doc_to_text / doc_to_target",
    ]
    assert _names(result.approximated) == ["dataset_path"] and result.unsupported == []
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    # lm-eval's context: the description, then doc_to_text.
    assert [c.prompt for c in cases] == [
        "Evaluate the result of a random Boolean expression.\n\n"
        f"Q: {d['input']}\nA: Let's think step by step."
        for d in BBH_DOCS
    ]
    checks = cases[0].checks
    assert [(k.name, k.type) for k in checks] == [
        ("flexible-extract", "extract_match"),
        ("strict-match", "extract_match"),
    ]
    assert checks[0].spec["group_select"] == -1 and checks[0].spec["ignore_case"] is True
    assert checks[0].spec["regexes_to_ignore"] == ["\\.$", ",", "\\\\", "\n", '"']
    (variant,) = evalnb.load_experiment(tmp_path / "suite/experiment.toml").variants
    assert variant.name == "bbh_cot_zeroshot_boolean_expressions"
    assert dict(variant.params) == {"stop": ["</s>", "Q:", "<|im_end|>"], "temperature": 0.0}

    def answer(request: evalnb.Request) -> str:
        return f"Working it through, the answer is {request.case.target}."

    run = _run(tmp_path / "suite", tmp_path / "run", answer)
    assert len(run.checks) == 6 and run.checks["outcome"].astype(bool).all()


# -- openai/evals registry ----------------------------------------------------------------

CANTO = MORE / "openai_evals/canto_wu_pronunciation"


def _registry(tmp: Path) -> Path:
    """The entry laid out as openai/evals keeps it: registry/evals/*.yaml beside
    registry/data/canto_wu_pronunciation/ (the samples, Git LFS pointers there)."""
    evals, data = tmp / "registry/evals", tmp / "registry/data/canto_wu_pronunciation"
    evals.mkdir(parents=True)
    data.mkdir(parents=True)
    for name in ("canto_wu_pronunciation.yaml", "canto_wu_pronunciation_fewshot.yaml"):
        shutil.copy(CANTO / name, evals / name)
    for name in ("samples_zero.jsonl", "samples_few.jsonl", "data_raw.csv", "csv_to_json.py"):
        shutil.copy(CANTO / name, data / name)
    return tmp / "registry"


def test_openai_evals_registry_entry_from_pointers_to_its_samples(tmp_path, capsys):
    """As fetched, the samples are Git LFS pointers: the import names them. The entry ships
    the script that writes them from data_raw.csv; its output is the very files the
    pointers name (same SHA-256), and both evals import as Match at temperature 0."""
    flat = ["import", "openai-evals", str(CANTO / "canto_wu_pronunciation.yaml")]
    assert main([*flat, "canto_wu_pronunciation", "--out", str(tmp_path / "flat")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "read under the registry's data/ folder" in err
    registry = _registry(tmp_path)
    evals = registry / "evals"
    argv = ["import", "openai-evals", str(evals / "canto_wu_pronunciation.yaml")]
    assert main([*argv, "canto_wu_pronunciation", "--out", str(tmp_path / "lfs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Git LFS pointer" in err and "89662 bytes" in err

    data = registry / "data/canto_wu_pronunciation"
    pointers = {
        name: (data / name).read_text().split("sha256:")[1].split()[0]
        for name in ("samples_zero.jsonl", "samples_few.jsonl")
    }
    subprocess.run([sys.executable, "csv_to_json.py"], cwd=data, check=True, timeout=60)
    for name, oid in pointers.items():
        assert hashlib.sha256((data / name).read_bytes()).hexdigest() == oid

    zero = import_openai_evals_registry(
        evals / "canto_wu_pronunciation.yaml", "canto_wu_pronunciation", tmp_path / "zero"
    )
    few = import_openai_evals_registry(
        evals / "canto_wu_pronunciation_fewshot.yaml",
        "canto_wu_pronunciation_fewshot",
        tmp_path / "few",
    )
    assert zero.counts["cases"] == 204 and few.counts["cases"] == 120
    for result in (zero, few):
        assert _names(result.mapped) == ["class Match", "class Match sampling"]
        assert result.approximated == [] and result.unsupported == []
    (variant,) = evalnb.load_experiment(tmp_path / "zero/experiment.toml").variants
    assert dict(variant.params) == {"temperature": 0.0}
    cases = evalnb.load_cases(tmp_path / "few/cases.yaml")
    # Few-shot: three worked turns in each case's messages.
    assert [m["role"] for m in cases[0].messages] == ["system"] + ["user", "assistant"] * 3 + [
        "user"
    ]
    assert cases[0].checks[0].spec == {
        "type": "starts_with",
        "ignore_case": False,
        "ignore_whitespace": False,
        "ignore_punctuation": False,
    }
    zero_cases = evalnb.load_cases(tmp_path / "zero/cases.yaml")
    assert zero_cases[0].target == ("4iq", "iq7")  # Wu for 一, both romanisations
    # The second romanisation given back passes; a leading space does not (Match strips
    # nothing), as openai/evals' record_and_check_match reads it.
    second = {c.id: c.target[1] for c in zero_cases[:12]}
    run = _run(
        tmp_path / "zero",
        tmp_path / "run",
        lambda r: second.get(r.case.id, " " + str(r.case.target[0])),
    )
    outcomes = dict(zip(run.checks["case_id"], run.checks["outcome"], strict=True))
    assert [outcomes[c.id] for c in zero_cases[:12]] == [True] * 12
    assert not any(outcomes[c.id] for c in zero_cases[12:])


def test_lm_eval_repeats_are_said_to_be_evalnb_repeats(tmp_path):
    """The same task with lm-eval's ``repeats: 3`` (several answers per document) says how
    evalnb repeats instead of dropping the key."""
    folder = MORE / "lmeval/bbh_cot_zeroshot_boolean_expressions"
    shutil.copytree(folder, tmp_path / "task")
    task = tmp_path / "task/boolean_expressions.yaml"
    task.write_text(task.read_text() + '"repeats": 3\n')
    docs = _docs(tmp_path / "docs.jsonl", BBH_DOCS)
    result = import_lm_eval(task, tmp_path / "suite", data=docs, repeats=3)
    repeats = next(n for n in result.approximated if n.name == "repeats")
    assert "3 answers per document" in repeats.how and "3 repeats" in repeats.how
    assert "repeats = 3" in (tmp_path / "suite/experiment.toml").read_text()
