"""Plots: what they draw (bars, markers, lines, labels), for small and large inputs."""

from __future__ import annotations

import base64
import io
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.text import Text

from evalnb.analysis import (
    Run,
    agreement,
    compare,
    compare_cases,
    history,
    load,
    power,
    rates,
    suite_rate,
)
from evalnb.analysis._story import fixed_phrase
from evalnb.plots import (
    plot_agreement,
    plot_compare,
    plot_history,
    plot_intervals,
    plot_latency,
    plot_power,
    render_png,
    variant_colors,
)
from evalnb.plots._base import shorten_ids
from evalnb.report import report_html, report_text
from tests.builders import counts_rows, counts_run, write_run

LONG = "customer_support_escalation_with_several_orders_and_a_refund_{:03d}"
FIVE = ["v1", "v2", "v3", "v4", "broken"]


@pytest.fixture(autouse=True)
def global_state_untouched() -> Iterator[None]:
    """No plot may change matplotlib's global settings; every figure is closed after."""
    before = dict(matplotlib.rcParams)
    yield
    after = dict(matplotlib.rcParams)
    plt.close("all")
    assert after == before


# -- runs ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    where = tmp_path_factory.mktemp("plots")
    rng = np.random.default_rng(7)
    made = {
        # v2 clearly better; case order differs from rate order
        "shop": counts_run(where / "shop", {"v1": [8, 3, 6, 2], "v2": [10, 10, 9, 9]}, 10),
        "same": counts_run(where / "same", {"A": [5, 6, 5, 6], "B": [6, 5, 6, 5]}, 10),
        "one": counts_run(where / "one", {"v": [3]}, 4),
    }
    ids = [LONG.format(i) for i in range(200)]
    passes = {v: list(rng.integers(0, 4, 200)) for v in ("baseline", "revised-prompt")}
    rows = counts_rows(passes, 3, case_ids=ids)
    for row in rows:
        row["canonical"] = str(rng.integers(2))
        row["latency_ms"] = float(rng.lognormal(4, 0.5))
    made["big"] = write_run(where / "big", rows)

    rows = []
    for case in ["alpha", "beta", "gamma", "n/a"]:
        for j, variant in enumerate(FIVE):
            for r in range(4):
                broken = variant == "broken"
                outcome = None if case == "n/a" else (not broken and r < j + 1)
                rows.append(
                    {
                        "case_id": case,
                        "variant": variant,
                        "repeat": r,
                        "status": "timeout" if broken else "completed",
                        "latency_ms": 30_000.0 if broken else float(rng.uniform(10, 40)),
                        "canonical": None if broken else ("same" if r else "other"),
                        "checks": {"ok": outcome},
                    }
                )
    made["five"] = write_run(where / "five", rows)

    rows = [
        {"case_id": c, "variant": v, "repeat": r, "checks": {"ok": None}}
        for c in ("a", "b")
        for v in ("A", "B")
        for r in range(3)
    ]
    made["unscored"] = write_run(where / "unscored", rows)

    rows = [
        {
            "case_id": case,
            "variant": "baseline",
            "repeat": r,
            "canonical": "x" if r < 9 else "y",
            "checks": {"ok": r < 9},
        }
        for case in ("invoice", "refund")
        for r in range(10)
    ]
    cases = [
        {"id": "invoice", "metadata": {"agreement_min": 0.8}},
        {"id": "refund", "metadata": {"agreement_min": 1.0}},
    ]
    made["extract"] = write_run(where / "extract", rows, cases=cases)
    return {name: load(path) for name, path in made.items()}


def quiet_suite(run: Run) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few cases: the test knows
        return suite_rate(run)


# -- reading what was drawn --------------------------------------------------------------------


def render(ax: Axes, dpi: int = 40, *, measure: bool = True) -> Axes:
    """Draw to PNG, as a reader would see it; ``measure``: check no text falls off the figure."""
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png", dpi=dpi)
    assert buffer.getvalue().startswith(b"\x89PNG")
    if not measure:
        return ax
    # Lay out again at the figure's own dpi (as a notebook shows it) to measure the text.
    ax.figure.draw_without_rendering()
    renderer = ax.figure.canvas.get_renderer()
    box = ax.figure.bbox
    texts = [*ax.texts, ax.title, ax.xaxis.label, *visible_ticks(ax)]
    legend = ax.get_legend()
    for artist in [t for t in texts if t.get_visible() and t.get_text()] + [legend] * bool(legend):
        extent = artist.get_window_extent(renderer)
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, artist
        assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, artist
    return ax


def visible_ticks(ax: Axes) -> list[Any]:
    """Tick labels inside the view limits: the locator also makes some that are not drawn."""
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    xs = [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
    ys = [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
    return xs + ys


def gid(ax: Axes, name: str) -> list[Any]:
    return [a for a in ax.get_children() if a.get_gid() == name]


def segments(ax: Axes, name: str) -> list[np.ndarray]:
    found = [c for c in gid(ax, name) if isinstance(c, LineCollection)]
    return [s for c in found for s in c.get_segments()]


def points(ax: Axes, name: str) -> np.ndarray:
    xs = [np.asarray(line.get_xdata(), float) for line in gid(ax, name)]
    return np.concatenate(xs) if xs else np.array([])


def bars(ax: Axes, name: str) -> list[np.ndarray]:
    return [
        p.vertices for c in gid(ax, name) if isinstance(c, PolyCollection) for p in c.get_paths()
    ]


def notes(ax: Axes, name: str = "note") -> list[str]:
    return [t.get_text() for t in ax.texts if t.get_gid() == name]


def yticks(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def legend_texts(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts() if t.get_text().strip()]


# -- shared pieces ---------------------------------------------------------------------------


def test_palette_is_okabe_ito_and_positional() -> None:
    assert variant_colors(["v1", "v2"]) == {"v1": "#0072B2", "v2": "#E69F00"}
    many = variant_colors([f"v{i}" for i in range(8)])
    assert len(set(many.values())) == 7 and many["v7"] == many["v0"]  # cycles after seven


def test_long_ids_are_shortened_with_an_ellipsis_and_stay_unique() -> None:
    stem = "customer_escalation_" + "x" * 30
    ids = ["short", stem + "_v2", stem + "_v3", "p_" + "a" * 30 + "_s", "p_" + "b" * 30 + "_s"]
    labels = shorten_ids(ids, 20)
    assert labels[0] == "short"
    assert labels[1].endswith("_v2") and labels[2].endswith("_v3")  # the end is kept
    assert all("…" in label for label in labels[1:])
    assert len(set(labels)) == len(labels)  # ids differing only in the middle are widened
    assert all(len(label) <= 20 for label in labels[:3])
    assert shorten_ids(ids, None) == ids
    with pytest.raises(ValueError, match=r"'label_width' must be an integer of at least 5.*got 3"):
        shorten_ids(ids, 3)


# -- plot_intervals ---------------------------------------------------------------------------


def test_intervals_one_row_per_case_suite_on_top(runs: dict[str, Run]) -> None:
    shop = runs["shop"]
    ax = render(plot_intervals(rates(shop), suite=quiet_suite(shop)))
    # lowest rate first (case-03: 2/10 and 9/10), the suite rate as the top, bold row
    assert yticks(ax) == ["Suite: mean of 4 cases", "case-03", "case-01", "case-02", "case-00"]
    assert ax.get_yticklabels()[0].get_fontweight() == "bold"
    assert gid(ax, "summary-rule")  # the suite row is set apart
    for variant in ("v1", "v2"):
        assert len(segments(ax, f"interval:{variant}")) == 4
        assert len(segments(ax, f"suite-interval:{variant}")) == 1
    ends = sorted(tuple(np.round(s[:, 0], 3)) for s in segments(ax, "interval:v1"))
    expected = rates(shop, check="all")
    expected = expected[expected["variant"] == "v1"]
    assert ends == sorted(zip(expected["low"].round(3), expected["high"].round(3), strict=True))
    [line] = gid(ax, "interval:v1")
    assert line.get_colors()[0] == pytest.approx(to_rgba("#0072B2"))
    assert notes(ax)[:4] == ["8/10", "3/10", "6/10", "2/10"]  # v1, in frame order
    assert notes(ax, "suite-note") == ["48% · 19/40", "95% · 38/40"]
    assert [t.get_text() for t in ax.get_xticklabels()][::5] == ["0%", "100%"]
    assert ax.get_xlim()[0] <= 0 and ax.get_xlim()[1] >= 1
    assert legend_texts(ax) == ["v1", "v2"]
    assert ax.get_title(loc="left") == "Pass rate per case, check 'all'"


def test_intervals_options(runs: dict[str, Run]) -> None:
    table = rates(runs["shop"])
    ax = plot_intervals(table, suite=False, sort=False, check="ok")
    assert yticks(ax) == ["case-00", "case-01", "case-02", "case-03"]
    assert not segments(ax, "suite-interval:v1")
    assert "check 'ok'" in ax.get_title(loc="left")
    pooled = plot_intervals(rates(runs["shop"], by="case_id", check="all"))  # no variant column
    assert len(segments(pooled, "interval:")) == 4 and pooled.get_legend() is None


def test_intervals_200_long_case_ids(runs: dict[str, Run]) -> None:
    small = plot_intervals(rates(runs["shop"]))
    ax = render(plot_intervals(rates(runs["big"])), dpi=20)
    for variant in ("baseline", "revised-prompt"):
        assert len(segments(ax, f"interval:{variant}")) == 200
    labels = yticks(ax)[1:]
    assert len(set(labels)) == 200 and all(len(s) <= 32 and "…" in s for s in labels)
    assert ax.figure.get_figheight() > 10 * small.figure.get_figheight()


def test_intervals_five_variants_one_all_incomplete(runs: dict[str, Run]) -> None:
    ax = render(plot_intervals(rates(runs["five"])))
    assert legend_texts(ax) == FIVE
    colors = {tuple(gid(ax, f"interval:{v}")[0].get_colors()[0]) for v in FIVE}
    assert len(colors) == 5
    assert len(segments(ax, "interval:broken")) == 3  # the unscored case has no interval
    assert "0/4 · 4 incomplete" in notes(ax)
    assert "no scored samples · 4 unscored" in notes(ax)
    assert notes(ax, "suite-note")[-1] == "0% · 0/12 · 12 incomplete"


def test_intervals_all_unscored_and_one_case(runs: dict[str, Run]) -> None:
    ax = render(plot_intervals(rates(runs["unscored"])))
    assert yticks(ax) == ["a", "b"]  # no suite row: nothing was scored
    assert not segments(ax, "interval:A") and not segments(ax, "interval:B")
    assert set(notes(ax)) == {"no scored samples · 3 unscored"}
    ax = render(plot_intervals(rates(runs["one"])))
    assert yticks(ax) == ["Suite: mean of 1 case", "case-00"]
    assert notes(ax) == ["3/4"]


def test_intervals_errors_say_what_to_pass(runs: dict[str, Run]) -> None:
    table = rates(runs["shop"])
    with pytest.raises(ValueError, match=r"'rates' must have the columns \['low'\]"):
        plot_intervals(table.drop(columns="low"))
    with pytest.raises(ValueError, match=r"'check' must be one of 'ok', 'all'; got 'nope'"):
        plot_intervals(table, check="nope")
    with pytest.raises(ValueError, match="one row per case_id and variant"):
        plot_intervals(pd.concat([table, table]))
    with pytest.raises(TypeError, match="'rates' must be a pandas DataFrame"):
        plot_intervals(runs["shop"])
    with pytest.raises(TypeError, match="'ax' must be a matplotlib Axes"):
        plot_intervals(table, ax="left")


# -- plot_compare -----------------------------------------------------------------------------


def test_compare_draws_differences_zero_line_and_verdict(runs: dict[str, Run]) -> None:
    shop = runs["shop"]
    summary = compare(shop)
    ax = render(plot_compare(summary, compare_cases(shop)))
    [zero] = gid(ax, "zero")
    assert list(zero.get_xdata()) == [0, 0]
    # 4 cases cannot bound the difference (the sign-flip's interval is the whole axis): it
    # is not drawn; the interval on exactly these cases is, dashed, and the subtitle says so.
    assert not summary["bounded"].iloc[0] and not segments(ax, "mean-interval")
    [fixed] = segments(ax, "fixed-interval")
    row = summary.iloc[0]
    assert fixed[:, 0] == pytest.approx([row["fixed_low"], row["fixed_high"]])
    assert ax.get_xlim()[1] < 1.0
    [subtitle] = [t.get_text() for t in ax.texts if t.get_gid() == "subtitle"]
    subtitle = " ".join(subtitle.split())
    assert "4 cases cannot bound the difference at 95% and p = " in subtitle
    assert "(sign-flip over cases)" in subtitle
    assert f"dashed: {fixed_phrase(row)}" in subtitle
    assert points(ax, "mean-diff") == pytest.approx([0.475])
    assert sorted(points(ax, "case-diff:b-better")) == pytest.approx([0.2, 0.3, 0.7, 0.7])
    assert not len(points(ax, "case-diff:a-better"))
    assert yticks(ax) == ["Mean difference (4 cases)", "case-01", "case-03", "case-02", "case-00"]
    title = ax.get_title(loc="left")
    # 4 cases cannot reach significance (the smallest exact p is 0.125): no verdict.
    assert title == "can't tell yet: v2 − v1 = +47.5 points"
    assert notes(ax) == ["3/10 → 10/10", "2/10 → 9/10", "6/10 → 9/10", "8/10 → 10/10"]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert "0" in ticks and any(t.startswith("+") for t in ticks)
    assert [t.get_text() for t in ax.texts if t.get_gid() == "direction:a"] == ["← v1 better"]


def test_compare_cant_tell_and_colours(runs: dict[str, Run]) -> None:
    same = runs["same"]
    colors = {"A": "#009E73", "B": "#CC79A7"}
    ax = render(plot_compare(compare(same), compare_cases(same), colors=colors))
    assert ax.get_title(loc="left").startswith("can't tell yet: B − A = +0.0 points")
    assert len(points(ax, "case-diff:a-better")) == 2 and len(points(ax, "case-diff:b-better")) == 2
    [a_better] = gid(ax, "case-diff:a-better")
    assert to_rgba(a_better.get_color()) == to_rgba("#009E73")
    summary_only = plot_compare(compare(same))
    assert yticks(summary_only) == ["Mean difference (4 cases)"]


def test_compare_200_cases_and_unpaired(runs: dict[str, Run]) -> None:
    big = runs["big"]
    ax = render(plot_compare(compare(big), compare_cases(big)), dpi=20, measure=False)
    drawn = sum(len(points(ax, f"case-diff:{k}")) for k in ("a-better", "b-better", "no-change"))
    assert drawn == 200 and len(set(yticks(ax))) == 201
    five = runs["five"]
    ax = render(
        plot_compare(compare(five, a="v1", b="broken"), compare_cases(five, a="v1", b="broken"))
    )
    # every case fails the same way: a zero standard error is not certainty
    assert ax.get_title(loc="left").startswith("can't tell yet: broken − v1")
    assert notes(ax)[-1] == "not paired: no scored samples"
    assert yticks(ax)[-1] == "n/a"


def test_compare_errors(runs: dict[str, Run]) -> None:
    with pytest.raises(ValueError, match="no comparison to plot"):
        plot_compare(compare(runs["unscored"]))
    two = compare(runs["shop"], check=["ok", "all"])
    with pytest.raises(ValueError, match="'check' must name one of the checks"):
        plot_compare(two.assign(check=["ok", "ok2"]))
    with pytest.raises(ValueError, match=r"'summary' must have the columns \['verdict'\]"):
        plot_compare(two.drop(columns="verdict"))


# -- plot_agreement ---------------------------------------------------------------------------


def test_agreement_bars_minimums_and_flaky(runs: dict[str, Run]) -> None:
    frame = agreement(runs["extract"], at=[1, 5])  # rows repeated per k are drawn once
    ax = render(plot_agreement(frame))
    modal = bars(ax, "modal:baseline")
    assert len(modal) == 2 and [v[:, 0].max() for v in modal] == pytest.approx([0.9, 0.9])
    assert len(bars(ax, "second:baseline")) == 2 and not bars(ax, "no-answer:baseline")
    assert sorted(s[0, 0] for s in segments(ax, "agreement-min")) == [0.8, 1.0]
    assert notes(ax) == [
        "9/10 agree · 2 distinct · passes 9/10, flaky",
        "9/10 agree · 2 distinct · below min 100% · passes 9/10, flaky",
    ]
    assert "agreement_min" in legend_texts(ax)


def test_agreement_five_variants_incomplete_and_unscored(runs: dict[str, Run]) -> None:
    ax = render(plot_agreement(agreement(runs["five"])))
    missing = bars(ax, "no-answer:broken")
    assert len(missing) == 4 and all(v[:, 0].min() == 0 and v[:, 0].max() == 1 for v in missing)
    assert not bars(ax, "modal:broken")
    assert notes(ax).count("no canonical answer in 4 draws · passes 0/4") == 3
    assert set(FIVE) < set(legend_texts(ax))
    assert len(bars(ax, "modal:v3")) == 4
    ax = render(plot_agreement(agreement(runs["unscored"])))
    assert all("passes" not in note for note in notes(ax))  # nothing scored, nothing claimed


def test_agreement_200_cases(runs: dict[str, Run]) -> None:
    frame = agreement(runs["big"])
    ax = render(plot_agreement(frame[frame["variant"] == "baseline"]), dpi=20, measure=False)
    assert len(bars(ax, "modal:baseline")) == 200 and not bars(ax, "modal:revised-prompt")
    assert len(set(yticks(ax))) == 200


# -- plot_latency -----------------------------------------------------------------------------


def test_latency_marks_incomplete_median_and_p95(runs: dict[str, Run]) -> None:
    five = runs["five"]
    ax = render(plot_latency(five))
    assert yticks(ax) == FIVE
    assert len(points(ax, "completed:0")) == 16 and not len(points(ax, "incomplete:0"))
    assert len(points(ax, "incomplete:4")) == 16 and not len(points(ax, "completed:4"))
    assert len(segments(ax, "median")) == 5 and len(segments(ax, "p95")) == 5
    assert ax.get_xscale() == "log"  # 30 s timeouts beside 10-40 ms answers
    assert notes(ax)[-1] == "median 30 s · p95 30 s · n 16 · 16 incomplete"
    assert legend_texts(ax) == ["completed", "incomplete", "median", "p95"]
    frame = render(plot_latency(five.samples, by=None, log=False))
    assert yticks(frame) == ["all samples"] and frame.get_xscale() == "linear"
    assert len(points(frame, "incomplete:0")) == 16


def test_latency_by_case_and_errors(runs: dict[str, Run]) -> None:
    ax = render(plot_latency(runs["big"], by=["variant"]), dpi=20)
    assert len(points(ax, "completed:0")) + len(points(ax, "completed:1")) == 1200
    ax = plot_latency(runs["shop"], by=["case_id", "split"])
    assert yticks(ax)[0] == "case-00 · dev"
    with pytest.raises(ValueError, match=r"'data' must have the columns \['latency_ms'\]"):
        plot_latency(pd.DataFrame({"variant": ["a"]}))
    with pytest.raises(ValueError, match="'by' must name samples columns or case fields"):
        plot_latency(runs["shop"], by="tags")
    with pytest.raises(TypeError, match="'data' must be a Run"):
        plot_latency([1, 2])


# -- plot_power -------------------------------------------------------------------------------


def test_power_detectable_difference_against_repeats(runs: dict[str, Run]) -> None:
    # 10 cases: with the pilot's 4, no difference is detectable at any number of repeats
    table = power(runs["shop"], cases=10, repeats=[2, 5, 10, 20, 50])
    ax = render(plot_power(table))
    [line] = gid(ax, "power:0")
    assert list(line.get_xdata()) == [2, 5, 10, 20, 50]
    assert list(line.get_ydata()) == pytest.approx(np.minimum(table["diff"], 1.0))
    assert ax.get_title(loc="left").startswith("Smallest detectable difference for 80% power")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "5", "10", "20", "50"]
    assert len(notes(ax, "power-value")) == 5
    [floor] = gid(ax, "floor")  # between-case variance: more repeats never go below it
    assert 0 < floor.get_ydata()[0] < table["diff"].min()


def test_power_lines_per_design_and_other_solves() -> None:
    table = power(rate=0.7, cases=[10, 20, 40, 80], repeats=[2, 5])
    ax = render(plot_power(table))
    assert legend_texts(ax) == ["repeats = 2", "repeats = 5"]  # x: the column with most values
    assert ax.xaxis.get_label().get_text() == "cases"
    needed = render(plot_power(power(rate=0.7, diff=[0.1, 0.2, 0.3], repeats=5)))
    assert needed.yaxis.get_label().get_text() == "cases needed"
    with pytest.raises(ValueError, match="'x' must be one of"):
        plot_power(table, x="power")
    with pytest.raises(ValueError, match="must solve for one quantity"):
        plot_power(pd.concat([table, power(rate=0.7, diff=0.1, repeats=5)]))


# -- axes, figures and the report -------------------------------------------------------------


def test_plots_draw_on_the_axes_given_and_make_no_figure(runs: dict[str, Run]) -> None:
    shop = runs["shop"]
    calls = [
        lambda ax: plot_intervals(rates(shop), ax=ax),
        lambda ax: plot_compare(compare(shop), compare_cases(shop), ax=ax),
        lambda ax: plot_agreement(agreement(shop), ax=ax),
        lambda ax: plot_latency(shop, ax=ax),
        lambda ax: plot_power(power(shop, repeats=[1, 5]), ax=ax),
    ]
    for call in calls:
        figure = Figure(figsize=(5, 4))
        ax = figure.add_subplot()
        assert call(ax) is ax
        assert list(figure.get_size_inches()) == [5, 4]
    assert plt.get_fignums() == []


def test_dollars_in_names_are_text_not_maths(tmp_path: Path) -> None:
    # Model-written ids carry prices; "$...$" in one must not be typeset (nor stop the drawing
    # when it is not valid TeX), on a new figure or on the caller's Axes, whose title and
    # first tick existed before the plot.
    ids = ["$12.36 ... $19.50", r"bad $\frac$ tex", "a_$x$_b"]
    rows = [
        {"case_id": c, "variant": v, "repeat": r, "canonical": "$y$", "checks": {"$ok$": r > i}}
        for i, c in enumerate(ids)
        for v in ("$v1$", "v2 $")
        for r in range(4)
    ]
    run = load(write_run(tmp_path / "prices", rows))
    calls = [
        lambda ax: plot_intervals(rates(run), ax=ax, check="$ok$"),
        lambda ax: plot_compare(compare(run), compare_cases(run), ax=ax),
        lambda ax: plot_agreement(agreement(run), ax=ax),
        lambda ax: plot_latency(run, by=["variant", "case_id"], ax=ax),
        lambda ax: plot_history(history(tmp_path), ax=ax),
    ]
    drawn = set()
    for call in calls:
        for given in (None, Figure(figsize=(8, 5), layout="constrained").add_subplot()):
            ax = call(given)
            render(ax, measure=False)
            texts = [t for t in ax.figure.findobj(Text) if "$" in t.get_text()]
            assert [t.get_text() for t in texts if t.get_parse_math()] == []
            drawn |= {t.get_text() for t in texts}
    # ids as tick labels and notes, variants in the legend, the check in the title
    assert {*ids, "$v1$ · $12.36 ... $19.50", "$v1$", "v2 $"} <= drawn
    assert "Pass rate per case, check '$ok$'" in drawn


def test_new_figures_grow_with_rows_and_render_png_leaves_none(runs: dict[str, Run]) -> None:
    few = plot_agreement(agreement(runs["extract"])).figure.get_figheight()
    many = plot_agreement(agreement(runs["five"])).figure.get_figheight()
    assert many > 2 * few
    plt.close("all")
    first = render_png(plot_latency, runs["five"], by=None)
    assert first.startswith(b"\x89PNG") and plt.get_fignums() == []
    table = rates(runs["one"])
    assert render_png(plot_intervals, table) == render_png(plot_intervals, table)


def test_html_report_embeds_the_plots_as_png(runs: dict[str, Run], tmp_path: Path) -> None:
    shop = runs["shop"]
    page = report_html(shop)
    images = re.findall(
        r"<img class='plot' alt='([^']*)' src='data:image/png;base64,([^']+)'>", page
    )
    assert [alt.split(" ")[0] for alt, _ in images] == ["Pass", "Agreement", "Per-case", "Latency"]
    assert all(base64.b64decode(data).startswith(b"\x89PNG") for _, data in images)
    assert "<script" not in page and "src='http" not in page
    assert "<img" not in report_text(shop)
