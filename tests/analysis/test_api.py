"""The public face of evalnb.analysis: names, signatures and documented result columns."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

import evalnb.analysis as analysis
from evalnb._exceptions import ArgumentError

STATISTICS = [
    "rates",
    "suite_rate",
    "compare",
    "compare_cases",
    "agreement",
    "latency",
    "power",
    "ppi_rate",
]


def test_all_is_sorted_and_exactly_the_public_names() -> None:
    assert analysis.__all__ == sorted(analysis.__all__)
    # The names load lazily: dir() lists them, getattr() loads each.
    public = {
        name
        for name in dir(analysis)
        if not name.startswith("_")
        and not inspect.ismodule(getattr(analysis, name))
        and name != "annotations"
    }
    assert set(analysis.__all__) == public


def test_statistics_document_every_result_column() -> None:
    for name in STATISTICS:
        doc = inspect.getdoc(getattr(analysis, name)) or ""
        assert "Returns:" in doc, name


def test_shared_keywords_have_the_same_names_and_defaults() -> None:
    for name in STATISTICS:
        parameters = inspect.signature(getattr(analysis, name)).parameters
        if "level" in parameters:
            assert parameters["level"].default == 0.95, name
        if "method" in parameters:
            # suite_rate's interval on the effective n defaults to Agresti-Coull: it held
            # 0.93-0.97 where Wilson dipped to 0.91 near 0 and 1 (issue 30, BENCHMARKS.md)
            wanted = "agresti_coull" if name == "suite_rate" else "wilson"
            assert parameters["method"].default == wanted, name
        assert "by" in parameters or name == "power", name


#: Every public statistics function, and the parameters its data comes in: one run or
#: frame, except compare_runs (the baseline run, then the run to judge).
DATA = {
    "agreement": ["data"],
    "calibrate": ["data"],
    "compare": ["data"],
    "compare_cases": ["data"],
    "compare_runs": ["a", "b"],
    "confidence_sequence": ["data"],
    "costs": ["data"],
    "flakiness": ["data"],
    "gate": ["data"],
    "history": ["runs"],
    "latency": ["data"],
    "power": ["pilot"],
    "ppi_compare": ["data"],
    "ppi_rate": ["data"],
    "preferences": ["data"],
    "race": ["data"],
    "rates": ["data"],
    "review_plan": ["data"],
    "scores": ["data"],
    "suite_rate": ["data"],
}
#: Public functions that are not statistics over a run.
NOT_STATISTICS = {"format_gate", "load", "load_prices", "normalise_answer", "proportion_interval"}


def test_every_statistics_function_is_held_to_the_argument_order() -> None:
    functions = {
        name
        for name in analysis.__all__
        if inspect.isfunction(getattr(analysis, name)) and name not in NOT_STATISTICS
    }
    assert functions == set(DATA)


@pytest.mark.parametrize("name", sorted(DATA))
def test_statistics_take_the_data_then_by_then_keywords(name: str) -> None:
    # (run_or_frame, by=..., *, check=, level=, method=): the data first, `by` second where
    # the function groups, and everything else by keyword, so no two can be swapped unseen.
    parameters = list(inspect.signature(getattr(analysis, name)).parameters.values())
    names = [p.name for p in parameters]
    positional = [p.name for p in parameters if p.kind is not p.KEYWORD_ONLY]
    assert positional == [*DATA[name], *(["by"] if "by" in names else [])], name
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters), name
    for keyword in ("check", "level", "method"):
        if keyword in names:
            assert parameters[names.index(keyword)].kind is inspect.Parameter.KEYWORD_ONLY


def test_compare_runs_refuses_the_old_keywords_naming_the_new_ones() -> None:
    # compare_runs(new, old) became compare_runs(a, b), baseline first: a call written with
    # the old keywords must fail, never run with the runs read the other way round.
    with pytest.raises(ArgumentError, match=r"no longer takes 'old' or 'new': write a= .* b="):
        analysis.compare_runs(new="runs/week2", old="runs/week1")
    with pytest.raises(ArgumentError, match=r"no longer takes 'new': write b="):
        analysis.compare_runs("runs/week1", new="runs/week2")


def test_a_side_given_where_by_goes_says_to_name_the_sides() -> None:
    counts = pd.DataFrame(
        {
            "variant": ["v1", "v1", "v2", "v2"],
            "case_id": ["c1", "c2", "c1", "c2"],
            "check": "ok",
            "k": [1, 2, 3, 3],
            "n": 3,
        }
    )
    for function in (analysis.compare, analysis.compare_cases):
        with pytest.raises(ArgumentError, match="one of the variant values: name the sides"):
            function(counts, "v1", check="ok")
    assert analysis.compare(counts, a="v1", b="v2", check="ok")["b"].iloc[0] == "v2"
