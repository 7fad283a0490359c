"""Price tables find the models by the names the vendors' servers report."""

from __future__ import annotations

import pandas as pd
import pytest

from evalnb._prices import load_prices, price_of, sample_cost
from evalnb.analysis._cost import costs

TABLE = """
[models."claude-sonnet-4-5"]
input = 3
output = 15

[models."gpt-4o"]
input = 2.5
output = 10

[models."gemini-2.5-flash"]
input = 0.3
output = 2.5

[models."gpt-4o-2024-05-13"]
input = 5
output = 15
"""


@pytest.fixture
def prices(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(TABLE)
    return load_prices(path)


@pytest.mark.parametrize(
    ("model", "rates"),
    [
        ("claude-sonnet-4-5-20250929", (3.0, 15.0)),  # Anthropic's dated snapshot
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", (3.0, 15.0)),  # a Bedrock profile
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", (3.0, 15.0)),  # a Bedrock model id
        ("gpt-4o-2024-08-06", (2.5, 10.0)),  # Azure and the Responses API report snapshots
        ("gpt-4o-2024-05-13", (5.0, 15.0)),  # an entry under the full name wins
        ("models/gemini-2.5-flash", (0.3, 2.5)),
        ("gemini-2.5-flash", (0.3, 2.5)),
        ("claude-opus-4-1-20250805", None),
        (None, None),
    ],
)
def test_a_model_is_found_by_the_name_its_vendor_reports(prices, model, rates):
    assert price_of(prices, model) == rates


def test_the_cost_of_a_vendor_named_sample(prices):
    # 1,000 prompt tokens at $3/M and 200 completion tokens at $15/M
    assert sample_cost(prices, "claude-sonnet-4-5-20250929", 1000, 200) == pytest.approx(0.006)
    frame = pd.DataFrame(
        {
            "variant": ["a", "b"],
            "model": ["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "unknown-model"],
            "prompt_tokens": [1000, 10],
            "completion_tokens": [200, 10],
        }
    )
    table = costs(frame, prices=prices).set_index("variant")
    assert table.loc["a", "cost"] == pytest.approx(0.006) and table.loc["a", "priced"] == 1
    assert table.loc["b", "unpriced"] == 1
