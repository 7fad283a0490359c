"""promptfoo providers of the protocols evalnb speaks become the variants' own targets."""

import json

import yaml

import evalnb
from evalnb.cli import main
from evalnb.interop import import_promptfoo
from evalnb.targets import AnthropicMessages, OpenAIChat
from evalnb.targets._routed import ByVariant
from evalnb.targets._spec import http_target


def _config(tmp_path, providers):
    config = {
        "prompts": ["Where is my order {{order}}?"],
        "providers": providers,
        "tests": [
            {"vars": {"order": "A-1042"}, "assert": [{"type": "icontains", "value": "order"}]}
        ],
    }
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_anthropic_and_an_openai_provider_are_two_variants_of_those_protocols(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-0123456789")
    providers = [
        {"id": "anthropic:messages:claude-sonnet-4-5", "label": "claude"},
        {"id": "openai:chat:gpt-4.1-mini", "label": "gpt", "config": {"temperature": 0}},
    ]
    result = import_promptfoo(_config(tmp_path, providers), tmp_path / "suite")
    experiment = evalnb.load_experiment(tmp_path / "suite" / "experiment.toml")
    assert [v.name for v in experiment.variants] == ["claude", "gpt"]
    own = experiment.target["variants"]
    assert own["claude"] == {
        "type": "anthropic",
        "model": "claude-sonnet-4-5",
        "api_key_env": "ANTHROPIC_API_KEY",
    }
    assert own["gpt"]["type"] == "openai" and own["gpt"]["model"] == "gpt-4.1-mini"
    target = http_target(experiment.target, None)
    assert isinstance(target, ByVariant) and target.default is None
    assert type(target.targets["claude"]) is AnthropicMessages
    assert type(target.targets["gpt"]) is OpenAIChat
    assert target.targets["gpt"].base_url == "https://api.openai.com/v1"
    assert {m.name for m in result.mapped} >= {
        "provider anthropic:messages:claude-sonnet-4-5",
        "provider openai:chat:gpt-4.1-mini",
    }
    assert result.approximated == []


def test_without_their_keys_the_providers_are_approximated_by_the_run_model(tmp_path, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    providers = ["anthropic:messages:claude-sonnet-4-5", "openai:responses:gpt-5-mini"]
    result = import_promptfoo(_config(tmp_path, providers), tmp_path / "suite")
    experiment = evalnb.load_experiment(tmp_path / "suite" / "experiment.toml")
    assert "variants" not in experiment.target
    how = {a.name: a.how for a in result.approximated}
    assert "ANTHROPIC_API_KEY not set" in how["provider anthropic:messages:claude-sonnet-4-5"]
    assert "the model is the run's (--model)" in how["provider openai:responses:gpt-5-mini"]


def test_an_imported_comparison_runs_each_variant_through_its_protocol(
    tmp_path, monkeypatch, standin
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-0123456789")
    providers = [
        {"id": "anthropic:messages:shop-v1", "config": {"apiBaseUrl": standin.base_url}},
        {"id": "openai:responses:shop-v2", "config": {"apiBaseUrl": standin.base_url}},
    ]
    import_promptfoo(_config(tmp_path, providers), tmp_path / "suite")
    out = tmp_path / "run"
    experiment = str(tmp_path / "suite" / "experiment.toml")
    argv = ["run", "--experiment", experiment, "--repeats", "2", "--out", str(out)]
    since = standin.requests()[-1]["time"] if standin.requests() else 0
    assert main([*argv, "--no-progress"]) == 0
    samples = evalnb.store.read_table(out, "samples").to_pandas()
    assert (samples.status == "completed").all()
    assert samples.groupby("variant").model.agg(set).to_dict() == {
        "anthropic-messages-shop-v1": {"shop-v1"},
        "openai-responses-shop-v2": {"shop-v2"},
    }
    protocols = {e["protocol"] for e in standin.requests() if e["time"] > since}
    assert protocols == {"anthropic", "responses"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"]["type"] == "by-variant"
