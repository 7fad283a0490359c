"""Other tools' suites and logs in: each importer writes files evalnb reads as its own.

Suites become a cases file (YAML) and an experiment file (TOML) for ``evalnb run``; logs
become run directories, written through evalnb's store. What cannot be expressed is
listed by name and place (:class:`Unsupported`), in the report and in ``imported.json``.
"""

from evalnb.importers._suite import ImportResult, Unsupported
from evalnb.importers.inspect_dataset import import_inspect
from evalnb.importers.inspect_log import import_inspect_log
from evalnb.importers.openai_evals import import_openai_evals
from evalnb.importers.promptfoo import import_promptfoo
from evalnb.importers.promptfoo_results import import_promptfoo_results

__all__ = [
    "ImportResult",
    "Unsupported",
    "import_inspect",
    "import_inspect_log",
    "import_openai_evals",
    "import_promptfoo",
    "import_promptfoo_results",
]
