"""evalnb: test AI workflows whose answers change from run to run.

Run cases x variants x repeated samples against a model, keep every sample in
Parquet, and analyse the result honestly in a notebook.

>>> import evalnb
>>> result = evalnb.run("data/cases/shop.jsonl", target, variants=["v1"], repeats=10)

The public names load lazily (PEP 562): ``import evalnb`` costs little more than pandas,
and the statistics, plotting and widget packages load on first use of a name that needs
them.
"""

from __future__ import annotations

import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

if _typing.TYPE_CHECKING:
    from evalnb._exceptions import (
        CasesError,
        EvalnbError,
        StoreError,
        TargetError,
        full_traceback,
    )
    from evalnb._types import (
        Action,
        Case,
        CheckResult,
        Completion,
        Request,
        Sample,
        ToolCall,
        Variant,
    )
    from evalnb.analysis import (
        Calibration,
        GatePolicy,
        Run,
        agreement,
        calibrate,
        compare,
        compare_cases,
        compare_runs,
        costs,
        gate,
        history,
        latency,
        load,
        power,
        ppi_compare,
        ppi_rate,
        rates,
        scores,
        suite_rate,
    )
    from evalnb.cases import load_cases
    from evalnb.checks import FunctionCheck, Outcome, Unscored
    from evalnb.experiment import load_experiment
    from evalnb.plots import (
        plot_agreement,
        plot_compare,
        plot_history,
        plot_intervals,
        plot_latency,
        plot_power,
        variant_colors,
    )
    from evalnb.report import render_report, report_html, report_text
    from evalnb.review import Annotator, annotate
    from evalnb.runner import RunResult, arun, run
    from evalnb.score import score
    from evalnb.targets import Command, Function, OpenAIChat

#: Where each public name lives.
_MODULES = {
    "evalnb._exceptions": (
        "CasesError",
        "EvalnbError",
        "StoreError",
        "TargetError",
        "full_traceback",
    ),
    "evalnb._types": (
        "Action",
        "Case",
        "CheckResult",
        "Completion",
        "Request",
        "Sample",
        "ToolCall",
        "Variant",
    ),
    "evalnb.analysis": (
        "Calibration",
        "GatePolicy",
        "Run",
        "agreement",
        "calibrate",
        "compare",
        "compare_cases",
        "compare_runs",
        "costs",
        "gate",
        "history",
        "latency",
        "load",
        "power",
        "ppi_compare",
        "ppi_rate",
        "rates",
        "scores",
        "suite_rate",
    ),
    "evalnb.cases": ("load_cases",),
    "evalnb.checks": ("FunctionCheck", "Outcome", "Unscored"),
    "evalnb.experiment": ("load_experiment",),
    "evalnb.plots": (
        "plot_agreement",
        "plot_compare",
        "plot_history",
        "plot_intervals",
        "plot_latency",
        "plot_power",
        "variant_colors",
    ),
    "evalnb.report": ("render_report", "report_html", "report_text"),
    "evalnb.review": ("Annotator", "annotate"),
    "evalnb.runner": ("RunResult", "arun", "run"),
    "evalnb.score": ("score",),
    "evalnb.targets": ("Command", "Function", "OpenAIChat"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

#: Subpackages reachable as attributes (``evalnb.suites.path(...)``) without an import.
_SUBMODULES = frozenset(
    (
        "analysis",
        "checks",
        "cli",
        "evidence",
        "export",
        "importers",
        "plots",
        "report",
        "review",
        "standin",
        "store",
        "suites",
        "targets",
    )
)

__all__ = [
    "Action",
    "Annotator",
    "Calibration",
    "Case",
    "CasesError",
    "CheckResult",
    "Command",
    "Completion",
    "EvalnbError",
    "Function",
    "FunctionCheck",
    "GatePolicy",
    "OpenAIChat",
    "Outcome",
    "Request",
    "Run",
    "RunResult",
    "Sample",
    "StoreError",
    "TargetError",
    "ToolCall",
    "Unscored",
    "Variant",
    "agreement",
    "annotate",
    "arun",
    "calibrate",
    "compare",
    "compare_cases",
    "compare_runs",
    "costs",
    "full_traceback",
    "gate",
    "history",
    "latency",
    "load",
    "load_cases",
    "load_experiment",
    "plot_agreement",
    "plot_compare",
    "plot_history",
    "plot_intervals",
    "plot_latency",
    "plot_power",
    "power",
    "ppi_compare",
    "ppi_rate",
    "rates",
    "render_report",
    "report_html",
    "report_text",
    "run",
    "score",
    "scores",
    "suite_rate",
    "variant_colors",
]


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is not None:
        loaded = _importlib.import_module(module)
        # Bind every name of that module at once: later look-ups skip this function, and a
        # submodule that shares a name with a function (annotate) cannot shadow it.
        for other in _MODULES[module]:
            globals()[other] = getattr(loaded, other)
        return globals()[name]
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'evalnb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})


class _Package(_types.ModuleType):
    """``evalnb`` itself: importing the submodule ``evalnb.score`` (or ``evalnb.annotate``)
    must not replace the public function of the same name, as the import system would."""

    def __setattr__(self, name: str, value: _typing.Any) -> None:
        if name in _WHERE and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
