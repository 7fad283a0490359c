"""Imported configs expanded by promptfoo itself: every (test, prompt) pair promptfoo
renders is compared with what evalnb sends; where they differ, promptfoo's rendering is
what a run sends. A config that carries code the expansion would run is not expanded, and
without promptfoo evalnb's translation renders; the import says which, in one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import evalnb
from evalnb.checks import find_promptfoo, quiet_env
from evalnb.cli import main
from evalnb.interop import import_promptfoo
from evalnb.interop._promptfoo_expand import sent_messages, suite_code
from tests.interop.test_promptfoo_agreement import CONFIGS, needs_promptfoo, promptfoo_eval

#: The installed promptfoo is seen here (tests/interop/conftest.py hides it elsewhere).
ENGINE = True

FEATURES = Path(__file__).parents[1] / "data" / "promptfoo_features"
NUNJUCKS = FEATURES / "nunjucks" / "promptfooconfig.yaml"


def _record(suite: Path) -> dict:
    return json.loads((suite / "imported.json").read_text(encoding="utf-8"))


#: The configs whose prompts evalnb's templates do not all render as promptfoo does: the
#: variant promptfoo's rendering replaces for every case, and why. promptfoo's own
#: ``simple-csv`` example reads a JSON var with its Nunjucks filter ``load``, which Jinja2
#: lacks: evalnb's translation refuses that prompt; expanded, it is imported as promptfoo
#: renders it.
NOT_IDENTICAL = {"simple-csv": ("prompts-1", "the Nunjucks filter 'load'")}


@needs_promptfoo
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: Path(str(p)).parent.name)
def test_every_agreement_config_expands_through_promptfoo(config, tmp_path):
    result = import_promptfoo(config, tmp_path / "suite")
    engine = find_promptfoo()
    assert engine is not None and result.expansion is not None
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml", defaults=experiment.defaults)
    n = len(cases) * len(experiment.variants)
    replaced, why = NOT_IDENTICAL.get(config.parent.name, (None, ""))
    line = f"prompts expanded by {engine.name}: {n} of {n} identical"
    differing: list[dict[str, str]] = []
    if replaced is not None:
        line = (
            f"prompts expanded by {engine.name}: {n - len(cases)} of {n} identical; "
            f"{len(cases)} differ, sent as promptfoo renders them"
        )
        differing = result.expansion["differing"]
        assert [(d["case"], d["variant"]) for d in differing] == [
            (case.id, replaced) for case in cases
        ]
        assert all(why in d["how"] for d in differing)
        variant = next(v for v in experiment.variants if v.name == replaced)
        assert variant.template is None and set(variant.rendered) == {c.id for c in cases}
        assert not [u for u in result.unsupported if u.name.startswith("prompt")]
    assert result.expansion["line"] == line
    assert line in result.summary().splitlines()
    assert _record(tmp_path / "suite")["expansion"] == {
        "engine": engine.name,
        "pairs": n,
        "identical": n - len(differing),
        "differing": differing,
        "line": line,
    }
    assert [v.name for v in experiment.variants if v.rendered] == [replaced] * bool(replaced)


@needs_promptfoo
def test_where_jinja_and_nunjucks_differ_evalnb_sends_what_promptfoo_renders(standin, tmp_path):
    result = import_promptfoo(NUNJUCKS, tmp_path / "suite")
    engine = find_promptfoo()
    assert engine is not None and result.expansion is not None
    line = (
        f"prompts expanded by {engine.name}: 2 of 6 identical; 4 differ, sent as promptfoo "
        "renders them"
    )
    assert result.expansion["line"] == line
    how = {(d["case"], d["variant"]): d["how"] for d in result.expansion["differing"]}
    assert set(how) == {
        ("test-1", "prompt-1"),
        ("test-1", "prompt-2"),
        ("test-1", "prompt-3"),
        ("test-2", "prompt-3"),
    }
    # promptfoo's filter `load` does not compile in Jinja2: the prompt is imported (not
    # refused) as promptfoo renders it for each case.
    assert "the Nunjucks filter 'load'" in how[("test-2", "prompt-3")]
    assert not result.unsupported
    mapped = {m.name: m.how for m in result.mapped}
    assert mapped["prompt prompt-3"] == (
        "evalnb's templates cannot compile it; each case's messages as promptfoo renders them"
    )
    # Jinja2 writes Python's True and 2.0; Nunjucks writes true and 2.
    assert "'user: Strict mode: True. Temperature: 2.0." in how[("test-1", "prompt-1")]
    assert "'user: Strict mode: true. Temperature: 2. " in how[("test-1", "prompt-1")]
    # An undefined variable is an error in evalnb's strict templates, empty in Nunjucks.
    assert "variable 'hint' is undefined" in how[("test-1", "prompt-2")]
    summary = result.summary()
    assert f"{line}\n  test-1 / prompt-1: evalnb sends" in summary
    assert "\n  test-1 / prompt-2: evalnb cannot render it" in summary

    # promptfoo's own eval of the config: what it sends for each (test, prompt).
    results = promptfoo_eval(NUNJUCKS, standin, tmp_path / "promptfoo")
    theirs = {
        (row["testIdx"], row["promptIdx"]): sent_messages(row["prompt"]["raw"])
        for row in results["results"]["results"]
    }
    assert len(theirs) == 6
    assert theirs[(1, 2)] == [
        {"role": "user", "content": "Known settings: strict, temperature. What is the temperature?"}
    ]

    # `evalnb run` of the imported suite sends exactly those messages, and stores them.
    argv = ["run", "--experiment", str(tmp_path / "suite/experiment.toml")]
    argv += ["--base-url", standin.base_url, "--model", "echo", "--repeats", "1"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    run = evalnb.load(tmp_path / "run")
    samples = run.samples.to_dict("records")  # type: ignore[union-attr]
    assert len(samples) == 6 and {s["status"] for s in samples} == {"completed"}
    for sample in samples:
        test = int(sample["case_id"].removeprefix("test-")) - 1
        prompt = int(sample["variant"].removeprefix("prompt-")) - 1
        sent = json.loads(sample["request"])["messages"]
        assert sent == theirs[(test, prompt)], (sample["case_id"], sample["variant"])
    manifest = json.loads((tmp_path / "run/manifest.json").read_text(encoding="utf-8"))
    variants = {v["name"]: v for v in _variants(manifest)}
    assert variants["prompt-1"]["rendered"] == {"test-1": theirs[(0, 0)]}
    assert variants["prompt-2"]["rendered"] == {"test-1": theirs[(0, 1)]}
    assert variants["prompt-3"]["rendered"] == {"test-1": theirs[(0, 2)], "test-2": theirs[(1, 2)]}
    assert "template" not in variants["prompt-3"]


def _variants(manifest: dict) -> list[dict]:
    """The variants a run's manifest records (wherever its design keeps them)."""
    found: list[dict] = []

    def visit(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("variants"), list):
                found.extend(v for v in value["variants"] if isinstance(v, dict))
            for item in value.values():
                visit(item)

    visit(manifest)
    return found


PROMPT_JS = """\
require('fs').writeFileSync(require('path').join(__dirname, 'ran.txt'), 'ran');
module.exports = ({ vars }) => `Explain ${vars.topic} in one line.`;
"""


#: A template that calls: promptfoo's Nunjucks reaches JavaScript's Function through any
#: string (the file it writes is the proof that it ran).
CALLING = (
    "{{ ''.constructor.constructor(\"process.mainModule.require('fs')"
    ".writeFileSync('ran.txt', 'ran')\")() }}Explain {{ topic }}."
)


@needs_promptfoo
@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        (CALLING, "calls a function in a template"),
        (
            "{% for a in topic %}{% for b in topic %}{{ a }}{% endfor %}{% endfor %}",
            "nests a loop in a loop",
        ),
    ],
    ids=["a call", "a loop in a loop"],
)
def test_a_template_that_calls_or_nests_loops_is_not_expanded(tmp_path, prompt, why):
    folder = tmp_path / "config"
    folder.mkdir()
    config = {
        "prompts": [prompt, "Explain {{ topic }}."],
        "providers": ["openai:chat:gpt-4o-mini"],
        "tests": [{"vars": {"topic": "tides"}, "assert": [{"type": "icontains", "value": "x"}]}],
    }
    (folder / "promptfooconfig.yaml").write_text(json.dumps(config), encoding="utf-8")
    result = import_promptfoo(folder / "promptfooconfig.yaml", tmp_path / "suite")
    assert not (folder / "ran.txt").exists() and not (tmp_path / "ran.txt").exists()
    assert result.expansion is not None and result.expansion["engine"] == "evalnb"
    line = result.expansion["line"]
    assert line.startswith("prompts rendered by evalnb's translation: not expanded by promptfoo")
    assert f"the prompt 'prompt-1' {why}" in line, line


@needs_promptfoo
def test_a_prompt_function_is_not_expanded_and_no_code_runs_at_import(tmp_path):
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "prompt.js").write_text(PROMPT_JS, encoding="utf-8")
    config = {
        "prompts": ["file://prompt.js", "Explain {{ topic }}."],
        "providers": ["openai:chat:gpt-4o-mini"],
        "tests": [{"vars": {"topic": "tides"}, "assert": [{"type": "icontains", "value": "x"}]}],
    }
    (folder / "promptfooconfig.yaml").write_text(json.dumps(config), encoding="utf-8")
    ran = folder / "ran.txt"

    result = import_promptfoo(folder / "promptfooconfig.yaml", tmp_path / "suite")
    assert not ran.exists()
    engine = find_promptfoo()
    assert engine is not None and result.expansion is not None
    line = (
        f"prompts rendered by evalnb's translation: not expanded by {engine.name}, as the "
        "prompt 'file://prompt.js' is a prompt function (code) and expanding would run it at "
        "import (a suite's code runs only at run or scoring, after --trust-code)"
    )
    assert result.expansion["line"] == line
    assert line in result.summary().splitlines()
    assert _record(tmp_path / "suite")["expansion"]["engine"] == "evalnb"

    # promptfoo's own expansion of the same config runs the function: the file is the proof.
    home = tmp_path / "home"
    (home / "promptfoo").mkdir(parents=True)
    argv = ["eval", "-c", "promptfooconfig.yaml", "--providers", "echo", "--no-cache"]
    argv += ["--no-table", "--no-progress-bar", "-o", str(tmp_path / "out.json")]
    subprocess.run(
        [*engine.command(), *argv],
        cwd=folder,
        env=quiet_env(home),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert ran.read_text(encoding="utf-8") == "ran"


def test_without_promptfoo_the_translation_renders_and_the_import_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    result = import_promptfoo(NUNJUCKS, tmp_path / "suite")
    line = (
        "prompts rendered by evalnb's translation: promptfoo is not here (`make promptfoo` or "
        "`npm install promptfoo` installs it)"
    )
    assert result.expansion is not None and result.expansion["line"] == line
    assert line in result.summary().splitlines()
    assert _record(tmp_path / "suite")["expansion"] == {
        "engine": "evalnb",
        "reason": line.split(": ", 1)[1],
        "line": line,
    }
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    # The prompt of promptfoo's filter `load` is refused, as evalnb cannot render it.
    assert [v.rendered for v in experiment.variants] == [{}, {}]
    assert [u.name for u in result.unsupported] == ["prompt 3"]


@pytest.mark.parametrize(
    ("config", "tests", "why"),
    [
        ({"prompts": ["file://p.py:make"]}, [], "the prompt 'file://p.py:make' is a prompt"),
        ({"prompts": [{"raw": "prompts/p.js"}]}, [], "the prompt 'prompts/p.js' is a prompt"),
        ({"prompts": ["x"], "extensions": ["file://h.js:beforeAll"]}, [], "its extensions"),
        ({"prompts": ["x"], "nunjucksFilters": {"up": "up.js"}}, [], "its nunjucksFilters"),
        ({"prompts": ["x"], "providers": ["exec: ./run.sh"]}, [], "the provider 'exec: ./run.sh'"),
        ({"prompts": ["x"], "tests": "file://tests.py"}, [], "its tests 'file://tests.py'"),
        (
            {"prompts": ["x"], "tests": [{"path": "file://gen.js", "config": {}}]},
            [],
            "its tests 'file://gen.js' are generated by code",
        ),
        ({"prompts": ["x"]}, [{"vars": {"a": "file://a.py"}}], "tests[0].vars.a 'file://a.py'"),
        (
            {"prompts": ["x"]},
            [{"vars": {"a": ["b", "file://c.js:f"]}}],
            "tests[0].vars.a 'file://c.js:f' is generated by code",
        ),
        (
            {"prompts": ["x"]},
            [{"options": {"transformVars": "return vars"}}],
            "tests[0].options.transformVars is code",
        ),
    ],
)
def test_suite_code_names_what_expansion_would_run(config, tests, why):
    found = suite_code(config, tests, {})
    assert found is not None and why in found


def test_assertions_output_transforms_and_text_files_are_not_suite_code():
    """The expansion takes assertions and output transforms off; text files are data."""
    config = {"prompts": ["file://p.txt", "prompts/p.json"], "providers": ["openai:chat:x"]}
    tests = [
        {
            "vars": {"a": "file://a.txt", "b": "p.py"},
            "options": {"transform": "output.trim()"},
            "assert": [{"type": "javascript", "value": "file://grader.js"}],
        }
    ]
    default = {"assert": [{"type": "python", "value": "file://g.py"}]}
    assert suite_code(config, tests, default) is None


def test_a_variant_sends_rendered_messages_for_its_cases_and_reads_them_back(tmp_path):
    case = evalnb.Case("c1", vars={"x": True})
    other = evalnb.Case("c2", vars={"x": False})
    given = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x is true"}]
    variant = evalnb.Variant(
        "v", template="x is {{ x }}", system="Sys", prefix="Note:", rendered={"c1": given}
    )
    # The case's rendered messages as they are, the prefix still applied.
    assert variant.messages_for(case) == (
        given[0],
        {"role": "user", "content": "Note:\n\nx is true"},
    )
    assert variant.messages_for(other) == (
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": "Note:\n\nx is False"},
    )
    assert variant.to_dict()["rendered"] == {"c1": given}
    assert not evalnb.Variant("r", rendered={"c1": given}).is_baseline
    assert "rendered" not in evalnb.Variant("plain").to_dict()
    with pytest.raises(ValueError, match=r"'rendered.c1' must be a list of messages \(each"):
        evalnb.Variant("v", rendered={"c1": "hello"})
    with pytest.raises(ValueError, match="'rendered' must map case ids to messages; got"):
        evalnb.Variant("v", rendered=["c1"])  # type: ignore[arg-type]

    experiment = tmp_path / "experiment.toml"
    experiment.write_text(
        '[[variants]]\nname = "v"\ntemplate = "x is {{ x }}"\n[variants.rendered]\n'
        '"c1" = [{ role = "user", content = "x is true" }]\n',
        encoding="utf-8",
    )
    loaded = evalnb.load_experiment(experiment).variants[0]
    assert loaded.messages_for(case) == ({"role": "user", "content": "x is true"},)


@needs_promptfoo
def test_a_config_promptfoo_cannot_expand_is_rendered_by_the_translation_saying_why(tmp_path):
    # promptfoo reads an inline prompt with " / " as a path to prompt files, and finds none.
    config = {
        "prompts": ["Compare {{ a }} / {{ b }}"],
        "providers": ["openai:chat:gpt-4o-mini"],
        "tests": [{"vars": {"a": "x", "b": "y"}}],
    }
    (tmp_path / "promptfooconfig.yaml").write_text(json.dumps(config), encoding="utf-8")
    result = import_promptfoo(tmp_path / "promptfooconfig.yaml", tmp_path / "suite")
    engine = find_promptfoo()
    assert engine is not None and result.expansion is not None
    line = (
        f"prompts rendered by evalnb's translation: {engine.name} could not expand it "
        '(Error: There are no prompts in "Compare {{ a }} / {{ b }}")'
    )
    assert result.expansion["line"] == line
    assert line in result.summary().splitlines()
