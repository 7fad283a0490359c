"""Every example notebook runs top to bottom in a fresh kernel against the stand-in, and
every cell that draws shows its figures (one per plot call, none lost after the first); the
quickstart reads top to bottom with no warning box, its verdict and gate visible."""

import ast
import html
import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

# Small runs for the tests; the notebooks' own defaults are the full experiments.
QUICK = {
    "00_quickstart.ipynb": "REPEATS = 5",
    "01_power.ipynb": "EXPERIMENTS = 40",
    "02_notes_assistant.ipynb": "REPEATS = 1",
    "03_agreement.ipynb": "DRAWS = 5",
    "04_review.ipynb": "",
    "05_real_model.ipynb": "USE_REAL_MODEL = False",  # the committed run: no model needed
    "06_until_decided.ipynb": "COPIES = 25",
    "07_explore.ipynb": "REPEATS = 3",
    "08_race.ipynb": "COPIES = 30",
}


#: Injected after the parameters: every comparison plot records the words its figure shows
#: (the subtitle: the interval and the p, named by their test), and every explorer its
#: header line, read off the Axes and the explorer themselves.
RECORDER = """
import evalnb as _evalnb, evalnb.plots as _plots
SHOWN_IN_PLOTS, SHOWN_IN_EXPLORERS = [], []
_draw = getattr(_plots, "plot_" + "compare")
_open = _evalnb.explore

def _recorded(summary, *args, **kwargs):
    ax = _draw(summary, *args, **kwargs)
    words = " ".join(t.get_text() for t in ax.texts if t.get_gid() == "subtitle")
    SHOWN_IN_PLOTS.append({"title": ax.get_title(loc="left"), "subtitle": " ".join(words.split())})
    return ax

def _explored(*args, **kwargs):
    explorer = _open(*args, **kwargs)
    SHOWN_IN_EXPLORERS.append(explorer.state.story)
    return explorer

for _where in (_evalnb, _plots):
    setattr(_where, "plot_" + "compare", _recorded)
_evalnb.explore = _explored
"""
#: Appended: prints what was recorded, after this marker.
REPORT = "import json as _json\nprint(%r + _json.dumps([SHOWN_IN_PLOTS, SHOWN_IN_EXPLORERS]))"
MARK = "@@shown@@"


def execute(path: Path, overrides: str, runs: Path, record: bool = False) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    (index,) = [
        i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])
    ]
    injected = nbformat.v4.new_code_cell(f"{overrides}\nRUNS_DIR = {str(runs)!r}")
    notebook.cells.insert(index + 1, injected)
    if record:
        notebook.cells.insert(index + 2, nbformat.v4.new_code_cell(RECORDER))
        notebook.cells.append(nbformat.v4.new_code_cell(REPORT % MARK))
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    return notebook


def test_every_notebook_is_listed():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(QUICK)


#: A call that makes a figure: evalnb's plots and matplotlib's own.
DRAWS = re.compile(
    r"\bplot_(?:intervals|compare|agreement|latency|power|history|race)\(|\bplt\.subplots\("
)


def figures_drawn(source: str) -> int:
    """How many figures a cell's code makes: its drawing calls, each as many times as the
    ``for`` loop over a literal tuple or list around it runs."""
    calls = len(DRAWS.findall(source))
    loop = re.match(r"for \w+ in (\([^)]*\)|\[[^\]]*\]):", source)
    return calls * len(ast.literal_eval(loop[1])) if loop else calls


@pytest.mark.parametrize("name", sorted(QUICK))
def test_notebook_runs_top_to_bottom(name, tmp_path):
    notebook = execute(NOTEBOOKS / name, QUICK[name], tmp_path, record=True)
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    shown = [
        (i, sum("image/png" in o.get("data", {}) for o in c.get("outputs", [])))
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "code"
    ]
    expected = [(i, figures_drawn(notebook.cells[i].source)) for i, _ in shown]
    assert shown == expected
    if name != "04_review.ipynb":
        assert any(n for _, n in expected), "each story draws at least one plot"
    said_where_plotted(notebook)


#: A comparison's interval (or the words for one that cannot bound) and its p, with the
#: test that made them: "95% CI +11.4 to +24.6 pp and p < 0.001 (paired t across cases)".
INTERVAL_AND_P = re.compile(
    r"(?:\d+% CI(?:, unadjusted)? (?:[+-]\d+\.\d|0\.0) to (?:[+-]\d+\.\d|0\.0) pp"
    r"|\d+ cases? cannot bound the difference at \d+%)"
    r" and p (?:=|<) \d\.\d{3} \([^()]*\)"
)


def _plain(text: str) -> str:
    """Output text as a reader sees it: tags gone, entities decoded, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def said_where_plotted(notebook: nbformat.NotebookNode) -> None:
    """Each comparison plot's interval and p are printed, word for word, where the notebook
    shows that comparison (compare's display, a printed line, the explorer's header); the
    prose quotes no interval or p of its own (it would go stale beside the outputs)."""
    printed, recorded = [], None
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") + "".join(
                str(v) for k, v in out.get("data", {}).items() if k in ("text/html", "text/plain")
            )
            if MARK in text:
                recorded = json.loads(text.split(MARK, 1)[1])
            else:
                printed.append(_plain(text))
    assert recorded is not None, "the recorder's report is missing"
    plots, explorers = recorded
    drawn = sum(c.source.count("plot_compare(") for c in notebook.cells if c.cell_type == "code")
    assert len(plots) >= drawn, "every comparison plot the notebook draws was recorded"
    shown = " ".join(printed + [_plain(s) for s in explorers])
    for plot in plots:
        said = INTERVAL_AND_P.findall(plot["subtitle"])
        assert len(said) == 1, plot  # one interval, one p
        assert said[0] in shown, (said[0], plot)
        verdict = plot["title"].split(":", 1)[0]
        assert verdict in ("B better", "A better", "can't tell yet"), plot
    # Markdown states no interval or p of its own (a threshold, "p < 0.05", is no result):
    # the numbers are the outputs'.
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            assert not re.search(r"\bp\s*=\s*0?\.\d|\d% (?:CI|interval) \[?[+-]", cell.source), (
                cell.source
            )


@pytest.mark.parametrize("name", sorted(QUICK))
def test_notebooks_are_stored_without_outputs(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, name


def test_the_quickstart_reads_without_warnings_and_shows_its_verdicts(tmp_path):
    notebook = execute(NOTEBOOKS / "00_quickstart.ipynb", QUICK["00_quickstart.ipynb"], tmp_path)
    outputs = [o for c in notebook.cells for o in c.get("outputs", [])]
    assert [o for o in outputs if o.output_type == "stream" and o.name == "stderr"] == []
    html_out = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "UserWarning" not in html_out
    words = _plain(html_out)
    # 40 cases decide: one p and an interval named by the test that made both
    decided = re.search(
        r"v2 better · v2 vs v1 on all : \+\d+\.\d pp , (95% CI \+\d+\.\d to \+\d+\.\d pp and "
        r"p (=|<) 0\.\d{3} \(paired t across cases\)); \d+\.\d% → \d+\.\d%; 40 paired cases",
        words,
    )
    assert decided, words
    # the 4-case caution, its own section: no interval across the axis, the fixed one beside
    sections = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    assert any(s.startswith("## Four cases cannot decide") for s in sections)
    assert re.search(
        r"can't tell yet · v2 vs v1 on all : \+\d+\.\d pp , 4 cases cannot bound the difference "
        r"at 95% and p = 0\.\d{3} \(sign-flip over cases\); .*; 4 paired cases · on these 4 "
        r"cases only: 95% CI ",
        words,
    ), words
    assert "-100.0" not in words and "paired t across cases, inverted" not in words
    assert re.search(r"<b style='color:#[0-9a-f]+'>(PASS|FAIL)</b>: ", html_out)
    # the tables are read by people: rates as percentages, no six-decimal bounds
    tables = [
        o.data["text/html"]
        for c in notebook.cells
        if "evalnb.rates(" in c.source
        for o in c.get("outputs", [])
        if "text/html" in o.get("data", {})
    ]
    assert len(tables) == 2 and "<th>check</th>" in tables[0] and "contains" in tables[0]
    for table in tables:
        assert not re.search(r"\d\.\d{4,}", table), table
        assert len(re.findall(r"<tr>", table)) <= 14, "a table a reader can take in"


def test_docs_keep_the_widget_state_so_the_panel_shows(tmp_path):
    # make docs executes the notebooks through mkdocs-jupyter, which stores the widget state:
    # the pages then draw the panel and the progress bars instead of blank boxes.
    config = (NOTEBOOKS.parent / "mkdocs.yml").read_text()
    assert "- mkdocs-jupyter:" in config and "execute: !ENV [EVALNB_DOCS_EXECUTE, true]" in config
    notebook = nbformat.read(NOTEBOOKS / "04_review.ipynb", as_version=4)
    (index,) = [
        i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])
    ]
    notebook.cells.insert(index + 1, nbformat.v4.new_code_cell(f"RUNS_DIR = {str(tmp_path)!r}"))
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    state = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    names = {model["model_name"] for model in state.values()}
    assert {"VBoxModel", "ButtonModel", "TextareaModel", "HTMLModel"} <= names
    texts = " ".join(str(m["state"].get("value", "")) for m in state.values())
    assert "evalnb review" in texts


def test_the_race_notebook_shows_a_decided_race(tmp_path):
    # A race whose cases shared a few groups could never decide (the group is the unit):
    # the story is a race that names its best before the cases run out.
    notebook = execute(NOTEBOOKS / "08_race.ipynb", QUICK["08_race.ipynb"], tmp_path)
    printed = "".join(
        o.get("text", "")
        for c in notebook.cells
        for o in c.get("outputs", [])
        if o.output_type == "stream" and o.name == "stdout"
    )
    found = re.search(r"stopped: decided after (\d+) of (\d+) cases", printed)
    assert found and int(found[1]) < int(found[2]), printed


def test_the_review_notebook_tells_the_design_preferences_and_two_reviewers(tmp_path):
    # Notebook 04's story: verdicts stored with their random design, PPI about the whole
    # run, a preference review told like compare, two reviewers on their own samples and
    # their agreement (kappa and alpha) on the overlap; nothing private imported.
    path = NOTEBOOKS / "04_review.ipynb"
    source = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    assert "._" not in re.sub(r"\"[^\"]*\"|'[^']*'", "", source) and "import evalnb." not in source
    notebook = execute(path, QUICK["04_review.ipynb"], tmp_path)
    outputs = [o for c in notebook.cells for o in c.get("outputs", [])]
    text = "".join(
        o.get("text", "")
        + o.get("data", {}).get("text/html", "")
        + o.get("data", {}).get("text/plain", "")
        for o in outputs
    )
    assert "random" in text and "inclusion" in text
    assert "population" in text  # the PPI interval speaks of every sample
    assert "labels_needed" in text  # the planner
    assert re.search(r"(v2 better|v1 better|can&#x27;t tell yet)</b> · v2 vs v1 on", text)
    assert "sign test over cases" in text and "both bad" in text
    assert re.search(r"ana: (\d+) of \1 of their samples reviewed", text)
    assert "krippendorff alpha" in text and "cohen kappa" in text
