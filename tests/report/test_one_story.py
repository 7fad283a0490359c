"""One comparison, one story: the notebook display, the text, Markdown and HTML reports and
the plot_compare subtitle give the demo run's comparison the same p and the same note."""

from __future__ import annotations

import html
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

import evalnb
from evalnb.analysis._story import p_phrase
from evalnb.report import render_report, report_markdown, report_text
from evalnb.standin import StandIn

SHOP = Path(__file__).resolve().parents[2] / "data" / "cases" / "shop.jsonl"


@pytest.mark.parametrize(
    ("seed", "deciding"),
    [(0, "sign-flip over cases"), (39, "paired t across cases")],
    ids=["the sign-flip's p decides", "the paired t's p decides"],
)
def test_the_demo_comparison_tells_one_story_everywhere(
    seed: int, deciding: str, tmp_path: Path
) -> None:
    # A stand-in of its own: its draws depend only on its seed, so each seed pins which of the
    # two tests has the larger p (seed 0: four differences of one sign, the sign-flip's 0.125
    # above the t's; seed 39: the same signs spread widely, the t's 0.188 above 0.125).
    with StandIn(seed=seed) as standin:
        _tell_one_story(standin.base_url, deciding, tmp_path)


def _tell_one_story(base_url: str, deciding: str, tmp_path: Path) -> None:
    target = evalnb.OpenAIChat(base_url, "shop-v1")
    variants = [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]
    result = evalnb.run(SHOP, target, variants=variants, repeats=5, out=tmp_path / "demo")
    run = evalnb.load(result.path)
    comparison = evalnb.compare(run, a="v1", b="v2")
    row = comparison.iloc[0]
    said = p_phrase(row)
    # Four cases: the verdict needs both the paired t and the exact sign-flip test, and its p is
    # the larger of the two, named by its test; the note says why no verdict can be reached.
    exact_decides = row["p_exact"] >= row["p_method"]
    assert exact_decides == (deciding == "sign-flip over cases")
    assert re.fullmatch(rf"p = (0\.\d{{3}}|1\.000) \({deciding}\)", said), said
    assert row["p_adjusted"] == max(row["p_exact"], row["p_method"]) >= 0.125
    assert row["verdict"] == "can't tell yet"
    assert not row["bounded"]  # no outcome on four cases reaches p < 0.05
    assert row["interval_method"] == (
        "sign-flip over cases, inverted" if exact_decides else "paired t across cases"
    )
    assert row["low"] <= 0 <= row["high"]  # the deciding test's interval agrees with its verdict
    note = row["note"]
    assert "can reach p < 0.05" in note

    shown = comparison._repr_html_()
    text = report_text(run)
    markdown = report_markdown(run)
    _, page = render_report(run, html=True)
    assert page is not None
    for where, words in (("notebook", html.unescape(shown)), ("text", text)):
        assert said in words, where
        assert note in " ".join(words.split()), where
        assert "interval: paired t" not in words, where  # the interval is the verdict's
    assert said in markdown.replace("\\", "")
    assert said in html.unescape(page) and html.escape(note) in page

    # The page opens with the conclusions: the first heading after the title is the verdicts.
    headings = re.findall(r"<h([12])>(.*?)</h\1>", page)
    assert headings[0][0] == "1" and headings[1] == ("2", "Verdicts")
    verdicts = page.split("<h2>Verdicts</h2>", 1)[1].split("<h2>", 1)[0]
    assert said in html.unescape(verdicts) and "suite rate of v1" in verdicts
    first_table = text.split("Verdicts", 1)[1].split("\n\n", 2)
    assert said in first_table[0] + first_table[1]

    ax = evalnb.plot_compare(comparison, evalnb.compare_cases(run, a="v1", b="v2"))
    try:
        subtitle = " ".join(
            " ".join(t.get_text().split()) for t in ax.texts if "p = " in t.get_text()
        )
    finally:
        plt.close(ax.figure)
    assert said in subtitle
    assert " ".join(note.split()) in subtitle
