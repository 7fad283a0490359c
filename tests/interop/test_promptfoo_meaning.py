"""promptfoo suites keep their meaning: each grader, prompt form and provider of a config
comes in as a check or variant (or is listed), and the imported suite runs on the stand-in
with every stored check standing for one of the config's graders."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

import evalnb
from evalnb.cli import main
from evalnb.interop import import_promptfoo

DATA = Path(__file__).parents[1] / "data" / "peers"
SHARED = DATA / "shared" / "promptfoo"
GRADERS = DATA / "promptfoo" / "graders" / "promptfooconfig.yaml"


def _run(dest: Path, standin, out: Path) -> evalnb.Run:
    argv = ["run", "--experiment", str(dest / "experiment.toml"), "--base-url"]
    argv += [standin.base_url, "--model", "echo", "--repeats", "1", "--out", str(out)]
    assert main([*argv, "--trust-code"]) == 0  # the project's own suites
    return evalnb.load(out)


def _rows(run: evalnb.Run) -> dict[tuple[str, str, str], dict]:
    frame = run.checks
    return {
        (r["case_id"], r["variant"], r["check"]): r
        for r in frame.to_dict("records")  # type: ignore[union-attr]
    }


def test_json_output_imports_and_runs_with_its_schema_and_transforms(standin, tmp_path):
    source = SHARED / "json-output/promptfooconfig.yaml"
    result = import_promptfoo(source, tmp_path / "suite")
    config = yaml.safe_load(source.read_text())
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    # One stored check per assertion, in the config's order, each of its promptfoo type.
    for test, case in zip(config["tests"], cases, strict=True):
        assert [c.name for c in case.checks] == [a["type"] for a in test["assert"]]
    schema = cases[1].checks[0].spec
    assert schema["type"] == "json_schema" and schema["schema"]["required"] == [
        "color",
        "countries",
    ]
    js = cases[1].checks[1].spec
    assert js["type"] == "javascript" and js["transform"] == ["JSON.parse(output)"]
    assert cases[1].checks[2].spec["transform"] == ["JSON.parse(output)", "output.countries"]
    assert [a.name for a in result.approximated] == [
        "provider openai:chat:gpt-3.5-turbo",
        "is-json",
        "contains-any",
    ]
    assert result.unsupported == []
    run = _run(tmp_path / "suite", standin, tmp_path / "run")
    rows = _rows(run)
    # The echo model says the prompt back: not JSON, so every JSON grader fails, saying why.
    assert rows[("test-1", "prompt-1", "is-json")]["outcome"] is False
    assert rows[("test-2", "prompt-1", "javascript")]["outcome"] is False
    assert (
        "JSON.parse" in rows[("test-2", "prompt-1", "javascript")]["detail"]
        or "JSON" in (rows[("test-2", "prompt-1", "javascript")]["detail"])
    )
    assert len(rows) == 5
    # The run keeps what the import mapped, approximated and refused, as the import wrote it.
    kept = json.loads((tmp_path / "run" / "imported.json").read_text())
    assert kept == json.loads((tmp_path / "suite" / "imported.json").read_text())
    assert [a["name"] for a in kept["approximated"]] == [a.name for a in result.approximated]
    record = run.manifest["cases_file"]["imported"]
    assert (
        record["sha256"]
        == hashlib.sha256((tmp_path / "suite/imported.json").read_bytes()).hexdigest()
    )


def test_simple_test_runs_every_grader_on_the_standin(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALNB_EMBEDDINGS_URL", standin.base_url)
    source = SHARED / "simple-test/promptfooconfig.yaml"
    result = import_promptfoo(source, tmp_path / "suite")
    assert result.unsupported == []
    assert {n.name for n in result.mapped} >= {"javascript", "python", "similar", "llm-rubric"}
    run = _run(tmp_path / "suite", standin, tmp_path / "run")
    assert set(run.samples["status"]) == {"completed"}
    rows = _rows(run)
    for variant in ("prompts-1", "prompts-2"):
        js = rows[("test-4", variant, "javascript")]
        assert js["check_type"] == "javascript" and js["outcome"] is False  # no 'Ahoy' from echo
        python = rows[("test-4", variant, "python")]
        # max(0, len(output) - 300) is 0 for a short answer: a score of 0 fails (passes > 0).
        assert python["outcome"] is False and "score 0" in python["detail"]
        similar = rows[("test-4", variant, "similar")]
        assert similar["check_type"] == "similar" and "cosine" in similar["detail"]
        assert rows[("test-5", variant, "icontains")]["check_type"] == "contains"  # the $ref


def test_graders_prompts_and_providers_one_by_one(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALNB_EMBEDDINGS_URL", standin.base_url)
    result = import_promptfoo(GRADERS, tmp_path / "suite")
    summary = result.summary()
    assert "derivedMetrics f1" in summary and "apiHost" in summary
    record = json.loads((tmp_path / "suite/imported.json").read_text())
    assert {m["name"] for m in record["mapped"]} >= {"chat prompt", "nunjucks filter", "vars glob"}
    assert record["cases_without_checks"] == []
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    variants = {v.name: v for v in experiment.variants}
    # Providers x prompts, named by label (or id) and prompt; params kept, others listed.
    assert list(variants) == [
        "mini_chat",
        "mini_summary",
        "openai-gpt-4o_chat",
        "openai-gpt-4o_summary",
    ]
    assert variants["mini_chat"].params == {"temperature": 0.2, "max_tokens": 128}
    assert variants["mini_chat"].system == "You are a careful editor. Topic {{ topic }}."
    assert "| tojson" in variants["mini_summary"].template  # Nunjucks' dump

    config = yaml.safe_load(GRADERS.read_text())
    cases = {c.id: c for c in evalnb.load_cases(tmp_path / "suite/cases.yaml")}
    assert list(cases) == ["test-1", "test-2-1", "test-2-2", "test-3"]  # the glob: 2 cases
    assert cases["test-2-1"].vars["article"].startswith("Lisbon won")
    expected_types = {"python": "python_code", "javascript": "javascript", "similar": "similar"}
    assertions = config["tests"][0]["assert"]
    own = cases["test-1"].checks[: len(assertions)]  # then defaultTest's
    names = [c.name for c in own]
    for assertion, check in zip(assertions, own, strict=True):
        assert check.type == expected_types[assertion["type"]]
        if "metric" in assertion:
            assert check.name == assertion["metric"]
        if "threshold" in assertion:
            assert check.spec["threshold"] == assertion["threshold"]
    assert names[-2:] == ["similar", "off-topic"]
    assert names[-1] == "off-topic" and [c.type for c in cases["test-3"].checks] == [
        "latency",
        "cost",
    ]

    run = _run(tmp_path / "suite", standin, tmp_path / "run")
    rows = _rows(run)
    assert set(run.samples["variant"]) == set(variants)
    for variant in variants:
        got = {check: rows[("test-1", variant, check)] for check in names}
        assert got["mentions-rain"]["outcome"] is True  # inline Python with context vars
        assert got["python"]["outcome"] is True and 0.2 <= got["python"]["score"] <= 1
        assert got["python-2"]["outcome"] is True  # get_assert, the default function
        assert got["length"]["outcome"] is True and got["length"]["detail"].endswith("words")
        assert got["javascript"]["outcome"] is True  # file://graders.js:mentionsTopic
        assert got["similar"]["outcome"] is True and got["similar"]["score"] >= 0.6
        assert got["off-topic"]["outcome"] is False and got["off-topic"]["score"] < 0.9
        assert rows[("test-2-1", variant, "icontains")]["outcome"] is True
        assert rows[("test-3", variant, "latency")]["outcome"] is True
        cost = rows[("test-3", variant, "cost")]
        assert cost["outcome"] is None and "no price" in cost["detail"]  # unscored, not a pass


def test_a_case_with_no_check_is_reported(tmp_path):
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{w}}']\ntests:\n  - vars: {w: a}\n    assert:\n"
        "      - type: contains\n        value: a\n  - vars: {w: b}\n",
        encoding="utf-8",
    )
    result = import_promptfoo(config, tmp_path / "out")
    assert result.unchecked == ["test-2"]
    assert "cases with no check (1): test-2" in result.summary()
    record = json.loads((tmp_path / "out/imported.json").read_text())
    assert record["cases_without_checks"] == ["test-2"]


def test_a_fatal_import_prints_the_refusals_behind_it(tmp_path, capsys):
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: [file://p.py]\ntests: [{vars: {a: 1}}]\n", encoding="utf-8")
    (tmp_path / "p.py").write_text("def f(context): return 'x'\n")
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "no prompt could be imported (prompt p.py: a prompt function (.py, .js) runs code" in err


def test_unmapped_and_refused_are_never_silent(tmp_path):
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['{{ q | load }}', 'Q: {{ q }}']\n"
        "tests:\n  - vars: {q: hi}\n    options: {transform: output.trim(), provider: x}\n"
        "    assert:\n      - type: not-equals\n        value: hi\n"
        "      - type: rouge-n\n        value: hi\n      - type: llm-rubric\n"
        "        value: polite\n        weight: 2\n",
        encoding="utf-8",
    )
    result = import_promptfoo(config, tmp_path / "out")
    refused = {u.name: u.reason for u in result.unsupported}
    assert "the Nunjucks filter 'load'" in refused["prompt 1"]  # named, not dropped
    assert refused["rouge-n"].startswith("no evalnb check expresses it: install promptfoo")
    assert "options.provider" in refused
    approximated = {a.name: a.how for a in result.approximated}
    assert "weights are not applied" in approximated["llm-rubric.weight"]
    (case,) = evalnb.load_cases(tmp_path / "out/cases.yaml")
    # The test's transform goes with each check: the negation runs in Node.js after it.
    assert case.checks[0].spec["transform"] == ["output.trim()"]


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_chat_prompt_files_of_each_shape(suffix, tmp_path):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "{{ q }}"},
    ]
    three = [*messages, {"role": "assistant", "content": "ok"}]
    write = json.dumps if suffix == ".json" else yaml.safe_dump
    (tmp_path / f"chat{suffix}").write_text(write(messages))
    (tmp_path / f"long{suffix}").write_text(write(three))
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        f"prompts: [file://chat{suffix}, file://long{suffix}]\ntests: [{{vars: {{q: hi}}}}]\n"
    )
    result = import_promptfoo(config, tmp_path / "out")
    variant, long = evalnb.load_experiment(tmp_path / "out/experiment.toml").variants
    assert (
        variant.name == "chat" and variant.system == "Be brief." and variant.template == "{{ q }}"
    )
    assert not variant.chat
    # Any other shape is a chat template: its messages, rendered, are the request.
    assert long.name == "long" and long.chat and long.system is None
    sent = long.messages_for(evalnb.load_cases(tmp_path / "out/cases.yaml")[0])
    assert list(sent) == [*messages[:1], {"role": "user", "content": "hi"}, three[2]]
    assert result.unsupported == []
    assert [m.how for m in result.mapped if m.name == "chat prompt"][-1].startswith(
        "a chat template: its 3 messages (system, user, assistant)"
    )


def test_results_variants_are_named_provider_and_prompt_label(tmp_path):
    source = json.loads((DATA / "promptfoo_results/v3-repeat-output.json").read_text())
    long = "Translate the following English text into formal, polite French: {{text}}"
    first = source["results"]["results"][0]
    rows = []
    for n, (provider, label) in enumerate(
        [
            ({"id": "openai:gpt-4o-mini", "label": "mini"}, long),
            ({"id": "openai:gpt-4o", "label": ""}, long),
            ({"id": "openai:gpt-4o", "label": ""}, long + " Keep it short."),
        ]
    ):
        row = json.loads(json.dumps(first))
        row.update(provider=provider, promptIdx=None, id=f"r{n}")
        row["prompt"] = {"raw": long, "label": label}
        rows.append(row)
    source["results"]["results"] = rows
    path = tmp_path / "output.json"
    path.write_text(json.dumps(source))
    result = evalnb.interop.import_promptfoo_results(path, tmp_path / "run")
    assert result.unsupported == []
    mapped = {m.name: m.how for m in result.mapped}
    assert mapped["check icontains"] == "3 results, type promptfoo"  # what came in, counted
    variants = sorted(set(evalnb.load(tmp_path / "run").samples["variant"]))
    assert variants == [
        "mini/Translate the following English text into formal, poli…",
        "openai:gpt-4o/Translate the following English text into for…",
        "openai:gpt-4o/Translate the following English text into for…-2",  # another prompt
    ]
    assert all(len(v.removesuffix("-2")) == 60 for v in variants)


def test_csv_expected_columns_with_graders(tmp_path):
    # simple-test's own tests.csv (fn: graders), and two rows in promptfoo's documented
    # `type(threshold):value` form.
    rows = (SHARED / "simple-test/tests.csv").read_text()
    rows += "Hi there,python:len(output) > 3\nHey,similar(0.8):Hey you\n"
    (tmp_path / "tests.csv").write_text(rows)
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: ['Say {{body}}']\ntests: file://tests.csv\n")
    result = import_promptfoo(config, tmp_path / "out")
    assert result.unsupported == []
    specs = [c.checks[0].spec for c in evalnb.load_cases(tmp_path / "out/cases.yaml")]
    assert [s["type"] for s in specs] == [
        "javascript",
        "javascript",
        "is_json",
        "python_code",
        "similar",
    ]
    assert specs[0]["code"] == "output.toLowerCase().includes('ahoy')"
    assert specs[4]["threshold"] == 0.8 and specs[4]["value"] == ["Hey you"]


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("file:///etc/*", "is not relative to the suite's folder"),
        ("file://../*", "outside the suite's folder"),
    ],
)
def test_a_glob_reads_inside_the_suite_folder_only(glob, expected, tmp_path, capsys):
    (tmp_path / "suite").mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    config = tmp_path / "suite/promptfooconfig.yaml"
    config.write_text(f"prompts: ['x {{{{a}}}}']\ntests:\n  - vars: {{a: '{glob}'}}\n")
    argv = ["import", "promptfoo", str(config), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and not (tmp_path / "out").exists()
