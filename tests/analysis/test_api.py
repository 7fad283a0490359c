"""The public face of evalnb.analysis: names, signatures and documented result columns."""

from __future__ import annotations

import inspect

import evalnb.analysis as analysis

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
    public = {
        name
        for name, value in vars(analysis).items()
        if not name.startswith("_") and not inspect.ismodule(value)
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
            assert parameters["method"].default == "wilson", name
        assert "by" in parameters or name == "power", name
