"""Checks: what is tested on every sample, and how outcomes are recorded.

A check is any object with ``name``, ``type``, ``spec`` (JSON-ready), ``applies``
(whether it can be scored for its case at all) and one method, ``__call__(sample)``.
Check specs in a cases file name a registered ``type``; new types come in with
:func:`register`. Plain Python callables become :class:`FunctionCheck`.

``None`` or ``True`` means fine, ``False`` or a short problem message means a failure,
a number in [0, 1] is a score (graded: it passes at the check's threshold),
:class:`Unscored` means the check does not apply, and :class:`Outcome` carries evidence.

Names. A check is named by its type (``contains``) unless the spec gives a ``name``;
names never carry per-case values. Names must be unique within a case, so two checks of
one type in a case need a ``name`` each but one (an error says which).
"""

from __future__ import annotations

# The modules below register their check types on import.
from evalnb.checks import _answers as _answers
from evalnb.checks import _extract as _extract
from evalnb.checks import _graders as _graders
from evalnb.checks import _javascript as _javascript
from evalnb.checks import _judge as _judge
from evalnb.checks import _lexical as _lexical
from evalnb.checks import _observed as _observed
from evalnb.checks import _openai_grader as _openai_grader
from evalnb.checks import _promptfoo as _promptfoo
from evalnb.checks import _python as _python
from evalnb.checks import _reference as _reference
from evalnb.checks import _similar as _similar
from evalnb.checks import _trace as _trace
from evalnb.checks._base import (
    CHECK_TIMEOUT,
    THRESHOLD,
    Check,
    CheckReturn,
    CheckSpec,
    CheckValue,
    FunctionCheck,
    Outcome,
    SpecCheck,
    Unscored,
    check_types,
    register,
)
from evalnb.checks._compare import acompare, comparing_checks
from evalnb.checks._engine import (
    arun_checks,
    as_check,
    bind_check,
    build_check,
    build_checks,
    built_cases,
    checks_for,
    run_checks,
    unique_names,
)
from evalnb.checks._judge import JUDGE
from evalnb.checks._openai_grader import grader_problem as openai_grader_problem
from evalnb.checks._promptfoo import PromptfooEngine, find_promptfoo, no_network, quiet_env
from evalnb.checks._promptfoo_code import assertion_code as promptfoo_code
from evalnb.checks._promptfoo_code import template_hazard
from evalnb.checks._python import load_functions
from evalnb.checks._similar import EMBEDDINGS, EMBEDDINGS_URL_ENV
from evalnb.checks._text_similarity import engine as similarity_engine
from evalnb.checks._trust import require_trust

__all__ = [
    "CHECK_TIMEOUT",
    "EMBEDDINGS",
    "EMBEDDINGS_URL_ENV",
    "JUDGE",
    "THRESHOLD",
    "Check",
    "CheckReturn",
    "CheckSpec",
    "CheckValue",
    "FunctionCheck",
    "Outcome",
    "PromptfooEngine",
    "SpecCheck",
    "Unscored",
    "acompare",
    "arun_checks",
    "as_check",
    "bind_check",
    "build_check",
    "build_checks",
    "built_cases",
    "check_types",
    "checks_for",
    "comparing_checks",
    "find_promptfoo",
    "load_functions",
    "no_network",
    "openai_grader_problem",
    "promptfoo_code",
    "quiet_env",
    "register",
    "require_trust",
    "run_checks",
    "similarity_engine",
    "template_hazard",
    "unique_names",
]
