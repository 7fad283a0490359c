"""Issue 17, item 10: several variants compared at once, Holm-adjusted by default."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from evalnb.analysis import compare

VARIANTS = ["base", "short", "polite", "strict"]


def variants_frame(
    rng: np.random.Generator, lifts: dict[str, float], cases: int = 20
) -> pd.DataFrame:
    rates = rng.beta(4, 3, size=cases)
    rows = []
    for variant in VARIANTS:
        k = rng.binomial(10, np.clip(rates + lifts.get(variant, 0.0), 0, 1))
        rows.append(
            pd.DataFrame(
                {"case_id": np.arange(cases), "variant": variant, "check": "ok", "k": k, "n": 10}
            )
        )
    return pd.concat(rows, ignore_index=True)


def test_one_against_several_is_holm_adjusted() -> None:
    frame = variants_frame(np.random.default_rng(4), {"short": 0.12, "strict": -0.05})
    out = compare(frame, a="base", b=["short", "polite", "strict"], check="ok")
    assert out[["a", "b"]].values.tolist() == [
        ["base", "short"],
        ["base", "polite"],
        ["base", "strict"],
    ]
    # statsmodels multipletests(..., method="holm") on the p-values the verdicts use
    raw = np.fmax(out["p_value"], out["p_exact"].fillna(0))
    assert out["p_adjusted"].tolist() == pytest.approx(multipletests(raw, method="holm")[1])
    assert (out["comparisons"] == 3).all() and (out["adjust"] == "holm").all()
    assert out["note"].str.contains("Holm-adjusted over 3 comparisons").all()
    expected = np.where(
        out["p_adjusted"] < 0.05,
        np.where(out["diff"] > 0, "B better", "A better"),
        "can't tell yet",
    )
    assert out["verdict"].tolist() == expected.tolist()
    unadjusted = compare(frame, a="base", b=["short", "polite", "strict"], check="ok", adjust=None)
    assert unadjusted["p_adjusted"].tolist() == pytest.approx(raw.tolist())
    assert (unadjusted["adjust"] == "none").all()
    single = compare(frame, a="base", b="short", check="ok").iloc[0]
    assert single["comparisons"] == 1 and single["adjust"] == "none"
    assert single["p_value"] == pytest.approx(out["p_value"].iloc[0])


def test_all_pairs_and_one_against_the_rest() -> None:
    frame = variants_frame(np.random.default_rng(5), {})
    pairs = compare(frame, check="ok")
    assert len(pairs) == 6 and (pairs["comparisons"] == 6).all()
    # a frame's values in sorted order (a Run's in the manifest's)
    assert pairs[["a", "b"]].values.tolist()[:3] == [
        ["base", "polite"], ["base", "short"], ["base", "strict"],
    ]  # fmt: skip
    rest = compare(frame, a="polite", check="ok")
    assert rest["b"].tolist() == ["base", "short", "strict"]
    with pytest.raises(ValueError, match=r"'b' must not repeat a value"):
        compare(frame, a="base", b=["short", "short"], check="ok")
    with pytest.raises(ValueError, match=r"'a' and 'b' must differ"):
        compare(frame, a="base", b=["short", "base"], check="ok")
    with pytest.raises(ValueError, match=r"'adjust' must be one of 'holm'"):
        compare(frame, a="base", check="ok", adjust="sidak2")


def test_holm_keeps_the_familywise_false_alarms_at_the_level() -> None:
    """Seeded: four identical variants, three compared with the base on 20 cases. Without
    adjustment some comparison says "better" far more often than 5% of the time."""
    rng = np.random.default_rng(9)
    frames = [variants_frame(rng, {}).assign(experiment=e) for e in range(300)]
    frame = pd.concat(frames, ignore_index=True)
    family = dict(a="base", b=["short", "polite", "strict"], by="experiment", check="ok")
    adjusted = compare(frame, **family)
    plain = compare(frame, **family, adjust=None)

    def familywise(out: pd.DataFrame) -> float:
        return float((out["verdict"] != "can't tell yet").groupby(out["experiment"]).any().mean())

    assert familywise(adjusted) <= 0.05
    assert familywise(plain) > familywise(adjusted)
    # each experiment is its own family: statsmodels multipletests(..., method="holm")
    for _, rows in list(adjusted.groupby("experiment"))[:25]:
        raw = np.fmax(rows["p_value"], rows["p_exact"].fillna(0))
        assert rows["p_adjusted"].tolist() == pytest.approx(multipletests(raw, method="holm")[1])
