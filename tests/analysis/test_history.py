"""History: three weekly stand-in runs (shop-v2, shop-v2, then shop-v1: true pass rates
90%, 90%, 70%) as one frame in time order, the drop marked by the paired test, drawn,
and reported by `evalnb report --history DIR`."""

from __future__ import annotations

import pandas as pd
import pytest
from markdown_it import MarkdownIt
from matplotlib.figure import Figure

import evalnb
from evalnb.analysis._history import UNCHANGED
from evalnb.cli import main
from evalnb.standin import StandIn

SHOP = evalnb.cases.suites.path("shop.jsonl")
REPEATS = 25
PRICES = '[models."shop-v1"]\ninput = 0.15\noutput = 0.60\n\n'
PRICES += '[models."shop-v2"]\ninput = 2.5\noutput = 10\n'
# Directory names sort against time: the frame must follow the manifests' start times.
WEEKS = [("z-week1", "shop-v2"), ("m-week2", "shop-v2"), ("a-week3", "shop-v1")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("history") / "runs"
    # A new server (and seed) each week, as a weekly job would meet the model.
    for week, (name, model) in enumerate(WEEKS, start=1):
        with StandIn(seed=week) as server:
            evalnb.run(
                SHOP,
                evalnb.OpenAIChat(server.base_url, model),
                variants=["prod"],
                repeats=REPEATS,
                out=folder / name,
                progress=False,
            )
    (folder / "notes").mkdir()  # not a run: left out
    return folder


def test_history_is_one_row_per_run_in_time_order_with_the_drop_marked(runs, tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    frame = evalnb.history(runs, prices=prices)
    assert list(frame["run_id"]) == [name for name, _ in WEEKS]
    assert frame["started_at"].is_monotonic_increasing
    assert list(frame["model"]) == [model for _, model in WEEKS]
    assert frame["server"].str.startswith("evalnb-standin/").all()
    assert list(frame["cases"]) == [4, 4, 4] and list(frame["repeats"]) == [REPEATS] * 3
    # Each rate is suite_rate of its own run, its method named.
    for row in frame.itertuples():
        with pytest.warns(UserWarning):
            own = evalnb.suite_rate(evalnb.load(runs / row.run_id)).iloc[0]
        assert (row.estimate, row.low, row.high, row.method) == (
            own["estimate"],
            own["low"],
            own["high"],
            own["method"],
        )
    # The paired test, run against the run before: no change, then the drop.
    assert pd.isna(frame["change"].iloc[0]) and pd.isna(frame["previous"].iloc[0])
    assert list(frame["change"].iloc[1:]) == [UNCHANGED, "worse"]
    assert list(frame["previous"].iloc[1:]) == ["z-week1", "m-week2"]
    paired = evalnb.compare_runs(runs / "m-week2", runs / "a-week3").iloc[0]
    assert paired["verdict"] == "worse"
    assert frame["diff"].iloc[2] == paired["diff"] < 0
    assert frame["diff_high"].iloc[2] == paired["high"] < 0
    assert frame["estimate"].iloc[0] > frame["estimate"].iloc[2]
    # suite_rate's warning about few cases is kept in the note, not lost.
    assert all("cases" in note for note in frame["note"])
    # Cost per run matches evalnb.costs on each run.
    for row in frame.itertuples():
        spent = evalnb.costs(evalnb.load(runs / row.run_id), prices=prices)["cost"].iloc[0]
        assert row.cost == pytest.approx(spent, rel=1e-12) and spent > 0


def test_plot_history_draws_every_run_and_rings_the_drop(runs):
    frame = evalnb.history(runs)
    ax = evalnb.plot_history(frame, ax=Figure().add_subplot())
    series = [c for c in ax.containers if c.get_label() == "prod"]
    assert len(series) == 1
    assert list(series[0].lines[0].get_ydata()) == list(frame["estimate"])
    rings = [line for line in ax.get_lines() if line.get_gid() == "change-worse"]
    assert len(rings) == 1 and rings[0].get_xdata()[0] == pytest.approx(2)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert [label.split("\n")[0] for label in labels] == [name for name, _ in WEEKS]


def test_report_history_as_text_markdown_and_html(runs, tmp_path, capsys):
    page = tmp_path / "history.html"
    assert main(["report", "--history", str(runs), "--html", str(page)]) == 0
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith(("z-week1", "m-", "a-"))]
    assert [line.split()[0] for line in rows] == [name for name, _ in WEEKS]
    assert rows[-1].split()[-1] == "worse" and "no change shown" in rows[1]
    html = page.read_text()
    assert html.count("<img class='plot'") == 1 and "a-week3" in html

    assert main(["report", "--history", str(runs), "--markdown"]) == 0
    tokens = MarkdownIt("commonmark").enable("table").parse(capsys.readouterr().out)
    assert sum(t.type == "tr_open" for t in tokens) == 1 + 3  # header and three runs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report"], "give run directories or --history DIR (not both)"),
        (["report", "x", "--history", "y"], "give run directories or --history DIR (not both)"),
    ],
)
def test_report_history_misuse_is_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_folder_without_runs_is_one_line(tmp_path, capsys):
    assert main(["report", "--history", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"evalnb report: error: {tmp_path}: holds no run directory (a folder with a "
        "manifest.json)\n"
    )
