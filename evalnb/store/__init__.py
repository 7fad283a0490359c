"""The run directory: Parquet schemas, manifest, and atomic, private parts.

::

    runs/<run_id>/
      manifest.json            what produced the run
      imported.json            an imported suite's record, kept with the run
      samples/part-*.parquet   one row per sample
      checks/part-*.parquet    one row per (sample, check), long format
      verdicts/part-*.parquet  one row per saved verdict (append-only); schema.parquet empty
      cases/part-*.parquet     one row per case (the manifest's definitions, as a table)
      scores/<label>/          a rescoring: part-*.parquet like checks/, then scoring.json
      shards/                  commit markers of shards run elsewhere (store/shards.py)

Human verdicts go through :class:`VerdictStore` (one part a save, :func:`save_verdict`,
:func:`save_verdicts` for many) and are read back by :func:`verdicts` (the latest per sample
and annotator, or the history); :func:`compact_verdicts` merges their parts. Pairwise
preferences (``preferences/part-*.parquet``) go through :class:`PreferenceStore` the same
way and are read back by :func:`latest_preferences`.

Every file is written under a temporary name and renamed, so a crash never leaves a
torn file. A samples part is the commit of its batch: the runner writes a batch's
checks part first and its samples part second, both with the same name, and readers
ignore a checks part whose samples part is missing. The directory is ``0700`` and
every file ``0600``: answers may hold private text.
"""

from typing import TYPE_CHECKING, Any

from evalnb.store._atomic import atomic_file, write_atomic
from evalnb.store._doctor import QUARANTINE, Problem, diagnose, repair, stopped_writer
from evalnb.store._layout import (
    IMPORTED,
    MANIFEST,
    SCORES,
    SCORING,
    drafts_path,
    imported_path,
    is_run_dir,
    manifest_path,
    part_paths,
    scoring_path,
    write_import_record,
)
from evalnb.store._lock import RunLock
from evalnb.store._manifest import Manifest, schema_markdown
from evalnb.store._provenance import now, provenance
from evalnb.store._rundir import (
    DamagedRunWarning,
    PartialScoringWarning,
    create_run_dir,
    read_manifest,
    read_table,
    remove_orphan_parts,
    run_path,
    sample_keys,
    scorings,
    write_json_atomic,
    write_text_file,
)
from evalnb.store._schema import (
    CASES_SCHEMA,
    CHECKS_SCHEMA,
    DESIGN_COLUMNS,
    KEY,
    SAMPLES_SCHEMA,
    SCHEMA_VERSION,
    TABLES,
    VERDICTS,
    VERDICTS_SCHEMA,
)
from evalnb.store._shards import (
    commit_shard,
    committed_shard,
    fence_shards,
    shard_token,
)
from evalnb.store._writer import RunWriter, cases_table, checks_table, samples_table

if TYPE_CHECKING:
    from evalnb.store._preferences import PREFERENCES as PREFERENCES
    from evalnb.store._preferences import PREFERENCES_SCHEMA as PREFERENCES_SCHEMA
    from evalnb.store._preferences import UNDECIDED as UNDECIDED
    from evalnb.store._preferences import PreferenceStore as PreferenceStore
    from evalnb.store._preferences import latest_preferences as latest_preferences
    from evalnb.store._preferences import preference_history as preference_history
    from evalnb.store._verdicts import UNREVIEWED as UNREVIEWED
    from evalnb.store._verdicts import RunDirectories as RunDirectories
    from evalnb.store._verdicts import VerdictStore as VerdictStore
    from evalnb.store._verdicts import compact_verdicts as compact_verdicts
    from evalnb.store._verdicts import latest_verdicts as latest_verdicts
    from evalnb.store._verdicts import save_verdict as save_verdict
    from evalnb.store._verdicts import save_verdicts as save_verdicts
    from evalnb.store._verdicts import verdict_history as verdict_history
    from evalnb.store._verdicts import verdicts as verdicts

_PREFERENCE_NAMES = frozenset(
    (
        "PREFERENCES",
        "PREFERENCES_SCHEMA",
        "UNDECIDED",
        "PreferenceStore",
        "latest_preferences",
        "preference_history",
    )
)


def __getattr__(name: str) -> Any:
    # The verdict store's names (``TYPE_CHECKING`` above) load on first use: it reads
    # verdicts with pandas, which the runner's side (``import evalnb.runner``) never loads.
    if name in _PREFERENCE_NAMES:  # pairwise preferences, read with pandas too
        from evalnb.store import _preferences

        return getattr(_preferences, name)
    if name in __all__:
        from evalnb.store import _verdicts

        return getattr(_verdicts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CASES_SCHEMA",
    "CHECKS_SCHEMA",
    "DESIGN_COLUMNS",
    "IMPORTED",
    "KEY",
    "MANIFEST",
    "PREFERENCES",
    "PREFERENCES_SCHEMA",
    "QUARANTINE",
    "SAMPLES_SCHEMA",
    "SCHEMA_VERSION",
    "SCORES",
    "SCORING",
    "TABLES",
    "UNDECIDED",
    "UNREVIEWED",
    "VERDICTS",
    "VERDICTS_SCHEMA",
    "DamagedRunWarning",
    "Manifest",
    "PartialScoringWarning",
    "PreferenceStore",
    "Problem",
    "RunDirectories",
    "RunLock",
    "RunWriter",
    "VerdictStore",
    "atomic_file",
    "cases_table",
    "checks_table",
    "commit_shard",
    "committed_shard",
    "compact_verdicts",
    "create_run_dir",
    "diagnose",
    "drafts_path",
    "fence_shards",
    "imported_path",
    "is_run_dir",
    "latest_preferences",
    "latest_verdicts",
    "manifest_path",
    "now",
    "part_paths",
    "preference_history",
    "provenance",
    "read_manifest",
    "read_table",
    "remove_orphan_parts",
    "repair",
    "run_path",
    "sample_keys",
    "samples_table",
    "save_verdict",
    "save_verdicts",
    "schema_markdown",
    "scoring_path",
    "scorings",
    "shard_token",
    "stopped_writer",
    "verdict_history",
    "verdicts",
    "write_atomic",
    "write_import_record",
    "write_json_atomic",
    "write_text_file",
]
