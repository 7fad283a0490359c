"""An evalnb error in IPython reads as its one line; the full chain is there on request."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

import evalnb
from evalnb import EvalnbError


@pytest.fixture
def shell() -> InteractiveShell:
    return InteractiveShell.instance()


def test_an_evalnb_error_shows_one_line_and_the_chain_on_request(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    code = (
        "from evalnb import StoreError\n"
        "def deep():\n"
        "    try:\n"
        "        raise OSError('disk full')\n"
        "    except OSError as exc:\n"
        "        raise StoreError('runs/x: cannot write; free some space') from exc\n"
        "deep()\n"
    )
    shell.run_cell(code)
    shown = capsys.readouterr()
    lines = [line for line in (shown.out + shown.err).splitlines() if line.strip()]
    assert len(lines) == 1
    assert "StoreError" in lines[0] and "runs/x: cannot write; free some space" in lines[0]

    evalnb.full_traceback()
    full = capsys.readouterr().out
    assert "OSError: disk full" in full and "direct cause" in full and "deep()" in full


def test_the_full_traceback_can_be_the_default(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(EvalnbError, "short_traceback", False)
    shell.run_cell("from evalnb import CasesError\nraise CasesError('cases.jsonl:3: bad')")
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "Traceback" in text and "cases.jsonl:3: bad" in text
