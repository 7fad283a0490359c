"""A run's design is one typed value: built from keywords, an experiment file (flags over
it) or a manifest; it round-trips through the manifest for every keyword, and an experiment
file's wrong-typed key is one located line."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalnb
from evalnb import ArgumentError, Case, Decided, Function, Variant
from evalnb.cases import JudgeSpec, RunDesign, load_experiment
from evalnb.cli import main
from evalnb.integrations import experiment_design
from evalnb.store import read_manifest

CASES = [
    Case("c1", prompt="say one", checks=[{"type": "contains", "text": "one"}]),
    Case("c2", prompt="say two", target="two", checks=[{"type": "contains", "text": "two"}]),
    Case("c3", prompt="say {{n}}", vars={"n": "three"}),
]
_FOLDER = Path(tempfile.mkdtemp(prefix="evalnb-design-"))
CASES_FILE = _FOLDER / "cases.jsonl"
CASES_FILE.write_text(
    "\n".join(json.dumps({"id": f"f{i}", "prompt": f"say {i}"}) for i in range(3)) + "\n"
)

names = st.text("abcdefghij", min_size=1, max_size=6)
numbers = st.floats(0.01, 1000, allow_nan=False, allow_infinity=False)


@st.composite
def designs(draw: st.DrawFn) -> RunDesign:
    """A design drawn over every keyword of :meth:`RunDesign.build`."""
    variant_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    variants = [
        Variant(
            name,
            prefix=draw(st.none() | st.just("Be brief.")),
            system=draw(st.none() | st.just("You help.")),
            params=draw(st.sampled_from([{}, {"temperature": 0.5}, {"model": "m2"}])),
        )
        for name in variant_names
    ]
    from_file = draw(st.booleans())
    max_cost = draw(st.none() | numbers)
    prices = draw(st.none() | st.just({"m": (1.0, 2.0)})) if max_cost is None else {"m": (1, 2)}
    until = None
    if len(variant_names) > 1 and draw(st.booleans()):
        until = Decided(
            a=variant_names[0],
            b=variant_names[1:],
            alpha=draw(st.sampled_from([0.01, 0.05, 0.1])),
            margin=draw(st.none() | st.just(0.05)),
        )
    return RunDesign.build(
        str(CASES_FILE) if from_file else CASES,
        variants=variants,
        repeats=draw(st.integers(1, 50)),
        order="alternate" if until else draw(st.sampled_from(["alternate", "shuffle"])),
        seed=draw(st.integers(0, 2**31)),
        checks=draw(st.sampled_from([(), ({"type": "word_count", "max": 50},)])),
        defaults=draw(st.none() | st.just({"tags": ["t"]})) if from_file else None,
        judge=draw(
            st.none() | st.builds(JudgeSpec, names, st.none() | st.just("http://127.0.0.1:9/v1"))
        ),
        until=until,
        max_cost=max_cost,
        max_tokens=draw(st.none() | st.integers(1, 10**7)),
        prices=prices,
        concurrency=draw(st.integers(1, 64)),
        timeout=draw(st.none() | numbers),
        cache=draw(st.none() | st.just(str(_FOLDER / "cache"))),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(designs())
def test_a_design_round_trips_through_the_manifest_for_every_keyword(design: RunDesign) -> None:
    recorded = json.loads(json.dumps(design.to_manifest()))  # as the file on disk holds it
    back = RunDesign.from_manifest(recorded)
    assert back.to_manifest() == design.to_manifest()
    assert [c.to_dict() for c in back.cases] == [c.to_dict() for c in design.cases]
    for field in (
        "variants",
        "repeats",
        "order",
        "seed",
        "defaults",
        "judge",
        "max_cost",
        "max_tokens",
        "concurrency",
        "timeout",
        "cache",
    ):
        assert getattr(back, field) == getattr(design, field), field
    assert [c.spec for c in back.checks] == [c.spec for c in design.checks]
    assert (back.until and back.until.describe()) == (design.until and design.until.describe())
    assert dict(back.prices or {}) == dict(design.prices or {})


def test_a_design_is_frozen_and_checked_once_as_it_is_built() -> None:
    design = RunDesign.build(CASES, variants=["a", "b"], repeats=3)
    with pytest.raises(AttributeError):
        design.repeats = 4  # type: ignore[misc]
    for keywords, message in [
        ({"repeats": 0}, "'repeats' must be a whole number >= 1; got 0"),
        ({"order": "zigzag"}, "'order' must be one of"),
        ({"seed": -1}, "'seed' must be a whole number >= 0"),
        ({"timeout": "soon"}, "'timeout' must be a number > 0; got 'soon'"),
        ({"max_cost": 1.0}, "'max_cost' needs 'prices'"),
        ({"judge": {"model": ""}}, "'judge.model' must be a non-empty string"),
    ]:
        with pytest.raises(ArgumentError, match=message.replace("(", r"\(")):
            RunDesign.build(CASES, **keywords)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'cases' must be a cases file's path or Case objects"):
        RunDesign.build(5)  # type: ignore[arg-type]


def test_run_takes_a_design_or_its_keywords_but_not_both(tmp_path: Path) -> None:
    design = RunDesign.build(CASES, variants=["a"], repeats=2)
    target = Function(lambda request: "one two three")
    result = evalnb.run(design, target, out=tmp_path / "r", progress=False)
    assert result.counts["a"]["completed"] == 6
    assert RunDesign.from_manifest(read_manifest(result.path)).to_manifest() == (
        design.to_manifest()
    )
    with pytest.raises(ArgumentError, match=r"not both; got the design and \['repeats'\]"):
        evalnb.run(design, target, repeats=3, out=tmp_path / "s", progress=False)
    assert not (tmp_path / "s").exists()


EXPERIMENT = """\
cases = "{cases}"
repeats = 2
seed = 3

[target]
standin = true
model = "shop-v1"

[[variants]]
name = "v1"

[[variants]]
name = "v2"
params = {{ model = "shop-v2" }}

[judge]
model = "judge"

[defaults]
checks = [{{ type = "judge", rubric = "The reply is polite." }}]

[until]
a = "v1"
b = "v2"
alpha = 0.1
"""


def _experiment(folder: Path) -> Path:
    shop = Path(__file__).resolve().parents[2] / "data" / "cases" / "shop.jsonl"
    path = folder / "experiment.toml"
    path.write_text(EXPERIMENT.format(cases=shop))
    return path


def _design_keys(manifest: dict) -> dict:
    """The manifest's design, as a resume rebuilds it."""
    return RunDesign.from_manifest(manifest).to_manifest()


def test_run_experiment_and_the_cli_build_one_design_judge_defaults_and_until_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _experiment(tmp_path)
    out = tmp_path / "cli"
    assert main(["run", "--experiment", str(experiment), "--out", str(out), "--no-progress"]) == 0
    manifest = read_manifest(out)
    # What run_experiment runs: the same file through the same path, repeats as given.
    design, options = experiment_design(load_experiment(experiment), None, {"progress": False})
    assert options == {"progress": False}
    assert _design_keys(manifest) == design.to_manifest()
    assert manifest["judge"]["spec"] == {"model": "judge"} and manifest["judge"]["calls"] > 0
    assert manifest["until"]["rule"]["alpha"] == 0.1 and manifest["until"]["looks"]
    assert manifest["cases_file"]["defaults"]["checks"][0]["type"] == "judge"
    assert design.judge == JudgeSpec("judge") and design.until is not None
    assert "judge" in {c.type for c in design.cases[0].checks}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cases = 5\n", "'cases' must be a path (a string); got 5"),
        ('cases = "x.jsonl"\nrepeats = "x"\n', "'repeats' must be a whole number >= 1; got 'x'"),
        ('cases = "x.jsonl"\nconcurrency = 0\n', "'concurrency' must be a whole number >= 1"),
        ('cases = "x.jsonl"\norder = 3\n', "'order' must be one of ('alternate', 'shuffle')"),
        ('cases = "x.jsonl"\ntimeout = "1s"\n', "'timeout' must be a number > 0; got '1s'"),
        ('cases = "x.jsonl"\n[judge]\nmodel = 5\n', "'judge.model' must be a non-empty string"),
        (
            'cases = "x.jsonl"\n[until]\na = "v1"\nb = "v2"\nalpha = "high"\n',
            "[until]: 'alpha' must be a number in (0, 0.5); got 'high'",
        ),
        (
            'cases = "x.jsonl"\n[until]\nrule = "fastest"\n',
            "'until.rule' must be one of 'decided', 'best'; got 'fastest'",
        ),
        (
            'cases = "x.jsonl"\n[until]\nrule = "best"\na = "v1"\n',
            "'until.a' is not a field of the 'best' rule (fields: rule, variants, eps",
        ),
        (
            'cases = "x.jsonl"\nrepeats = { rule = "settled" }\n',
            "'repeats.max' is required (the most repeats a case may draw)",
        ),
        (
            'cases = "x.jsonl"\nrepeats = { rule = "settled", max = 10, bound = 2 }\n',
            "'repeats.bound' is not a field of the 'settled' rule (fields: rule, max, alpha, tol)",
        ),
    ],
)
def test_a_wrong_typed_experiment_key_is_one_located_line_and_exit_2(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "evalnb.cli", "run", "--experiment", str(path), "--standin"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(path) in lines[0] and message in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()


RACE = """\
cases = "{cases}"
repeats = {repeats}
seed = 5

[target]
standin = true
model = "shop-v1"

[[variants]]
name = "v1"

[[variants]]
name = "v2"
params = {{ model = "shop-v2" }}
{until}"""


def test_an_experiment_file_races_to_the_best_or_settles_repeats(tmp_path: Path) -> None:
    shop = Path(__file__).resolve().parents[2] / "data" / "cases" / "shop.jsonl"
    raced = tmp_path / "race.toml"
    until = '\n[until]\nrule = "best"\ndelta = 0.1\n'
    raced.write_text(RACE.format(cases=shop, repeats=2, until=until))
    design = load_experiment(raced).design()
    assert design.until is not None and design.until.describe()["rule"] == "best"
    assert design.until.describe()["delta"] == 0.1
    out = tmp_path / "r1"
    assert main(["run", "--experiment", str(raced), "--out", str(out), "--no-progress"]) == 0
    assert read_manifest(out)["until"]["rule"]["rule"] == "best"

    settled = tmp_path / "settled.toml"
    settled.write_text(RACE.format(cases=shop, repeats='{ rule = "settled", max = 4 }', until=""))
    design = load_experiment(settled).design()
    assert isinstance(design.repeats, evalnb.UntilSettled) and design.repeats.max == 4
    out = tmp_path / "r2"
    assert main(["run", "--experiment", str(settled), "--out", str(out), "--no-progress"]) == 0
    samples = evalnb.load(out).samples
    assert samples.groupby(["case_id", "variant"]).size().max() <= 4
