"""Plots leave matplotlib's global state alone, where it matters: in a fresh process with
the inline backend set as ipykernel sets it, and in a fresh Jupyter kernel, where the
first pyplot figure loads the backend and the backend turns interactive mode on.

A plot that drew inside ``rc_context`` restored interactive mode to off on the way out,
and from then on no figure showed, evalnb's or the user's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.builders import counts_run

INLINE = "module://matplotlib_inline.backend_inline"

# One cell (or one call) per plot, as a user writes them: no `%matplotlib`, some without `;`.
PLOTS = {
    "intervals": "evalnb.plot_intervals(evalnb.rates(run))",
    "compare": "evalnb.plot_compare(evalnb.compare(run), evalnb.compare_cases(run));",
    "user": "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 3, 2]);",
    "agreement": "evalnb.plot_agreement(evalnb.agreement(run))",
    "latency": "evalnb.plot_latency(run);",
    "power": "evalnb.plot_power(evalnb.power(run, repeats=[1, 2, 5, 10]))",
    "history": "evalnb.plot_history(evalnb.history(RUNS));",
}

SETUP = """\
import json
import matplotlib
import evalnb

RUNS = {runs!r}
run = evalnb.load(RUNS + "/week2")


def state():
    return [matplotlib.is_interactive(), {{k: repr(v) for k, v in matplotlib.rcParams.items()}}]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs in one folder, for the history; the second is the one plotted."""
    folder = tmp_path_factory.mktemp("history")
    counts_run(folder / "week1", {"v1": [8, 3, 6, 2], "v2": [9, 7, 9, 5]}, 10)
    counts_run(folder / "week2", {"v1": [8, 3, 6, 2], "v2": [10, 10, 9, 9]}, 10)
    return folder


def _states(script: str) -> list[tuple[str, list]]:
    """Run ``script`` in a fresh interpreter with an IPython shell, as in a kernel: with a
    shell, the inline backend turns interactive mode on when the first figure loads it."""
    prelude = "from IPython.core.interactiveshell import InteractiveShell\n"
    prelude += "InteractiveShell.instance()\n"
    env = {**os.environ, "MPLBACKEND": INLINE}
    done = subprocess.run(
        [sys.executable, "-c", prelude + script],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_no_plot_changes_interactive_mode_or_rcparams(runs: Path) -> None:
    steps = "\n".join(f"{code}\nstates.append(({name!r}, state()))" for name, code in PLOTS.items())
    script = SETUP.format(runs=str(runs)) + f"states = [('start', state())]\n{steps}\n"
    script += "print(json.dumps(states))"
    states = _states(script)
    # What a user's own first figure leaves: the backend loaded, interactive mode on.
    plain = SETUP.format(runs=str(runs)) + "import matplotlib.pyplot as plt\nplt.subplots()\n"
    [(_, expected)] = _states(plain + "print(json.dumps([('plain', state())]))")
    assert expected[0] is True  # the trap is armed: the backend turned interactive mode on
    start, *after = states
    assert start[1][0] is False
    assert [name for name, _ in after] == list(PLOTS)
    for name, seen in after:
        assert seen[0] == expected[0], f"interactive mode after {name}: {seen[0]}"
        changed = {k for k in expected[1] if seen[1].get(k) != expected[1][k]}
        assert changed == set(), f"rcParams changed by {name}: {sorted(changed)}"


def test_every_plot_cell_of_a_fresh_kernel_shows_its_figure(runs: Path) -> None:
    # After every cell, the kernel records matplotlib's interactive mode and rcParams.
    setup = SETUP.format(runs=str(runs))
    setup += "states = []\n"
    setup += "get_ipython().events.register('post_run_cell', lambda _: states.append(state()))"
    cells = [setup, *PLOTS.values(), "print(json.dumps(states))"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = {**os.environ, "MPLBACKEND": INLINE}
    NotebookClient(notebook, timeout=240, kernel_name="python3").execute(env=env)

    plots = notebook.cells[1:-1]
    errors = [o for c in notebook.cells for o in c.outputs if o.output_type == "error"]
    assert errors == []
    images = {
        name: sum("image/png" in o.get("data", {}) for o in cell.outputs)
        for name, cell in zip(PLOTS, plots, strict=True)
    }
    assert images == dict.fromkeys(PLOTS, 1)
    printed = notebook.cells[-1].outputs[0]["text"]
    states = json.loads(printed)[1 : 1 + len(PLOTS)]
    assert all(seen[0] is True for seen in states)  # interactive, as the backend set it
    assert all(seen == states[0] for seen in states)
