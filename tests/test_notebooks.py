"""Every example notebook runs top to bottom in a fresh kernel against the stand-in, and
every cell that draws shows its figures (one per plot call, none lost after the first); the
quickstart reads top to bottom with no warning box, its verdict and gate visible."""

import ast
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


def execute(path: Path, overrides: str, runs: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    (index,) = [
        i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", [])
    ]
    injected = nbformat.v4.new_code_cell(f"{overrides}\nRUNS_DIR = {str(runs)!r}")
    notebook.cells.insert(index + 1, injected)
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
    notebook = execute(NOTEBOOKS / name, QUICK[name], tmp_path)
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
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    # the expected caution as a note in the suite rate's display, not a warning
    assert "note: fewer than 10 cases" in html and "UserWarning" not in html
    # compare's verdict sentence first; the gate's one overall line
    assert re.search(
        r"<b style='color:#[0-9a-f]+'>(v2 better|v1 better|can&#x27;t tell yet)</b> · v2 vs v1",
        html,
    )
    assert re.search(r"<b style='color:#[0-9a-f]+'>(PASS|FAIL)</b>: ", html)
    # the first table: a row per variant, case and check, the check named
    first = next(
        o for o in outputs if "text/html" in o.get("data", {}) and "case_id" in o.data["text/html"]
    )
    assert "<th>check</th>" in first.data["text/html"] and "contains" in first.data["text/html"]


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
