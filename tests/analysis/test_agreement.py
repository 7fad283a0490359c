"""agreement(): modal answers across draws, flakiness, pass@k and pass^k."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnb.analysis import agreement, load, normalise_answer
from tests.builders import CASES, GOOD, UNIT_BUG, invoice_rows, write_run


@pytest.fixture
def drawn(tmp_path: Path) -> Path:
    return write_run(tmp_path / "drawn", invoice_rows(canonical=False), cases=CASES)


def test_agreement_falls_back_to_the_normalised_answer_and_says_so(drawn: Path) -> None:
    out = agreement(load(drawn)).set_index("case_id")
    invoice = out.loc["invoice_extract_v3"]
    assert invoice["key"].startswith("answer (normalised")
    # four of five draws agree once white space and case are normalised: 0.8
    assert (invoice["draws"], invoice["answered"], invoice["distinct"]) == (5, 5, 2)
    assert invoice["agreement"] == pytest.approx(0.8)
    assert invoice["mode_1"] == normalise_answer(GOOD) and invoice["mode_1_count"] == 4
    assert invoice["mode_2"] == normalise_answer(UNIT_BUG) and invoice["mode_2_count"] == 1
    assert invoice["agreement_min"] == 0.8 and invoice["meets_min"]
    refund = out.loc["refund_abstain_v1"]
    # the timed-out draw has no answer: it stays among the draws and is never the mode
    assert (refund["draws"], refund["answered"], refund["agreement"]) == (5, 4, 0.8)
    assert not refund["meets_min"]
    assert pd.isna(refund["mode_2"]) and refund["mode_2_count"] == 0


def test_agreement_uses_the_canonical_column_when_the_run_has_one(tmp_path: Path) -> None:
    path = write_run(tmp_path / "canonical", invoice_rows(canonical=True), cases=CASES)
    out = agreement(load(path)).set_index("case_id")
    assert (out["key"] == "canonical").all()
    assert out.loc["invoice_extract_v3", "mode_1"] == "ok"
    assert out.loc["invoice_extract_v3", "mode_2"] == "bug"


def test_flaky_cases_and_pass_counts(drawn: Path) -> None:
    out = agreement(load(drawn)).set_index("case_id")
    assert out.loc["invoice_extract_v3", ["k", "n"]].tolist() == [4, 5]
    assert out.loc["invoice_extract_v3", "flaky"]
    assert out.loc["refund_abstain_v1", ["k", "n"]].tolist() == [4, 5]
    schema = agreement(load(drawn), check="schema").set_index("case_id")
    assert schema.loc["invoice_extract_v3", "k"] == 5
    assert not schema.loc["invoice_extract_v3", "flaky"]


def reference_pass_at_k(n: int, c: int, k: int) -> float:
    # The numerically stable form of the unbiased estimator (Chen et al. 2021, "Evaluating
    # Large Language Models Trained on Code", figure 3).
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def test_pass_at_k_and_pass_hat_k(drawn: Path) -> None:
    out = agreement(load(drawn), at=[1, 2, 5, 6])
    invoice = out[out["case_id"] == "invoice_extract_v3"].set_index("at")
    for k in (1, 2, 5):
        assert invoice.loc[k, "pass_at_k"] == pytest.approx(reference_pass_at_k(5, 4, k))
        assert invoice.loc[k, "pass_hat_k"] == pytest.approx(math.comb(4, k) / math.comb(5, k))
    assert invoice.loc[2, "pass_hat_k"] == pytest.approx(0.6)
    assert np.isnan(invoice.loc[6, "pass_at_k"])  # more draws than were scored
    own = agreement(load(drawn)).set_index("case_id")
    assert own.loc["invoice_extract_v3", "at"] == 5
    assert own.loc["invoice_extract_v3", "pass_at_k"] == 1.0
    assert own.loc["invoice_extract_v3", "pass_hat_k"] == 0.0


def test_agreement_of_a_frame() -> None:
    frame = pd.DataFrame(
        {
            "case_id": ["c"] * 4,
            "variant": "v",
            "answer": ["Yes", "yes ", "no", None],
            "status": ["completed", "completed", "completed", "error"],
            "outcome": [True, True, False, False],
            "agreement_min": 0.5,
        }
    )
    row = agreement(frame).iloc[0]
    assert (row["draws"], row["answered"], row["agreement"], row["k"], row["n"]) == (
        4,
        3,
        0.5,
        2,
        4,
    )
    assert row["meets_min"]


def test_agreement_errors(drawn: Path) -> None:
    run = load(drawn)
    with pytest.raises(ValueError, match=r"'at' must be a positive integer .*; got 0"):
        agreement(run, at=0)
    with pytest.raises(ValueError, match=r"'key' must be 'canonical', 'answer' or .*; got 'nope'"):
        agreement(run, key="nope")
    with pytest.raises(ValueError, match=r"'check' must be one check name"):
        agreement(run, check=["schema", "values"])
    with pytest.raises(ValueError, match=r"'level' must be a number between 0 and 1"):
        agreement(run, level=1.5)


def test_across_case_pass_at_k_is_wilson_on_the_cases_not_certainty() -> None:
    """Issue 39: five cases always pass and one passes 1 of 4 draws. pass@3 per case is 1,
    and 1 - C(3, 3) / C(4, 3) = 0.75 for the last, so the mean is 5.75 / 6; its interval is
    Wilson on the 6 cases (the largest variance values in [0, 1] can have), where the
    effective n of the spread took it near certainty."""
    passes = [4, 4, 4, 4, 4, 1]
    frame = pd.DataFrame(
        {
            "case_id": np.repeat([f"c{i}" for i in range(6)], 4),
            "variant": "v",
            "outcome": [r < k for k in passes for r in range(4)],
            "answer": ["yes" if r < k else "no" for k in passes for r in range(4)],
        }
    )
    row = agreement(frame, by="variant", key="answer", at=3).iloc[0]
    assert row["pass_at_k"] == pytest.approx(5.75 / 6)
    # statsmodels proportion_confint(5.75, 6, alpha=0.05, method="wilson")
    assert (row["pass_at_k_low"], row["pass_at_k_high"]) == pytest.approx(
        (0.5612728, 0.9975875), abs=1e-6
    )
    assert row["pass_hat_k"] == pytest.approx(5 / 6)
    assert "pass@k and pass^k: Wilson on the case groups" in row["method"]
