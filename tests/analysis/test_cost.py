"""Costs from the stored token counts and a price table the user supplies."""

from __future__ import annotations

import pytest

import evalnb
from evalnb.analysis._cost import costs, load_prices
from evalnb.standin import StandIn

PRICES = """
[models."shop-v1"]
input = 0.15
output = 0.60

[models."shop-v2"]
input = 2.5
output = 10
"""


@pytest.fixture(scope="module")
def shop_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cost") / "shop"
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1")
        variants = [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]
        evalnb.run(
            evalnb.cases.suites.path("shop.jsonl"),
            target,
            variants=variants,
            repeats=3,
            out=out,
            progress=False,
        )
    return out


def test_costs_match_a_hand_computation_from_the_stored_tokens(shop_run, tmp_path):
    table = tmp_path / "prices.toml"
    table.write_text(PRICES)
    run = evalnb.load(shop_run)
    result = costs(run, prices=table).set_index("variant")
    samples = run.samples
    price = {"shop-v1": (0.15, 0.60), "shop-v2": (2.5, 10.0)}
    for variant in ("v1", "v2"):
        rows = samples[samples["variant"] == variant]
        assert int(rows["prompt_tokens"].min()) > 0  # the stand-in reports usage
        by_hand = sum(
            (r.prompt_tokens * price[r.model][0] + r.completion_tokens * price[r.model][1]) / 1e6
            for r in rows.itertuples()
        )
        assert result.loc[variant, "cost"] == pytest.approx(by_hand, rel=1e-12)
        assert result.loc[variant, "prompt_tokens"] == rows["prompt_tokens"].sum()
        assert result.loc[variant, "samples"] == result.loc[variant, "priced"] == 12
    total = costs(run, by=None, prices=table)
    assert total["cost"].iloc[0] == pytest.approx(result["cost"].sum())
    per_sample = costs(run, ["variant", "case_id", "repeat"], prices=table)
    assert len(per_sample) == 24 and per_sample["cost"].sum() == pytest.approx(result["cost"].sum())


def test_a_model_missing_from_the_table_is_unpriced_not_free(shop_run, tmp_path):
    run = evalnb.load(shop_run)
    result = costs(run, prices={"shop-v1": (1.0, 1.0)}).set_index("variant")
    assert result.loc["v2", "unpriced"] == 12 and result.loc["v2", "cost"] == 0
    assert "lower bound" in result.loc["v2", "note"] and "shop-v2" in result.loc["v2", "note"]
    assert result.loc["v1", "note"] == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.x]\ninput = 1\n", "'models.x.output' must be a price >= 0"),
        ("[models.x]\ninput = -1\noutput = 1\n", "'models.x.input' must be a price >= 0"),
        ("[models.x]\ninput = 1\noutput = 1\ncached = 2\n", "keys must be 'input' and 'output'"),
        ("prices = 1\n", "must have a [models"),
        ("[models\n", "not valid TOML"),
    ],
)
def test_a_bad_price_table_names_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"prices\.toml: ") as caught:
        load_prices(path)
    assert message in str(caught.value)
