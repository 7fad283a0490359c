"""plot_sequence: a run until decided, drawn against the cases looked at."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import pytest

import evalnb
from evalnb import Case, Decided, Function


def answer(request):
    # v2 always names the case; v1 does on even repeats only
    if request.variant.name == "v2" or request.repeat % 2 == 0:
        return f"about {request.case.id}"
    return "no idea"


@pytest.fixture(scope="module")
def decided_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("seq") / "r"
    cases = [
        Case(
            f"c{i:03d}",
            prompt=f"tell me about c{i:03d}",
            checks=[{"type": "contains", "text": f"c{i:03d}"}],
        )
        for i in range(120)
    ]
    evalnb.run(
        cases,
        Function(answer),
        variants=["v1", "v2"],
        repeats=2,
        out=out,
        progress=False,
        concurrency=1,
        until=Decided(a="v1", b="v2"),
    )
    return evalnb.load(out)


def test_sequence_band_mean_and_where_it_decided(decided_run):
    before = {k: repr(v) for k, v in matplotlib.rcParams.items()}, matplotlib.is_interactive()
    seq = evalnb.confidence_sequence(decided_run)
    ax = evalnb.plot_sequence(seq, fixed=100, margin=0.1)
    looked = len(decided_run.manifest["until"]["looks"])
    assert list(seq["cases"]) == list(range(1, looked + 1))
    assert seq["verdict"].iloc[-1] == "B better"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "95% anytime-valid sequence" in labels and "fixed design: 100" in labels
    assert f"v2 better after {looked} cases" in labels
    assert ax.get_title(loc="left") == f"v2 vs v1: v2 better after {looked} cases"
    assert ax.get_ylabel() == "B - A (percentage points)"
    mean = ax.get_lines()[0]
    assert list(mean.get_xdata()) == list(seq["cases"])
    assert mean.get_ydata()[-1] == pytest.approx(100 * seq["estimate"].iloc[-1])
    after = {k: repr(v) for k, v in matplotlib.rcParams.items()}, matplotlib.is_interactive()
    assert before == after
    plt.close(ax.figure)


def test_a_run_or_plain_differences_and_a_given_axes(decided_run):
    fig, ax = plt.subplots()
    assert evalnb.plot_sequence(decided_run, ax) is ax
    plt.close(fig)
    seq = evalnb.confidence_sequence([0, 1, 0, 0, -1, 0, 1, 0])
    ax = evalnb.plot_sequence(seq)
    assert ax.get_title(loc="left") == "can't tell yet after 8 cases"
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="'b' must be a compared variant; got 'v9'"):
        evalnb.plot_sequence(decided_run, b="v9")
