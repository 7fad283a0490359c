"""One comparison, one story: the notebook display, the text, Markdown and HTML reports and
the plot_compare subtitle give the demo run's comparison the same p and the same note."""

from __future__ import annotations

import html
import re
from pathlib import Path

import matplotlib.pyplot as plt

import evalnb
from evalnb.analysis._story import p_phrase
from evalnb.report import render_report, report_markdown, report_text

SHOP = Path(__file__).resolve().parents[2] / "data" / "cases" / "shop.jsonl"


def test_the_demo_comparison_tells_one_story_everywhere(standin, tmp_path: Path) -> None:
    target = evalnb.OpenAIChat(standin.base_url, "shop-v1")
    variants = [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]
    result = evalnb.run(SHOP, target, variants=variants, repeats=5, out=tmp_path / "demo")
    run = evalnb.load(result.path)
    comparison = evalnb.compare(run, a="v1", b="v2")
    row = comparison.iloc[0]
    said = p_phrase(row)
    # Four cases: the exact sign-flip test decides (its p at least 0.125, above the t test's),
    # and the note says why no verdict can be reached. (The shared stand-in's draws depend on
    # what other tests asked it before, so the p itself is not pinned: 1.000 when the cases'
    # differences cancel.)
    assert re.fullmatch(r"p = (0\.\d{3}|1\.000) \(sign-flip over cases\)", said), said
    assert row["p_adjusted"] == row["p_exact"] >= max(row["p_value"], 0.125)
    assert row["verdict"] == "can't tell yet"
    assert row["interval_method"] == "sign-flip over cases, inverted"
    assert row["low"] <= 0 <= row["high"]  # the inverted test's interval agrees with its verdict
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
