"""Other tools' suites and logs in, evalnb's runs out.

Importers (promptfoo configs, Inspect datasets, openai/evals samples and registry entries,
lm-eval task YAML): suites become a cases file (YAML) and an experiment file (TOML) for
``evalnb run``; logs (Inspect, promptfoo results) become run directories, all through one
writer (``_runs.ImportedRun``) and evalnb's store. What cannot be expressed is listed by
name and place (:class:`Unsupported`, in the one ledger every importer keeps,
:class:`ImportNotes`), in the report and in ``imported.json``. Files from other people are
read within stated caps (:class:`Limits`), ``file://`` references only inside the suite's
folder, and a bad file is one located line. Exporters (CSV, JSONL, Every Eval Ever, Inspect
``precomputed_scores``) read a run through the analysis, so they load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from evalnb.interop._bounded import Limits, parse_size
from evalnb.interop._inspect_dataset import import_inspect
from evalnb.interop._inspect_log import import_inspect_log
from evalnb.interop._lmeval import import_lm_eval
from evalnb.interop._openai_evals import import_openai_evals, import_openai_evals_registry
from evalnb.interop._openai_graders import import_openai_graders
from evalnb.interop._promptfoo import import_promptfoo
from evalnb.interop._promptfoo_results import import_promptfoo_results
from evalnb.interop._suite import ImportNotes, ImportResult, Note, Unsupported

_EXPORTS = ("EEE_SCHEMA_VERSION", "export_eee", "export_inspect_scores", "export_samples")

__all__ = [
    "EEE_SCHEMA_VERSION",
    "ImportNotes",
    "ImportResult",
    "Limits",
    "Note",
    "Unsupported",
    "export_eee",
    "export_inspect_scores",
    "export_samples",
    "import_inspect",
    "import_inspect_log",
    "import_lm_eval",
    "import_openai_evals",
    "import_openai_evals_registry",
    "import_openai_graders",
    "import_promptfoo",
    "import_promptfoo_results",
    "parse_size",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module("evalnb.interop._export"), name)
    raise AttributeError(f"module 'evalnb.interop' has no attribute {name!r}")
