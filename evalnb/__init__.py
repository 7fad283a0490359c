"""evalnb: test AI workflows whose answers change from run to run.

Run cases x variants x repeated samples against a model, keep every sample in
Parquet, and analyse the result honestly in a notebook.

>>> import evalnb
>>> result = evalnb.run("data/cases/shop.jsonl", target, variants=["v1"], repeats=10)

The public names are listed once, in ``__init__.pyi``, and load lazily (PEP 562): ``import
evalnb`` costs little more than pandas, and the statistics, plotting and widget packages
load on first use of a name that needs them. Each name says it is ``evalnb``'s
(``evalnb.Case``, not the private module it lives in), so a module can move inside the
package without a shim.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

import lazy_loader as _lazy

_load, _dir, __all__ = _lazy.attach_stub(__name__, __file__)
__all__ = sorted(__all__)

#: The stages of the flow, reachable as attributes (``evalnb.cases.suites.path(...)``).
_SUBPACKAGES = frozenset(
    (
        "analysis",
        "cases",
        "checks",
        "cli",
        "explorer",
        "integrations",
        "interop",
        "plots",
        "report",
        "review",
        "runner",
        "standin",
        "store",
        "targets",
    )
)


def __getattr__(name: str) -> _Any:
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"{__name__}.{name}")
    value = _load(name)
    if getattr(value, "__module__", "").startswith(f"{__name__}."):
        value.__module__ = __name__
    # Bound once: later look-ups skip this function, and ``evalnb.compare = f`` works.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})
