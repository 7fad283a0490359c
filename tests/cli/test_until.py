"""``evalnb run --until-decided A B`` and an experiment file's ``[until]`` against the
embedded stand-in: the run stops with a verdict and says so; misuse is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import evalnb
from evalnb.cli import main

SHOP = evalnb.cases.suites.path("shop.jsonl")


def many_cases(tmp_path: Path, copies: int = 40) -> Path:
    lines = [json.loads(line) for line in SHOP.read_text().splitlines() if line.strip()]
    path = tmp_path / "many.jsonl"
    with path.open("w") as out:
        for i in range(copies):
            for case in lines:
                out.write(json.dumps({**case, "id": f"{case['id']}-{i:03d}"}) + "\n")
    return path


def test_run_until_decided_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "r"
    code = main(
        [
            "run",
            str(many_cases(tmp_path)),
            "--standin",
            "--model",
            "shop-v1",
            "--variant",
            "v1",
            "--variant",
            "v2:model=shop-v2",
            "--repeats",
            "3",
            "--until-decided",
            "v1",
            "v2",
            "--alpha",
            "0.05",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    until = json.loads((out / "manifest.json").read_text())["until"]
    assert until["stopped"] == "decided" and until["rule"]["alpha"] == 0.05
    looks = len(until["looks"])
    assert f"until decided: v2 vs v1: B better after {looks} of 160 cases" in printed
    assert "(stopped: decided); 95% anytime-valid interval +" in printed


def test_an_experiment_file_gives_the_rule(tmp_path, capsys):
    experiment = tmp_path / "shop.toml"
    experiment.write_text(
        f'cases = "{many_cases(tmp_path).name}"\nrepeats = 2\n\n[target]\nstandin = true\n'
        'model = "shop-v1"\n\n[[variants]]\nname = "v1"\n\n[[variants]]\nname = "v2"\n'
        'params = { model = "shop-v2" }\n\n[until]\na = "v1"\nb = "v2"\nalpha = 0.1\n'
    )
    out = tmp_path / "r"
    code = main(["run", "--experiment", str(experiment), "--out", str(out), "--no-progress"])
    assert code == 0
    until = json.loads((out / "manifest.json").read_text())["until"]
    assert until["rule"]["alpha"] == 0.1 and until["stopped"] == "decided"
    assert "until decided: v2 vs v1: B better" in capsys.readouterr().out


def test_misuse_is_one_line_and_exit_2(tmp_path, capsys):
    cases = str(many_cases(tmp_path, 1))
    base = ["run", cases, "--standin", "--model", "shop-v1", "--out", str(tmp_path / "r")]
    assert main([*base, "--until-decided", "v1"]) == 2
    err = capsys.readouterr().err
    assert "--until-decided needs a baseline and at least one other variant" in err
    assert len(err.strip().splitlines()) == 1
    assert main([*base, "--alpha", "0.1"]) == 2
    assert "--alpha needs --until-decided A B" in capsys.readouterr().err
    variants = ["--variant", "v1", "--variant", "v2:model=shop-v2"]
    assert main([*base, *variants, "--until-decided", "v1", "v2", "--alpha", "0.9"]) == 2
    assert "'alpha' must be a number in (0, 0.5); got 0.9" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text(f'cases = "{Path(cases).name}"\n[until]\na = "v1"\nb = "v2"\nalpah = 0.1\n')
    assert main(["run", "--experiment", str(bad), "--standin", "--out", str(tmp_path / "x")]) == 2
    assert "'until.alpah' is not a field of the 'decided' rule" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not (tmp_path / "x").exists()
