"""Bad settings of the vendors' targets are one line naming the parameter, the expected and
the found."""

import pytest

from evalnb import (
    AnthropicMessages,
    ArgumentError,
    AzureOpenAIChat,
    BedrockConverse,
    GeminiGenerateContent,
    OpenAIChat,
    OpenAIResponses,
)
from evalnb.targets._routed import ByVariant
from evalnb.targets._spec import http_target


@pytest.mark.parametrize(
    "make",
    [
        lambda: AnthropicMessages(""),
        lambda: OpenAIResponses("http://127.0.0.1:9/v1", None),
        lambda: GeminiGenerateContent(None),
        lambda: AzureOpenAIChat("http://127.0.0.1:9", ""),
    ],
)
def test_a_missing_model_names_the_parameter(make):
    with pytest.raises(ArgumentError, match=r"^'model' must name the model to reach; got "):
        make()


def test_headers_and_query_must_be_text():
    with pytest.raises(ArgumentError, match=r"^'headers' must be a mapping of names to text"):
        OpenAIChat("http://127.0.0.1:9/v1", headers={"X-Team": 7})
    with pytest.raises(ArgumentError, match=r"^'query' must be a mapping .*got \['a'\]"):
        OpenAIChat("http://127.0.0.1:9/v1", query=["a"])


def test_the_anthropic_key_variable_must_be_set(monkeypatch):
    monkeypatch.delenv("EVALNB_ABSENT_KEY", raising=False)
    with pytest.raises(ArgumentError, match="'api_key_env' names 'EVALNB_ABSENT_KEY'"):
        AnthropicMessages("claude-sonnet-4-5", api_key_env="EVALNB_ABSENT_KEY")


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_bedrock_needs_a_region_and_credentials(no_aws, monkeypatch):
    with pytest.raises(ArgumentError, match=r"^'region' must name an AWS region .*got None$"):
        BedrockConverse("anthropic.claude-3-haiku-20240307-v1:0")
    with pytest.raises(ArgumentError, match="found no AWS credentials: set AWS_ACCESS_KEY_ID"):
        BedrockConverse("anthropic.claude-3-haiku-20240307-v1:0", region="us-east-1")
    monkeypatch.setenv("EVALNB_BEDROCK_KEY", "bedrock-api-key-0123456789")
    target = BedrockConverse("m", region="us-east-1", api_key_env="EVALNB_BEDROCK_KEY")
    assert target.base_url == "https://bedrock-runtime.us-east-1.amazonaws.com"


def test_a_variant_target_of_an_unknown_key_or_type_is_named():
    spec = {"variants": {"claude": {"type": "anthropic", "model": "m", "modle": "x"}}}
    with pytest.raises(ArgumentError, match=r"^'variants\['claude'\]\.target' keys .*\['modle'\]"):
        http_target(spec, None)
    spec = {"variants": {"claude": {"type": "claude", "model": "m"}}}
    with pytest.raises(
        ArgumentError, match=r"^'target\.variants\['claude'\]\.type' .*got 'claude'$"
    ):
        http_target(spec, None)
    with pytest.raises(ArgumentError, match=r"^--target azure needs the server's URL"):
        http_target({"type": "azure", "model": "d"}, None)


def test_by_variant_needs_targets():
    with pytest.raises(ArgumentError, match=r"^'targets\['a'\]' must have an async complete"):
        ByVariant({"a": object()})
    with pytest.raises(ArgumentError, match=r"^'targets' must map variant names to targets"):
        ByVariant({})


def test_an_experiment_refuses_variant_targets_beside_a_harness(tmp_path):
    from evalnb import CasesError, load_experiment

    path = tmp_path / "e.toml"
    path.write_text(
        '[target]\ncommand = ["python", "app.py"]\n\n[[variants]]\nname = "claude"\n'
        'target = { type = "anthropic", model = "claude-sonnet-4-5" }\n'
    )
    with pytest.raises(CasesError, match=r"variants with their own 'target' \('claude'\) need"):
        load_experiment(path)
    path.write_text('[[variants]]\nname = "claude"\ntarget = "anthropic"\n')
    with pytest.raises(CasesError, match=r"the target of variant 'claude' must be a table"):
        load_experiment(path)
