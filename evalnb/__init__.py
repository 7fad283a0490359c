"""evalnb: test AI workflows whose answers change from run to run.

Run cases x variants x repeated samples against a model, keep every sample in
Parquet, and analyse the result honestly in a notebook.

>>> import evalnb
>>> result = evalnb.run("data/cases/shop.jsonl", target, variants=["v1"], repeats=10)
"""

from __future__ import annotations

from evalnb._exceptions import CasesError, EvalnbError, StoreError, TargetError
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
    gate,
    latency,
    load,
    power,
    rates,
    report_html,
    report_text,
    suite_rate,
)
from evalnb.annotate import Annotator, annotate
from evalnb.cases import load_cases
from evalnb.checks import FunctionCheck, Outcome, Unscored
from evalnb.experiment import load_experiment
from evalnb.plots import (
    plot_agreement,
    plot_compare,
    plot_intervals,
    plot_latency,
    plot_power,
    variant_colors,
)
from evalnb.runner import RunResult, arun, run
from evalnb.score import score
from evalnb.targets import Command, Function, OpenAIChat

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
    "gate",
    "latency",
    "load",
    "load_cases",
    "load_experiment",
    "plot_agreement",
    "plot_compare",
    "plot_intervals",
    "plot_latency",
    "plot_power",
    "power",
    "rates",
    "report_html",
    "report_text",
    "run",
    "score",
    "suite_rate",
    "variant_colors",
]
