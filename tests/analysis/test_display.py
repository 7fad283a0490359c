"""Results read themselves in a notebook (verdict first) and stay tidy frames for code."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalnb.analysis import compare, gate, load
from evalnb.analysis._display import Result
from tests.builders import write_run


def run(tmp_path: Path) -> Path:
    rows = [
        {
            "case_id": f"c{c}",
            "variant": variant,
            "repeat": r,
            "answer": "costs $5 and $6",
            "checks": {"ok": variant == "v2" or r == 0},
        }
        for c in range(12)
        for variant in ("v1", "v2")
        for r in range(3)
    ]
    return write_run(tmp_path / "run", rows)


def test_compare_shows_its_verdict_first_and_keeps_its_columns(tmp_path: Path) -> None:
    result = compare(load(run(tmp_path)), a="v1", b="v2")
    assert isinstance(result, Result) and isinstance(result, pd.DataFrame)
    assert {"verdict", "diff", "p_adjusted", "cases", "method"} <= set(result.columns)
    shown = result._repr_html_()
    first = shown.index("v2 better")
    assert first < shown.index("<table")  # the verdict before the frame
    assert "+66.7 pp" in shown and "p &lt; 0.001" in shown and "12 paired cases" in shown
    assert "tex2jax_ignore" in shown
    assert type(result[["verdict"]]) is pd.DataFrame  # derived frames are plain


def test_gate_has_one_overall_line(tmp_path: Path) -> None:
    result = gate(load(run(tmp_path)), policy={"min_rate": 0.9})
    shown = result._repr_html_()
    failed = int((~result["passed"]).sum())
    assert failed >= 1 and f"FAIL</b>: {failed} of {len(result)} rules failed" in shown
    assert shown.index("FAIL") < shown.index("<table")


def test_displayed_frames_keep_dollar_signs_from_mathjax(tmp_path):
    # Model text with two $ signs is typeset as maths by Jupyter unless marked.
    from evalnb.analysis import _display as display
    from evalnb.analysis import agreement, load, rates
    from tests.builders import write_run

    rows = [
        {
            "case_id": "costs $5 and $10",
            "variant": v,
            "repeat": r,
            "answer": "$5 or $10",
            "checks": {"c": r == 0},
        }
        for v in ("a", "b")
        for r in range(2)
    ]
    run = load(write_run(tmp_path / "run", rows))
    for shown in (run, rates(run, by=["case_id"]), agreement(run)):
        html = shown._repr_html_()
        assert display.NO_MATH.split()[0] in html.split(">")[0], type(shown)
        assert shown is run or "$5" in html
    # a frame derived by the user is a plain DataFrame again
    assert type(rates(run)[["k", "n"]]) is pd.DataFrame


def test_a_slice_of_an_evalnb_frame_is_kept_from_mathjax_in_a_kernel(tmp_path: Path) -> None:
    # notebook 05's agree[["case_id", "mode_2"]]: a plain DataFrame, shown by IPython itself.
    import nbformat
    from nbclient import NotebookClient

    rows = [
        {
            "case_id": "receipt",
            "variant": "v1",
            "repeat": r,
            "answer": "$12.36 ... $19.50",
            "checks": {"c": True},
        }
        for r in range(3)
    ]
    path = write_run(tmp_path / "run", rows)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(f"import evalnb\nrun = evalnb.load({str(path)!r})"),
        nbformat.v4.new_code_cell('run.samples[["case_id", "answer"]]'),
        nbformat.v4.new_code_cell('evalnb.agreement(run)[["case_id", "mode_1"]]'),
        nbformat.v4.new_code_cell('import pandas as pd\npd.DataFrame({"price": ["$1 and $2"]})'),
    ]
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    shown = [c.outputs[0]["data"]["text/html"] for c in notebook.cells[1:]]
    for html in shown[:2]:
        assert html.startswith("<div class='tex2jax_ignore mathjax_ignore'>"), html[:80]
        assert "$12.36 ... $19.50" in html
    # a frame of the user's own, with none of evalnb's columns, is pandas' display unchanged
    assert not shown[2].startswith("<div class='tex2jax_ignore")
