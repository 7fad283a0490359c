"""``evalnb run --until best[...]`` and ``--repeats settled[...]`` against the embedded
stand-in: the race and the settled repeats run, the manifest records each rule as the flag
gave it, the run says how the race ended; a bad value is one line naming the flag, exit 2,
and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalnb
from evalnb.cli import main
from evalnb.standin._shop import SLIP_RATES

SHOP = evalnb.cases.suites.path("shop.jsonl")
VARIANTS = [a for name in SLIP_RATES for a in ("--variant", f"{name[5:]}:model={name}")]


def cases_file(tmp_path: Path, copies: int) -> Path:
    """The shop suite copied ``copies`` times, each copy of a case its own group."""
    lines = [json.loads(line) for line in SHOP.read_text().splitlines() if line.strip()]
    path = tmp_path / "many.jsonl"
    with path.open("w") as out:
        for i in range(copies):
            for case in lines:
                name = f"{case['id']}-{i:03d}"
                out.write(json.dumps({**case, "id": name, "group": name}) + "\n")
    return path


def _run(tmp_path: Path, *flags: str, copies: int = 30) -> int:
    cases = str(cases_file(tmp_path, copies))
    out = str(tmp_path / "r")
    return main(["run", cases, "--standin", "--model", "shop-v1", *flags, "--out", out])


def test_an_eight_variant_race_from_the_command_line(tmp_path, capsys):
    code = _run(
        tmp_path, *VARIANTS, "--repeats", "2", "--until", "best:delta=0.05", "--no-progress"
    )
    printed = capsys.readouterr().out
    assert code == 0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    until = manifest["until"]
    assert until["rule"]["rule"] == "best" and until["rule"]["delta"] == 0.05
    assert until["rule"]["eps"] == 0.0 and until["stopped"] == "decided"
    assert until["looks"][-1]["alive"] == ["v2"] and len(until["eliminations"]) == 7
    assert "--until" in manifest["command"] and "best:delta=0.05" in manifest["command"]
    looked = until["looks"][-1]["cases"]
    assert f"race: v2 is best after {looked} of {len(until['order'])} cases" in printed
    first = until["eliminations"][0]
    assert f"{first['variant']} after {first['look']} (by {first['by']})" in printed


def test_repeats_until_settled_from_the_command_line(tmp_path, capsys):
    flags = ["--variant", "v1", "--variant", "v2:model=shop-v2"]
    settled = ["--repeats", "settled:max=8,alpha=0.1", "--concurrency", "1"]
    code = _run(tmp_path, *flags, *settled, "--no-progress", copies=10)
    capsys.readouterr()
    assert code == 0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    rule = manifest["repeats_rule"]
    assert (rule["rule"], rule["max"], rule["alpha"], rule["tol"]) == ("settled", 8, 0.1, 0.5)
    assert manifest["repeats"] == 8 and "until" not in manifest
    samples = evalnb.load(tmp_path / "r").samples
    per = samples.groupby(["case_id", "variant"], observed=True).size()
    # one sample at a time: a stable case stops at 5 identical draws (0.5 ** 5 <= 0.1 / 2),
    # a flaky one at its first disagreement
    assert per.max() <= 5 and per.min() >= 2 and len(samples) < 8 * len(per)
    flaky = evalnb.flakiness(evalnb.load(tmp_path / "r"))
    assert set(flaky["verdict"]) <= {"stable-pass", "stable-fail", "flaky"}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--until", "fastest"], "--until must be best[:eps=...,delta=...,check=...]; got"),
        (["--until", "best:delta=2"], "--until best: 'delta' must be a number in (0, 0.5)"),
        (["--until", "best:eps=x"], "--until best: 'eps' must be a number; got 'x'"),
        (["--until", "best:eta=1"], "--until best: settings are eps, delta, check as KEY=VALUE"),
        (["--until", "best:eps=0.1,eps=0.2"], "--until best: 'eps' is given twice"),
        (["--until", "best", "--alpha", "0.1"], "--alpha is a setting of --until-decided"),
        (["--until", "best", "--until-decided", "v1", "v2"], "--until and --until-decided"),
        (["--repeats", "three"], "--repeats must be a whole number or settled[:max=N"),
        (["--repeats", "settled:max=1"], "--repeats settled: 'max' must be a whole number >= 2"),
        (["--repeats", "settled:max=2.5"], "--repeats settled: 'max' must be a whole number"),
        (["--repeats", "settled:alpha=0.7"], "--repeats settled: 'alpha' must be a number in"),
        (["--repeats", "settled:"], "--repeats must be settled[:max=...,alpha=...,tol=...]"),
        (["--until", "best", "--repeats", "settled"], "'repeats' as a rule and 'until' both"),
    ],
)
def test_a_bad_rule_flag_is_one_line_and_exit_2(tmp_path, capsys, flags, message):
    two = ["--variant", "v1", "--variant", "v2:model=shop-v2"]
    assert _run(tmp_path, *two, *flags, copies=1) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_a_race_of_one_variant_is_refused(tmp_path, capsys):
    assert _run(tmp_path, "--until", "best", copies=1) == 2
    err = capsys.readouterr().err
    assert "--until best races two or more variants (--variant NAME...); the run has 1" in err
    assert not (tmp_path / "r").exists()
