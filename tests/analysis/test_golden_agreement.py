"""The two golden cases of the n-sample agreement gate, end to end against the stand-in."""

import evalnb
from evalnb import OpenAIChat, run


def test_golden_cases_give_agreement_schema_and_length_results(tmp_path, standin):
    target = OpenAIChat(standin.base_url, "extractor", params={"temperature": 0.7})
    out = tmp_path / "golden"
    run("data/cases/extract.jsonl", target, repeats=5, out=out, progress=False)
    loaded = evalnb.load(out)

    agreement = evalnb.agreement(loaded, check="schema").set_index("case_id")
    assert set(agreement.index) == {"invoice_extract_v3", "refund_abstain_v1"}
    assert (agreement["draws"] == 5).all()
    assert agreement.loc["invoice_extract_v3", "agreement_min"] == 0.8
    assert agreement.loc["refund_abstain_v1", "agreement_min"] == 1.0
    for case in agreement.itertuples():
        # agreement is the modal share of canonical answers: a multiple of 1/5
        assert case.agreement * 5 == case.mode_1_count
        assert case.meets_min == (case.agreement >= case.agreement_min)

    checks = evalnb.rates(loaded, by=["case_id"], check=["schema", "values", "length"])
    assert set(checks["check"]) == {"schema", "values", "length"}
    assert (checks["n"] == 5).all()

    samples = loaded.samples.set_index("case_id")
    fingerprints = samples.groupby(level=0)["fingerprint"].agg(set)
    assert all(len(f) == 1 and len(next(iter(f))) == 12 for f in fingerprints)
    canonical = samples.loc["invoice_extract_v3", "canonical"].dropna()
    assert (canonical == '{"currency": "USD", "total_cents": 1950, "vendor": "Acme Tools"}').any()
