"""Analysis: run directories as frames, and the statistics evalnb reports.

Every statistics function takes a :class:`Run` (from :func:`load`) or a frame and
returns a tidy DataFrame: one row per group, the group keys as columns, and the
same column names throughout (``k``, ``n``, ``estimate``, ``low``, ``high``,
``level``, ``method``...). The arguments follow one order::

    rates(run_or_frame, by=..., *, check=..., level=..., method=...)

the data first, ``by`` second where the function groups, everything else by keyword
(the sides of a comparison too: ``compare(run, a="baseline", b="new")``). Only
:func:`compare_runs` takes two runs as its data, the baseline first.

The names load lazily (PEP 562), listed once in ``__init__.pyi``: ``load`` and ``rates``
(Wilson intervals) need neither scipy nor statsmodels, and the modules that do load them
on first use of a name that needs them.
"""

from __future__ import annotations

import lazy_loader as _lazy

from evalnb.analysis._display import register_formatter as _register_formatter

__getattr__, _dir, __all__ = _lazy.attach_stub(__name__, __file__)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# In a notebook, frames holding model text (slices of evalnb frames too) never typeset "$".
_register_formatter()
