"""One sample that cannot be stored never fails the flush of the others: it is stored as a
``malformed`` sample naming the field, its applicable checks failed, and every other sample
of the batch is written as given."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

import evalnb
from evalnb import store
from evalnb._types import CheckResult, Completion
from evalnb.store import RunWriter, create_run_dir
from tests.builders import sample


def _batch(n: int):
    samples = [dataclasses.replace(sample(f"answer {i}"), repeat=i, order=i) for i in range(n)]
    checks = [
        (s, CheckResult("contains", "contains", True, "found", "answer", None)) for s in samples
    ] + [(s, CheckResult("applies-not", "contains", None, "not applicable")) for s in samples]
    return samples, checks


def test_one_bad_sample_is_stored_as_malformed_and_the_others_as_given(tmp_path):
    run = tmp_path / "run"
    create_run_dir(run)
    samples, checks = _batch(80)
    samples[17] = dataclasses.replace(samples[17], prompt_tokens="lots")  # type: ignore[arg-type]
    checks = [(samples[17] if s.repeat == 17 else s, r) for s, r in checks]

    stored, results = RunWriter(run).write(samples, checks)

    frame = store.read_table(run, "samples").to_pandas().set_index("repeat").sort_index()
    assert len(frame) == 80 and len(stored) == 80
    assert frame.drop(index=17)["status"].eq("completed").all()
    assert frame.drop(index=17)["answer"].tolist() == [f"answer {i}" for i in range(80) if i != 17]
    bad = frame.loc[17]
    assert bad["status"] == "malformed"
    assert pd.isna(bad["answer"]) and bad["prompt"] == "p"
    assert "'prompt_tokens'" in bad["error"] and "str" in bad["error"]

    outcomes = store.read_table(run, "checks").to_pandas()
    assert len(outcomes) == 160
    mine = outcomes[outcomes["repeat"] == 17].set_index("check")
    assert mine.loc["contains", "outcome"] == False  # noqa: E712  (False, not null)
    assert mine.loc["contains", "detail"] == "incomplete sample: malformed"
    assert pd.isna(mine.loc["applies-not", "outcome"])  # unscored stays unscored
    others = outcomes[(outcomes["repeat"] != 17) & (outcomes["check"] == "contains")]
    assert others["outcome"].eq(True).all() and len(others) == 79
    assert [s.status for s in stored].count("malformed") == 1
    assert len(results) == 160


def test_a_bad_check_result_fails_alone(tmp_path):
    run = tmp_path / "run"
    create_run_dir(run)
    samples, checks = _batch(5)
    checks[2] = (checks[2][0], CheckResult("graded", "judge", True, "ok", None, "high"))  # type: ignore[arg-type]
    RunWriter(run).write(samples, checks)
    outcomes = store.read_table(run, "checks").to_pandas()
    assert len(outcomes) == 10
    broken = outcomes[(outcomes["repeat"] == 2) & (outcomes["check"] == "graded")].iloc[0]
    assert broken["outcome"] == False  # noqa: E712
    assert broken["detail"].startswith("check result could not be stored: field 'score'")
    assert outcomes.drop(broken.name)["outcome"].isin([True, None]).all()


def test_a_sample_whose_key_cannot_be_stored_is_left_out_with_a_warning(tmp_path):
    run = tmp_path / "run"
    create_run_dir(run)
    samples, checks = _batch(3)
    samples[1] = dataclasses.replace(samples[1], case_id=7)  # type: ignore[arg-type]
    checks = [(samples[1] if s.repeat == 1 else s, r) for s, r in checks]
    with pytest.warns(RuntimeWarning, match=r"not stored \(a resume asks it again\).*case_id"):
        stored, results = RunWriter(run).write(samples, checks)
    assert sorted(store.read_table(run, "samples").to_pandas()["repeat"]) == [0, 2]
    assert len(stored) == 2 and len(results) == 4


def test_a_run_with_one_unstorable_answer_completes_and_saves_the_rest(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(json.dumps({"id": f"c{i}", "prompt": f"say {i}"}) + "\n" for i in range(20))
    )

    def answer(request):
        if request.case.id == "c7" and request.repeat == 2:
            return Completion(text="ok", prompt_tokens="lots")  # type: ignore[arg-type]
        return Completion(text=f"ok {request.prompt}", prompt_tokens=3)

    out = tmp_path / "run"
    result = evalnb.run(cases, evalnb.Function(answer), repeats=4, out=out, progress=False)
    assert store.read_manifest(out)["status"] == "complete"
    # the summary counts what was stored: the malformed sample is not a completed one
    [row] = result.rows()
    assert (row["completed"], row["total"], row["incomplete"]) == (79, 80, {"malformed": 1})
    frame = store.read_table(out, "samples").to_pandas()
    assert len(frame) == 80
    bad = frame[frame["status"] != "completed"]
    assert bad[["case_id", "repeat", "status"]].values.tolist() == [["c7", 2, "malformed"]]
    assert "'prompt_tokens'" in bad["error"].iloc[0]
