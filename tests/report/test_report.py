"""The run report: text and self-contained HTML with the same sections, never raw answers."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from evalnb.analysis import load
from evalnb.cli._analyse import add_report_arguments, report_command
from evalnb.report import Report, render_report, report_html, report_markdown, report_text
from evalnb.report._render import FIGURE_CASES
from tests.builders import counts_rows, write_run


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = counts_rows({"v1": [8, 7, 8, 10], "v2": [9, 10, 10, 10]}, 10)
    rows[0] |= {"status": "timeout", "checks": {"ok": False}}
    cases = [{"id": "case-00", "split": "heldout"}, *({"id": f"case-0{i}"} for i in (1, 2, 3))]
    cases.append({"id": "<b>odd</b>"})
    rows += [
        {"case_id": "<b>odd</b>", "variant": v, "repeat": r, "checks": {"ok": True}}
        for v in ("v1", "v2")
        for r in range(10)
    ]
    return write_run(tmp_path_factory.mktemp("report") / "shop", rows, cases=cases)


def test_text_report_has_every_section_and_no_answers(shop: Path) -> None:
    text = report_text(load(shop))
    for title in (
        "Samples",
        "Suite rate, check 'all'",
        "Checks by variant",
        "Per case, check 'all'",
        "Comparison with v1, check 'all'",
        "Cases that moved most",
        "Latency",
    ):
        assert f"\n{title}\n" in text
    assert "SECRET ANSWER" not in text and "question" not in text
    assert "can't tell yet" in text
    assert "pooled over cases" in text  # the pooled intervals say what they assume
    assert "heldout" in text  # dev and held-out cases are reported apart
    assert " 7/10 0.70 (0.40 to 0.89)" in text  # Wilson 95% for 7/10


def test_html_report_is_self_contained_and_escaped(shop: Path) -> None:
    page = report_html(load(shop), baseline="v2")
    assert page.startswith("<!DOCTYPE html>") and "<table" in page
    assert "<script" not in page and "http" not in page and "<link" not in page
    assert "<b>odd</b>" not in page and "&lt;b&gt;odd&lt;/b&gt;" in page
    assert "Comparison with v2" in page
    assert "SECRET ANSWER" not in page


def run_cli(*argv: str) -> tuple[int, str, str]:
    parser = add_report_arguments(argparse.ArgumentParser(prog="evalnb report"))
    out, err = io.StringIO(), io.StringIO()
    code = report_command(parser.parse_args(list(argv)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_report_command_writes_html_too(shop: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    code, out, err = run_cli(str(shop), "--html", str(target))
    assert code == 0 and out.startswith("evalnb report: shop (complete)")
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert str(target) in err


def test_report_command_usage_errors(shop: Path, tmp_path: Path) -> None:
    code, _, err = run_cli(str(tmp_path / "nowhere"))
    assert code == 2 and "not a run directory" in err
    code, _, err = run_cli(str(shop), "--baseline", "v9")
    assert code == 2 and "'baseline' must be one of 'v1', 'v2'; got 'v9'" in err
    code, _, err = run_cli(str(shop), "--check", "nope")
    assert code == 2 and "'check' must be one of 'all', 'ok'; got 'nope'" in err


def test_per_case_figures_draw_the_cases_to_look_at_first(tmp_path: Path) -> None:
    passes = {"v1": [i % 11 for i in range(30)], "v2": [10 - i % 11 for i in range(30)]}
    run = load(write_run(tmp_path / "many", counts_rows(passes, 10)))
    text = report_text(run)
    assert f"the figures show the {FIGURE_CASES} cases with the lowest pass rates" in text
    assert f"the figures mark the {FIGURE_CASES} cases that moved most" in text
    assert "case-29" in text  # the table still lists every case
    assert report_html(run).count("<img class='plot'") == 4


def test_a_small_run_draws_every_case(shop: Path) -> None:
    assert "the figures" not in report_text(load(shop))


def test_dollar_signs_in_ids_are_text_not_maths(tmp_path: Path) -> None:
    """A case id or variant with two ``$`` once stopped the page (invalid mathtext)."""
    import matplotlib.pyplot as plt

    from evalnb.analysis import rates
    from evalnb.plots import plot_intervals

    ids = ["$\\frac{$", "$x^2$", "cost $5 or $6"]
    rows = [
        {"case_id": c, "variant": v, "repeat": r, "checks": {"ok": r % 2 == 0}}
        for c in ids
        for v in ("$v1$", "v2")
        for r in range(4)
    ]
    run = load(write_run(tmp_path / "dollars", rows, cases=[{"id": c} for c in ids]))
    text, page = render_report(run, html=True)
    assert page is not None and page.count("<img class='plot'") == 4
    assert "$\\frac{$" in text
    ax = plot_intervals(rates(run, ["case_id", "variant"]))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert set(ids) <= set(labels)
    ax.figure.canvas.draw()  # typesetting "$\frac{$" as maths raised here
    plt.close(ax.figure)


def _counted_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The real os.fork, each call in this process counted (a child's count stays its own)."""
    import os

    forks: list[int] = []
    real = os.fork

    def fork() -> int:
        forks.append(1)
        return real()

    monkeypatch.setattr(os, "fork", fork)
    return forks


def test_figures_drawn_by_forked_processes_are_the_same_page(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `evalnb report` draws the figures in as many processes as it may use: the page is the
    # same byte for byte (the PNGs depend only on the data), whatever the number.
    run = load(shop)
    one = render_report(run, html=True)[1]
    assert one is not None and one.count("<img class='plot'") == 4
    forks = _counted_forks(monkeypatch)
    for processes, children in ((2, 1), (3, 2), (8, 3)):  # never more than a figure each
        forks.clear()
        assert render_report(run, html=True, processes=processes)[1] == one
        assert len(forks) == children


def test_a_figure_a_forked_process_fails_to_draw_is_drawn_by_the_parent(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    forks = _counted_forks(monkeypatch)

    from evalnb import plots
    from evalnb.report._render import Plot, _images

    parent = os.getpid()

    def only_here() -> object:
        if os.getpid() != parent:
            raise RuntimeError("no drawing in a child")
        return plots.plot_latency(load(shop))

    drawn = _images([Plot("first", only_here), Plot("second", only_here)], processes=2)
    assert len(forks) == 1  # a child was there to fail
    assert [tag.split("alt='")[1].split("'")[0] for tag in drawn] == ["first", "second"]
    assert all("data:image/png;base64," in tag for tag in drawn)


def test_when_no_process_can_be_forked_the_figures_are_drawn_here(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fork refused by the system (a process limit, memory): a fault no real run here can be
    # made to produce on demand, so os.fork is made to fail. The page is still whole.
    import os

    run = load(shop)
    expected = render_report(run, html=True)[1]

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    assert render_report(run, html=True, processes=4)[1] == expected


def _children() -> set[str]:
    """The pids of this process's children, zombies too (Linux keeps them in /proc)."""
    return {
        pid
        for listing in Path("/proc/self/task").glob("*/children")
        for pid in listing.read_text().split()
    }


def test_a_figure_failing_here_leaves_no_forked_process_behind(shop: Path) -> None:
    import os

    from evalnb import plots
    from evalnb.report._render import Plot, _images

    parent = os.getpid()

    def fails_here() -> object:
        if os.getpid() == parent:
            raise RuntimeError("broken figure")
        return plots.plot_latency(load(shop))

    before = _children()
    with pytest.raises(RuntimeError, match="broken figure"):
        _images([Plot(f"figure {i}", fails_here) for i in range(4)], processes=3)
    assert _children() == before


def test_one_report_value_gives_every_form_from_one_analysis(shop: Path) -> None:
    run = load(shop)
    report = Report.of(run, baseline="v2")
    assert report.text() == report_text(run, baseline="v2")
    assert report.markdown() == report_markdown(run, baseline="v2")
    text, page = render_report(run, baseline="v2", html=True)
    assert (text, page) == (report.text(), report.html())
    assert [s.title for s in report.sections][:2] == ["Verdicts", "Samples"]
    assert report.text().startswith(f"{report.title}\n") and report.markdown().startswith("## ")
    with pytest.raises(TypeError, match="'run' must be a Run"):
        Report.of(str(shop))  # type: ignore[arg-type]
