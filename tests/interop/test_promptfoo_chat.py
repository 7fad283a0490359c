"""Chat prompts go out as the message lists promptfoo sends: a ``chat`` variant's rendering
that is a list of messages (JSON, or YAML ``- role:`` lines) is the whole request; the
promptfoo importer makes such variants for transcripts from vars and for chat prompts of any
shape, and a run on the stand-in sends (and stores) exactly those messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalnb
from evalnb.cli import main
from evalnb.interop import import_promptfoo

CHAT = Path(__file__).parents[1] / "data" / "promptfoo_features" / "chat"
TRANSCRIPT = json.loads((CHAT / "conversation.json").read_text(encoding="utf-8"))


def test_a_chat_template_that_renders_a_transcript_sends_its_messages():
    case = evalnb.Case("c", vars={"conversation": json.dumps(TRANSCRIPT)})
    variant = evalnb.Variant("v", template="{{ conversation }}", chat=True)
    assert list(variant.messages_for(case)) == TRANSCRIPT
    # Without chat the same rendering is one user message, as before.
    plain = evalnb.Variant("v", template="{{ conversation }}").messages_for(case)
    assert plain == ({"role": "user", "content": json.dumps(TRANSCRIPT)},)


def test_a_chat_template_of_yaml_role_lines_and_of_plain_text():
    case = evalnb.Case("c", vars={"country": "Italy"})
    yaml_lines = (
        "- role: system\n  content: Be brief.\n- role: user\n  content: Capital of {{country}}?"
    )
    sent = evalnb.Variant("v", template=yaml_lines, chat=True).messages_for(case)
    assert sent == (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of Italy?"},
    )
    # Text that is no message list stays the user message; the case's messages are kept.
    other = evalnb.Case("d", messages=[{"role": "user", "content": "hi"}], vars={"x": "[1, 2]"})
    assert evalnb.Variant("v", template="{{ x }}", chat=True).messages_for(other) == (
        {"role": "user", "content": "[1, 2]"},
    )


def test_a_json_chat_template_renders_values_inside_their_strings():
    """A value with quotes and line breaks cannot break the JSON, as in promptfoo."""
    template = json.dumps(
        [
            {"role": "system", "content": "Quote the user."},
            {"role": "user", "content": "Say {{ text }}"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "Again: {{ text }}"},
        ]
    )
    text = 'he said "no"\nthen left'
    sent = evalnb.Variant("v", template=template, chat=True).messages_for(
        evalnb.Case("c", vars={"text": text})
    )
    assert [m["content"] for m in sent] == [
        "Quote the user.",
        f"Say {text}",
        "ok",
        f"Again: {text}",
    ]


def test_chat_needs_a_template_and_a_boolean():
    with pytest.raises(ValueError, match="'chat' reads the template as a chat prompt; give a"):
        evalnb.Variant("v", chat=True)
    with pytest.raises(ValueError, match="'chat' must be true or false; got 'yes'"):
        evalnb.Variant("v", template="x", chat="yes")  # type: ignore[arg-type]


def test_a_promptfoo_transcript_var_and_a_few_shot_chat_file_run_as_message_lists(
    standin, tmp_path
):
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "conversation.json").write_text(json.dumps(TRANSCRIPT), encoding="utf-8")
    few_shot = [
        {"role": "system", "content": "Answer with the capital only."},
        {"role": "user", "content": "France?"},
        {"role": "assistant", "content": "Paris"},
        {"role": "user", "content": "{{ country }}?"},
    ]
    (folder / "few_shot.json").write_text(json.dumps(few_shot), encoding="utf-8")
    config = {
        "prompts": ["{{ conversation }}", "file://few_shot.json"],
        "providers": ["openai:chat:gpt-4o-mini"],
        "tests": [
            {
                "vars": {"conversation": "file://conversation.json", "country": "Italy"},
                "assert": [{"type": "icontains", "value": "italy"}],
            }
        ],
    }
    (folder / "promptfooconfig.yaml").write_text(json.dumps(config), encoding="utf-8")
    result = import_promptfoo(folder / "promptfooconfig.yaml", tmp_path / "suite", engine=False)
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    assert [v.chat for v in experiment.variants] == [True, True]
    mapped = {m.name: m.how for m in result.mapped}
    assert "sent as that list" in mapped["prompt prompt-1"]
    assert "4 messages (system, user, assistant, user) sent as a list" in mapped["chat prompt"]
    assert not [u for u in result.unsupported if "prompt" in u.name]

    argv = ["run", "--experiment", str(tmp_path / "suite/experiment.toml")]
    argv += ["--base-url", standin.base_url, "--model", "echo", "--repeats", "1"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    run = evalnb.load(tmp_path / "run")
    samples = {s["variant"]: s for s in run.samples.to_dict("records")}  # type: ignore[union-attr]
    sent = {name: json.loads(s["request"])["messages"] for name, s in samples.items()}
    assert sent["prompt-1"] == TRANSCRIPT
    assert sent["few_shot"] == [*few_shot[:3], {"role": "user", "content": "Italy?"}]
    # The stand-in's echo model answers the last user message, as sent.
    assert samples["prompt-1"]["prompt"] == "And of Italy?"
    assert run.checks.set_index("variant")["outcome"].to_dict() == {  # type: ignore[union-attr]
        "prompt-1": True,
        "few_shot": True,
    }
