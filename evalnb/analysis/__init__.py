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
from evalnb.analysis.cost import costs, load_prices
from evalnb.analysis.frames import Run, load
from evalnb.analysis.gate import GatePolicy, format_gate, gate
from evalnb.analysis.history import history
from evalnb.analysis.latency import latency
from evalnb.analysis.power import power
from evalnb.analysis.ppi import ppi_compare, ppi_rate
from evalnb.analysis.rates import proportion_interval, rates
from evalnb.analysis.runs import compare_runs
from evalnb.analysis.scores import scores
from evalnb.analysis.suite import suite_rate

__all__ = [
    "Calibration",
    "GatePolicy",
    "Run",
    "agreement",
    "calibrate",
    "compare",
    "compare_cases",
    "compare_runs",
    "costs",
    "format_gate",
    "gate",
    "history",
    "latency",
    "load",
    "load_prices",
    "normalise_answer",
    "power",
    "ppi_compare",
    "ppi_rate",
    "proportion_interval",
    "rates",
    "scores",
    "suite_rate",
]
