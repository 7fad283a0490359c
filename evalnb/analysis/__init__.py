"""Analysis: run directories as frames, and the statistics evalnb reports.

Every statistics function takes a :class:`Run` (from :func:`load`) or a frame and
returns a tidy DataFrame: one row per group, the group keys as columns, and the
same column names throughout (``k``, ``n``, ``estimate``, ``low``, ``high``,
``level``, ``method``...). Keywords are shared too: ``by=``, ``check=``,
``level=``, ``method=``.
"""

from evalnb.analysis.agreement import agreement, normalise_answer
from evalnb.analysis.calibrate import Calibration, calibrate
from evalnb.analysis.compare import compare, compare_cases
from evalnb.analysis.frames import Run, load
from evalnb.analysis.gate import (
    GatePolicy,
    add_gate_arguments,
    format_gate,
    gate,
    gate_command,
)
from evalnb.analysis.latency import latency
from evalnb.analysis.power import power
from evalnb.analysis.rates import proportion_interval, rates
from evalnb.analysis.report import (
    add_report_arguments,
    report_command,
    report_html,
    report_text,
)
from evalnb.analysis.suite import suite_rate

__all__ = [
    "Calibration",
    "GatePolicy",
    "Run",
    "add_gate_arguments",
    "add_report_arguments",
    "agreement",
    "calibrate",
    "compare",
    "compare_cases",
    "format_gate",
    "gate",
    "gate_command",
    "latency",
    "load",
    "normalise_answer",
    "power",
    "proportion_interval",
    "rates",
    "report_command",
    "report_html",
    "report_text",
    "suite_rate",
]
