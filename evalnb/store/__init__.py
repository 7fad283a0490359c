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

Every file is written under a temporary name and renamed, so a crash never leaves a
torn file. A samples part is the commit of its batch: the runner writes a batch's
checks part first and its samples part second, both with the same name, and readers
ignore a checks part whose samples part is missing. The directory is ``0700`` and
every file ``0600``: answers may hold private text.
"""

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
    KEY,
    SAMPLES_SCHEMA,
    SCHEMA_VERSION,
    TABLES,
    VERDICTS,
    VERDICTS_SCHEMA,
    schema_markdown,
)
from evalnb.store._shards import (
    commit_shard,
    committed_shard,
    fence_shards,
    shard_token,
)
from evalnb.store._writer import RunWriter, cases_table, checks_table, samples_table

__all__ = [
    "CASES_SCHEMA",
    "CHECKS_SCHEMA",
    "IMPORTED",
    "KEY",
    "MANIFEST",
    "QUARANTINE",
    "SAMPLES_SCHEMA",
    "SCHEMA_VERSION",
    "SCORES",
    "SCORING",
    "TABLES",
    "VERDICTS",
    "VERDICTS_SCHEMA",
    "DamagedRunWarning",
    "PartialScoringWarning",
    "Problem",
    "RunLock",
    "RunWriter",
    "atomic_file",
    "cases_table",
    "checks_table",
    "commit_shard",
    "committed_shard",
    "create_run_dir",
    "diagnose",
    "drafts_path",
    "fence_shards",
    "imported_path",
    "is_run_dir",
    "manifest_path",
    "part_paths",
    "read_manifest",
    "read_table",
    "remove_orphan_parts",
    "repair",
    "run_path",
    "sample_keys",
    "samples_table",
    "schema_markdown",
    "scoring_path",
    "scorings",
    "shard_token",
    "stopped_writer",
    "write_atomic",
    "write_import_record",
    "write_json_atomic",
    "write_text_file",
]
