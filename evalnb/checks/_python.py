"""Python checks named by import path, so that they persist: recorded in the manifest and
run again by ``evalnb score``.

``{"type": "python", "function": "mychecks:polite", "args": {"words": ["please"]}}`` looks
for ``mychecks.py`` (or the package ``mychecks/``) in the cases file's folder first, then
imports ``mychecks`` as usual. The function is called like any Python check: ``fn(answer,
**args)``, or ``fn(answer, sample, **args)`` when it takes a second positional parameter,
with ``case=`` too when it has a parameter of that name; it returns None/True, False or a
problem, a score in [0, 1] (it passes at ``threshold``, default 0.5; a spec with a
``threshold`` is graded: an incomplete sample scores 0), :class:`Unscored` or an
:class:`Outcome`. The spec records the folder it was found in (``base``), so a rescoring
finds it from anywhere.

Loading a cases file only finds the module (its file in the folder, or an importable
name); its code runs when a run or a scoring starts (:func:`load_functions`), never
when the cases are loaded, listed or imported.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from evalnb._exceptions import ArgumentError
from evalnb._types import Sample
from evalnb.checks._base import (
    CHECK_TIMEOUT,
    CheckReturn,
    SpecCheck,
    call_signature,
    register,
    threshold_value,
)
from evalnb.checks._lexical import _seconds, _text

__all__ = ["PythonCheck", "load_function", "load_functions"]


def _function_path(value: Any) -> str:
    text = _text(value)
    module, colon, attr = text.partition(":")
    if not colon or not module or not attr or "<" in attr:
        raise ArgumentError("must be an import path 'module:function' (a module-level function)")
    return text


def _args(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ArgumentError("must be an object of keyword: value")
    return value


def _module_file(base: Path, module: str) -> Path | None:
    stem = base.joinpath(*module.split("."))
    for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _load_file(path: Path, module: str) -> ModuleType:
    # A private name per file: two folders may both hold a mychecks.py.
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"_evalnb_checks_{digest}_{module.replace('.', '_')}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        del sys.modules[name]
        raise
    return loaded


def _findable(path: str, base: Path | None) -> Path | None:
    """The file of the module ``path`` names in ``base``, or None when it is importable
    from ``sys.path``; a ``ValueError`` when neither. Runs none of its code."""
    module_name = path.partition(":")[0]
    found = _module_file(base, module_name) if base is not None else None
    if found is not None:
        return found
    try:
        spec = importlib.util.find_spec(module_name.split(".")[0])
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        where = f" (not in {base} either)" if base is not None else ""
        raise ArgumentError(f"cannot be found: no module {module_name!r}{where}")
    return None


def load_functions(by_case: Mapping[str, Iterable[Any]]) -> None:
    """Import the functions the ``python`` checks of each case (``{case id: checks}``)
    name: called when a run or a scoring starts, so that a module that fails to import
    stops it at once, before any sample, with one line naming the case and the check."""
    for case_id, checks in by_case.items():
        for check in checks:
            if isinstance(check, PythonCheck):
                try:
                    check.function  # noqa: B018  (loads it)
                except ArgumentError as exc:
                    raise ArgumentError(f"case {case_id!r}: {exc}") from None


def load_function(path: str, base: Path | None = None) -> tuple[Callable[..., Any], Path | None]:
    """The function ``module:attr`` names, and the folder its module was found in (None
    when it was imported from ``sys.path``). Errors are ``ValueError`` saying why."""
    module_name, _, attr = path.partition(":")
    found = _module_file(base, module_name) if base is not None else None
    try:
        module = _load_file(found, module_name) if found else importlib.import_module(module_name)
    except Exception as exc:
        where = f" (not in {base} either)" if base is not None else ""
        raise ArgumentError(
            f"cannot be imported: {type(exc).__name__}: {exc}{where}".replace("\n", " ")
        ) from None
    function: Any = module
    for part in attr.split("."):
        function = getattr(function, part, None)
        if function is None:
            raise ArgumentError(f"names nothing: {module_name} has no {attr!r}")
    if not callable(function):
        raise ArgumentError(f"names {type(function).__name__}, not a function")
    return function, (base.resolve() if found is not None and base is not None else None)


@register
class PythonCheck(SpecCheck):
    """A Python function named by import path: ``{"type": "python", "function":
    "mychecks:polite", "args": {...}, "threshold": 0.8}``."""

    type = "python"
    required = {"function": _function_path}
    optional = {"args": _args, "threshold": threshold_value, "base": _text, "timeout": _seconds}
    bounded = False

    def validate(self, where: str) -> None:
        self.timeout = self.values.get("timeout", CHECK_TIMEOUT)
        given = self.values.get("base")
        self._from = Path(given) if given is not None else self.base
        try:
            found = _findable(self.values["function"], self._from)
        except ValueError as exc:
            raise ArgumentError(
                f"'{where}.function' {exc}; got {self.values['function']!r}"
            ) from None
        if found is not None and self._from is not None:
            self.spec["base"] = str(self._from.resolve())
        self.graded = "threshold" in self.values
        self.threshold = self.values.get("threshold", self.threshold)
        self._loaded: tuple[Callable[..., Any], bool, bool] | None = None
        # Bound to each case: whether the function reads it is known only once loaded.
        self.reads_case = True

    @property
    def function(self) -> Callable[..., Any]:
        """The function, imported the first time it is asked for (see the module)."""
        return self._load()[0]

    def _load(self) -> tuple[Callable[..., Any], bool, bool]:
        if self._loaded is None:
            try:
                function, _ = load_function(self.values["function"], self._from)
            except ValueError as exc:
                raise ArgumentError(
                    f"'{self.where}.function' {exc}; got {self.values['function']!r}"
                ) from None
            takes_sample, reads_case = call_signature(function, self.values.get("args", {}))
            self._loaded = (function, takes_sample, reads_case)
        return self._loaded

    def label(self) -> str:
        return str(self.values["function"])

    def __call__(self, sample: Sample) -> CheckReturn:
        function, takes_sample, reads_case = self._load()
        kwargs = dict(self.values.get("args", {}))
        if reads_case:
            kwargs["case"] = self.bound_case()
        # A user's function may return anything: the runner checks the value it gets.
        if takes_sample:
            return cast(CheckReturn, function(sample.answer or "", sample, **kwargs))
        return cast(CheckReturn, function(sample.answer or "", **kwargs))
