"""A YAML cases file is read in one pass (libyaml where PyYAML has it) and keeps its caps: an
alias bomb or a recursive alias is one located line before anything runs, and every case
is still placed by its line."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

import evalnb
from evalnb import CasesError
from evalnb.cases import load_cases
from evalnb.cases._files import YAML_NODES


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append("cases:")
    lines.append(f"  - {{id: boom, prompt: hi, vars: {{x: *a{levels - 1}}}}}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_one_line_within_bounded_time_and_memory(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(_bomb())
    script = (
        "import pathlib, sys\n"
        "from evalnb.cases import load_cases\n"
        "try:\n"
        "    load_cases(sys.argv[1])\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        # The peak of this interpreter's own memory (VmHWM): ru_maxrss would also count the
        # pytest worker's memory at the fork, which Linux keeps across exec.
        "status = pathlib.Path('/proc/self/status').read_text().splitlines()\n"
        "print(next(int(l.split()[1]) for l in status if l.startswith('VmHWM:')) // 1024)\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60
    )
    assert time.monotonic() - started < 10
    message, peak = done.stdout.splitlines()
    assert message == (
        f"CasesError {path}: its aliases expand it past {YAML_NODES:,} YAML nodes (the larger "
        f"of {YAML_NODES:,} and the file's size in characters); write the repeated parts out, "
        "or use 'defaults'"
    )
    assert int(peak) < 512
    out = tmp_path / "run"
    with pytest.raises(CasesError, match="expand it past"):
        evalnb.run(path, evalnb.Function(lambda r: "x"), out=out, progress=False)
    assert not out.exists()  # nothing written


def test_a_recursive_alias_and_a_bad_date_are_located(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text("cases:\n  - &me {id: a, prompt: hi, vars: {self: *me}}\n")
    with pytest.raises(CasesError, match=r"cases\.yaml:2: an alias refers to a node that holds it"):
        load_cases(path)
    path.write_text("cases:\n  - {id: a, prompt: hi, metadata: {when: 2024-13-45}}\n")
    with pytest.raises(CasesError, match=r"cases\.yaml: not valid YAML \(month must be in 1\.\.12"):
        load_cases(path)
    path.write_text("cases:\n  - {id: a, prompt: [unclosed\n")
    with pytest.raises(CasesError, match=r"cases\.yaml:3: not valid YAML"):
        load_cases(path)


def test_aliases_within_the_budget_and_lines_still_read(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(
        "defaults:\n  tags: [shared]\n"
        "  metadata: &common {city: Paris}\n"
        "cases:\n"
        "  - {id: a, prompt: hi, vars: *common}\n"
        "\n"
        "  - id: b\n"
        "    prompt: hello\n"
        "    vars: *common\n"
        "  - {id: b, prompt: again}\n"
    )
    with pytest.raises(
        CasesError,
        match=r"cases\.yaml:10: 'id' must be unique; got 'b' again "
        r"\(first at .*cases\.yaml:7\)",
    ):
        load_cases(path)
    path.write_text(path.read_text().replace("{id: b, prompt: again}", "{id: c, prompt: more}"))
    cases = load_cases(path)
    assert [c.id for c in cases] == ["a", "b", "c"]
    assert dict(cases[1].vars) == {"city": "Paris"} and cases[0].tags == ("shared",)


def test_a_long_file_may_expand_to_its_own_size(tmp_path, monkeypatch):
    import evalnb.cases._files as files

    monkeypatch.setattr(files, "YAML_NODES", 50)
    path = tmp_path / "cases.yaml"
    shared = "  metadata: &m {a: 1, b: 2, c: 3}\n"
    rows = "".join(f"  - {{id: c{i}, prompt: p, vars: *m}}\n" for i in range(30))
    path.write_text(f"defaults:\n{shared}cases:\n{rows}")
    # About 250 nodes written out, past the 50 set here, within the file's 1,100 characters.
    assert len(load_cases(path)) == 30
    path.write_text(_bomb(4))
    with pytest.raises(CasesError, match=r"expand it past 284 YAML nodes \(the larger of 50 "):
        load_cases(path)
