"""Every example notebook runs top to bottom in a fresh kernel against the stand-in."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

# Small runs for the tests; the notebooks' own defaults are the full experiments.
QUICK = {
    "00_quickstart.ipynb": "REPEATS = 5",
    "01_power.ipynb": "EXPERIMENTS = 40",
    "02_notes_assistant.ipynb": "REPEATS = 1",
    "03_agreement.ipynb": "DRAWS = 5",
    "04_review.ipynb": "",
    "05_real_model.ipynb": "USE_REAL_MODEL = False",  # the committed run: no model needed
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


@pytest.mark.parametrize("name", sorted(QUICK))
def test_notebook_runs_top_to_bottom(name, tmp_path):
    notebook = execute(NOTEBOOKS / name, QUICK[name], tmp_path)
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    images = [
        o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    if name != "04_review.ipynb":
        assert images, "each story shows at least one plot"


@pytest.mark.parametrize("name", sorted(QUICK))
def test_notebooks_are_stored_without_outputs(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, name
