import asyncio
import json

import pytest

from evalnb import Case, Completion, Function, TargetError, Variant, run, store
from evalnb.runner._session import plan


def cases(n=3):
    return [
        Case(f"c{i}", prompt=f"say {i}", checks=[{"type": "contains", "text": str(i)}])
        for i in range(n)
    ]


def echo(request):
    return request.prompt


def test_every_key_is_written_once_with_checks(tmp_path):
    result = run(
        cases(), Function(echo), variants=["a", "b"], repeats=4, out=tmp_path / "r", progress=False
    )
    samples = store.read_table(tmp_path / "r", "samples").to_pandas()
    assert len(samples) == 3 * 2 * 4
    assert not samples.duplicated(["case_id", "variant", "repeat"]).any()
    assert set(samples.status) == {"completed"}
    assert (samples.answer == samples.prompt).all()
    checks = store.read_table(tmp_path / "r", "checks").to_pandas()
    assert len(checks) == 24 and checks.outcome.all()
    assert result.counts["a"]["completed"] == 12
    assert "completed 12/12" in result.summary()


def test_alternate_order_rotates_the_first_variant_with_case_and_repeat():
    order = plan(cases(2), [Variant("a"), Variant("b")], 2)
    firsts = [(c.id, r, v.name) for c, v, r in order[::2]]
    assert firsts == [("c0", 0, "a"), ("c1", 0, "b"), ("c0", 1, "b"), ("c1", 1, "a")]


def test_shuffled_order_is_seeded():
    vs = [Variant("a"), Variant("b")]
    one = [(c.id, v.name, r) for c, v, r in plan(cases(5), vs, 3, "shuffle", seed=7)]
    two = [(c.id, v.name, r) for c, v, r in plan(cases(5), vs, 3, "shuffle", seed=7)]
    other = [(c.id, v.name, r) for c, v, r in plan(cases(5), vs, 3, "shuffle", seed=8)]
    assert one == two != other
    assert sorted(one) == sorted(other)


def test_failures_become_incomplete_samples_and_the_run_finishes(tmp_path):
    def flaky(request):
        kind = request.case.id
        if kind == "c0":
            raise RuntimeError("kaput")
        if kind == "c1":
            raise TargetError(
                "budget spent", status="budget", partial=Completion(text="", retries=2)
            )
        if kind == "c2":
            return "   "
        return Completion(text="", finish_reason="length")

    run(cases(4), Function(flaky), out=tmp_path / "r", progress=False)
    samples = store.read_table(tmp_path / "r", "samples").to_pandas().set_index("case_id")
    assert samples.status.to_dict() == {
        "c0": "error",
        "c1": "budget",
        "c2": "empty",
        "c3": "budget",
    }
    assert samples.error["c0"] == "RuntimeError: kaput"
    assert samples.retries["c1"] == 2
    checks = store.read_table(tmp_path / "r", "checks").to_pandas()
    assert not checks.outcome.any()
    assert set(checks.detail) == {
        "incomplete sample: error",
        "incomplete sample: budget",
        "incomplete sample: empty",
    }


def test_runner_timeout_marks_a_hung_sample(tmp_path):
    async def slow(request):
        await asyncio.sleep(0 if request.case.id == "c0" else 30)
        return "0"

    run(cases(2), Function(slow), out=tmp_path / "r", timeout=0.2, progress=False)
    samples = store.read_table(tmp_path / "r", "samples").to_pandas().set_index("case_id")
    assert samples.status.to_dict() == {"c0": "completed", "c1": "timeout"}


def test_resume_runs_only_missing_keys(tmp_path):
    calls = []

    def counting(request):
        calls.append((request.case.id, request.variant.name, request.repeat))
        if len(calls) > 5:
            raise KeyboardInterrupt
        return request.prompt

    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        run(
            cases(),
            Function(counting, threaded=False),
            variants=["a", "b"],
            repeats=2,
            out=out,
            progress=False,
            concurrency=1,
        )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert len(store.sample_keys(out)) == 5
    calls.clear()
    run(
        cases(),
        Function(echo),
        variants=["a", "b"],
        repeats=2,
        out=out,
        resume=True,
        progress=False,
    )
    keys = store.read_table(out, "samples", ["case_id", "variant", "repeat"]).to_pandas()
    assert len(keys) == 12 and not keys.duplicated().any()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["resumes"]) == 1


def test_resume_refuses_different_cases(tmp_path):
    out = tmp_path / "r"
    run(cases(2), Function(echo), out=out, progress=False)
    with pytest.raises(Exception, match="'cases' differs"):
        run(cases(3), Function(echo), out=out, resume=True, progress=False)


def test_run_works_inside_a_running_event_loop(tmp_path):
    async def notebook_cell():
        return run(cases(1), Function(echo), out=tmp_path / "r", progress=False)

    result = asyncio.run(notebook_cell())
    assert result.status == "complete"


def test_manifest_records_provenance(tmp_path):
    run("data/cases/shop.jsonl", Function(echo), variants=["x"], out=tmp_path / "r", progress=False)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert len(manifest["cases_file"]["sha256"]) == 64
    assert manifest["cases"][0]["id"] == "order-status"
    assert manifest["order"]["planned"][0] == ["order-status", "x", 0]
    assert manifest["target"]["type"] == "function"
    for key in ("python", "platform", "evalnb_version", "started_at", "ended_at", "git_revision"):
        assert key in manifest


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repeats": 0}, "'repeats' must be a whole number >= 1; got 0"),
        ({"concurrency": 0}, "'concurrency' must be a whole number >= 1; got 0"),
        ({"variants": ["a", "a"]}, "'variants' must have unique names; got \\['a'\\]"),
        ({"order": "random"}, "'order' must be one of"),
    ],
)
def test_bad_arguments_name_the_parameter(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        run(cases(1), Function(echo), out=tmp_path / "r", progress=False, **kwargs)
    assert not (tmp_path / "r").exists()


def test_checks_given_to_every_case_need_names_of_their_own(tmp_path):
    extra = [{"type": "contains", "text": "say"}]
    with pytest.raises(ValueError) as info:
        run(cases(), Function(echo), checks=extra, out=tmp_path / "r", progress=False)
    assert str(info.value) == (
        "case 'c0' has a check named 'contains' already, and the checks given to every case "
        "add another; give the added one a 'name'"
    )
    assert not (tmp_path / "r").exists()
    run(
        cases(),
        Function(echo),
        checks=[{**extra[0], "name": "says"}],
        out=tmp_path / "r",
        progress=False,
    )
    checks = store.read_table(tmp_path / "r", "checks").to_pandas()
    assert sorted(checks.check.unique()) == ["contains", "says"] and checks.outcome.all()
    with pytest.raises(ValueError, match="'defaults' apply to a cases file as it is read"):
        run(cases(), Function(echo), defaults={"tags": ["x"]}, out=tmp_path / "d")
