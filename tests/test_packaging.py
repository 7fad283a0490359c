"""The built wheel, installed into a fresh virtualenv outside the checkout, runs its own
demo and its packaged suites from an empty folder: nothing reads the source tree."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from evalnb._exceptions import CasesError
from evalnb.cases import suites

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a new virtualenv holding only the wheel and its dependencies."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
        check=True,
        cwd=base,
    )
    (wheel,) = dist.glob("evalnb-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "evalnb/cases/suites/shop.jsonl" in names
    assert "evalnb/cases/suites/shop.toml" in names
    assert {"evalnb/cases/suites/quiz.jsonl", "evalnb/cases/suites/quiz.toml"} <= set(names)
    # the widgets' pages: the review panel's keys and the explorer's view, no build step
    assert {"evalnb/review/keys.js", "evalnb/explorer/explore.js"} <= set(names)
    assert {"evalnb/explorer/explore.css", "evalnb/explorer/saved.js"} <= set(names)
    # the stubs the lazy packages read their public names from
    assert {"evalnb/__init__.pyi", "evalnb/analysis/__init__.pyi"} <= set(names)
    assert not [n for n in names if n.startswith(("data/", "tests/"))]
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        cwd=base,
    )
    return bin_dir


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _evalnb(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "evalnb"), *args],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.timeout(900)
def test_installed_wheel_imports_from_site_packages(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run(
        [str(installed / "python"), "-c", "import evalnb; print(evalnb.__file__)"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "site-packages" in where
    assert not Path(where).is_relative_to(ROOT)


@pytest.mark.timeout(900)
def test_installed_wheel_runs_the_demo_from_an_empty_folder(
    installed: Path, tmp_path: Path
) -> None:
    done = _evalnb(installed, tmp_path, "demo", "--repeats", "3", "--no-progress", "--out", "d")
    assert done.returncode == 0, done.stderr
    assert "Paired comparison, 3 repeats a case: v2 better · " in done.stdout
    assert re.search(
        r" and p (=|<) 0\.\d{3} \(paired t across cases\); .*; 40 paired cases", done.stdout
    )
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert len(manifest["cases"]) == 40


@pytest.mark.timeout(900)
def test_installed_wheel_runs_packaged_cases_and_experiment(
    installed: Path, tmp_path: Path
) -> None:
    done = _evalnb(
        installed,
        tmp_path,
        "run",
        "builtin:shop",
        "--standin",
        "--model",
        "shop-v2",
        "--repeats",
        "2",
        "--no-progress",
        "--out",
        "cases-run",
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "cases-run" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["cases_file"]["sha256"] == suites_sha("shop.jsonl")

    done = _evalnb(
        installed,
        tmp_path,
        "run",
        "--experiment",
        "builtin:shop",
        "--repeats",
        "2",
        "--no-progress",
        "--out",
        "exp-run",
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "exp-run" / "manifest.json").read_text())
    assert [v["name"] for v in manifest["variants"]] == ["v1", "v2"]
    assert sorted(os.listdir(tmp_path)) == ["cases-run", "exp-run"]


def suites_sha(name: str) -> str:
    return hashlib.sha256(suites.path(name).read_bytes()).hexdigest()


def test_unknown_packaged_suite_is_one_line_naming_what_ships(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalnb.cli", "run", "builtin:nope", "--standin"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "builtin:nope" in lines[0] and "shop.jsonl" in lines[0]


def test_packaged_suite_paths() -> None:
    assert suites.resolve("builtin:shop", ".jsonl") == suites.path("shop.jsonl")
    assert suites.resolve("builtin:shop", ".toml").name == "shop.toml"
    assert suites.resolve("data/cases/shop.jsonl", ".jsonl") == Path("data/cases/shop.jsonl")
    assert "shop" in suites.names(".jsonl")
    with pytest.raises(CasesError, match="builtin:"):
        suites.resolve("builtin:../cases", ".jsonl")
