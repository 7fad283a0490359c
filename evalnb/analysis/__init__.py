"""Analysis: run directories as frames, and the statistics evalnb reports.

Every statistics function takes a :class:`Run` (from :func:`load`) or a frame and
returns a tidy DataFrame: one row per group, the group keys as columns, and the
same column names throughout (``k``, ``n``, ``estimate``, ``low``, ``high``,
``level``, ``method``...). The arguments follow one order::

    rates(run_or_frame, by=..., *, check=..., level=..., method=...)

the data first, ``by`` second where the function groups, everything else by keyword
(the sides of a comparison too: ``compare(run, a="baseline", b="new")``). Only
:func:`compare_runs` takes two runs as its data, the baseline first.
"""

from evalnb.analysis._agreement import agreement, normalise_answer
from evalnb.analysis._calibrate import Calibration, calibrate
from evalnb.analysis._compare import compare, compare_cases
from evalnb.analysis._cost import costs, load_prices
from evalnb.analysis._display import register_formatter as _register_formatter
from evalnb.analysis._flaky import flakiness
from evalnb.analysis._frames import Run, load
from evalnb.analysis._gate import GatePolicy, format_gate, gate
from evalnb.analysis._history import history
from evalnb.analysis._latency import latency
from evalnb.analysis._plan import review_plan
from evalnb.analysis._power import power
from evalnb.analysis._ppi import ppi_compare, ppi_rate
from evalnb.analysis._preference import preferences
from evalnb.analysis._race import Best, race
from evalnb.analysis._rates import proportion_interval, rates
from evalnb.analysis._runs import compare_runs
from evalnb.analysis._scores import scores
from evalnb.analysis._sequence import Decided
from evalnb.analysis._settled import UntilSettled
from evalnb.analysis._stopped import confidence_sequence
from evalnb.analysis._suite import suite_rate

__all__ = [
    "Best",
    "Calibration",
    "Decided",
    "GatePolicy",
    "Run",
    "UntilSettled",
    "agreement",
    "calibrate",
    "compare",
    "compare_cases",
    "compare_runs",
    "confidence_sequence",
    "costs",
    "flakiness",
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
    "preferences",
    "proportion_interval",
    "race",
    "rates",
    "review_plan",
    "scores",
    "suite_rate",
]

# In a notebook, frames holding model text (slices of evalnb frames too) never typeset "$".
_register_formatter()
