"""The Parquet schemas of a run directory, in one place, with the key and the verdicts."""

from __future__ import annotations

import pyarrow as pa

__all__ = [
    "ADDED_COLUMNS",
    "CASES_SCHEMA",
    "CHECKS_SCHEMA",
    "DESIGN_COLUMNS",
    "KEY",
    "SAMPLES_SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "VERDICTS",
    "VERDICTS_SCHEMA",
    "tables_markdown",
]

#: The columns that name one sample, in every table.
KEY = ["run_id", "case_id", "variant", "repeat"]
#: Every verdict a person can give. ``needs_review`` is neither a pass nor a fail.
VERDICTS = ("pass", "fail", "needs_review")
#: The verdict columns that record a review's design (null in parts saved before them).
DESIGN_COLUMNS = ["design", "seed", "rank", "population", "size", "threshold", "inclusion"]

SCHEMA_VERSION = 1
_META = {b"evalnb.schema_version": str(SCHEMA_VERSION).encode()}
_TS = pa.timestamp("us", tz="UTC")


def _field(name: str, type_: pa.DataType, doc: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={b"doc": doc.encode()})


_KEY = [
    _field("run_id", pa.string(), "Run identifier (the run directory's name).", False),
    _field("case_id", pa.string(), "Case id from the cases file.", False),
    _field("variant", pa.string(), "Variant name.", False),
    _field("repeat", pa.int32(), "Repeat index, 0-based.", False),
]

TOOL_CALL = pa.struct([("id", pa.string()), ("name", pa.string()), ("arguments", pa.string())])

ACTION = pa.struct(
    [
        ("tool", pa.string()),
        ("arguments", pa.string()),
        ("path", pa.string()),
        ("error", pa.bool_()),
        ("result", pa.string()),
    ]
)

SAMPLES_SCHEMA = pa.schema(
    [
        *_KEY,
        _field("order", pa.int64(), "Position in the planned execution order.", False),
        _field("started_at", _TS, "When the target was called (UTC).", False),
        _field("latency_ms", pa.float64(), "Wall time of the whole attempt, retries included."),
        _field(
            "status",
            pa.string(),
            "completed, or why not: error, timeout, empty, budget, malformed.",
            False,
        ),
        _field("error", pa.string(), "Error text of an incomplete sample."),
        _field("answer", pa.string(), "The final answer text (null when none came back)."),
        _field("prompt", pa.string(), "The last user message exactly as sent."),
        _field("request", pa.string(), "JSON of the request sent, secrets removed."),
        _field("response", pa.string(), "JSON (or raw text) of the response received."),
        _field("model", pa.string(), "Model name the server reported."),
        _field("finish_reason", pa.string(), "Why generation stopped (stop, length, ...)."),
        _field("tool_calls", pa.list_(TOOL_CALL), "Tool calls the model requested, in order."),
        _field("retries", pa.int32(), "Retries the target made for this sample."),
        _field("prompt_tokens", pa.int64(), "Prompt tokens (usage), when reported."),
        _field("completion_tokens", pa.int64(), "Completion tokens (usage), when reported."),
        _field("total_tokens", pa.int64(), "Total tokens (usage), when reported."),
        _field("exit_code", pa.int32(), "Command targets: the process exit code."),
        _field("stdout", pa.string(), "Command targets: captured stdout (truncated)."),
        _field("stderr", pa.string(), "Command targets: captured stderr (truncated)."),
        _field("stdout_truncated", pa.bool_(), "Command targets: stdout hit its cap."),
        _field("stderr_truncated", pa.bool_(), "Command targets: stderr hit its cap."),
        _field("trace", pa.string(), "Command targets: the JSONL trace file (truncated)."),
        _field("trace_truncated", pa.bool_(), "Command targets: the trace hit its cap."),
        _field("fingerprint", pa.string(), "First 12 hex of SHA-256 of the prompt as sent."),
        _field("canonical", pa.string(), "Canonical answer for agreement (see checks)."),
        _field("requested", pa.list_(ACTION), "Tool calls the model requested, in order."),
        _field("executed", pa.list_(ACTION), "Tool calls the application executed, in order."),
        _field(
            "evidence_problem", pa.string(), "Why the trace could not be read, if it could not."
        ),
        _field("facts", pa.string(), "JSON of what the target observed (e.g. containment)."),
        _field(
            "choice_order",
            pa.list_(pa.int32()),
            "Shuffled multiple choice: the case's choices in the order shown, as indexes "
            "(null: as written).",
        ),
        _field(
            "cached",
            pa.bool_(),
            "True: served from the development cache (--cache); false: asked of the target "
            "with a cache in use; null: no cache, no completion, or a run from before the "
            "column.",
        ),
    ],
    metadata=_META,
)

#: Columns added after the table's first release: parts written before them lack them and
#: read as null (they are never a sign of a damaged part).
ADDED_COLUMNS = frozenset({"cached", *DESIGN_COLUMNS})

CHECKS_SCHEMA = pa.schema(
    [
        *_KEY,
        _field("check", pa.string(), "Check name, unique within its case.", False),
        _field("check_type", pa.string(), "Check type (contains, regex, python, ...).", False),
        _field("outcome", pa.bool_(), "True pass, False fail, null unscored (not applicable)."),
        _field(
            "score",
            pa.float64(),
            "Graded checks: the score in [0, 1] (outcome = score >= threshold); else null.",
        ),
        _field("detail", pa.string(), "The problem found, or why it was unscored."),
        _field("evidence", pa.string(), "JSON of what the check relied on (a judge's exchange)."),
    ],
    metadata=_META,
)

VERDICTS_SCHEMA = pa.schema(
    [
        *_KEY,
        _field("annotator", pa.string(), "Who gave the verdict.", False),
        _field(
            "verdict",
            pa.string(),
            "pass, fail or needs_review; unreviewed takes an earlier verdict back.",
            False,
        ),
        _field("reason", pa.string(), "The reviewer's short reason."),
        _field("created_at", _TS, "When the verdict was saved (UTC).", False),
        _field(
            "design",
            pa.string(),
            "How the review chose its samples: random, stratified, active or queue (the "
            "panel's order); null when none was recorded (verdicts saved without one).",
        ),
        _field("seed", pa.int64(), "The seed of the design's random order."),
        _field("rank", pa.int64(), "The sample's place in the design's order, 0-based."),
        _field("population", pa.int64(), "How many samples the design ordered."),
        _field(
            "size",
            pa.float64(),
            "The sample's size in the design (sizes sum to 1; inclusion = min(1, threshold "
            "x size)).",
        ),
        _field(
            "threshold",
            pa.float64(),
            "The design's key of the next sample in its order: the threshold of the prefix "
            "that ends at this sample (inf after the last).",
        ),
        _field(
            "inclusion",
            pa.float64(),
            "The probability that the prefix of the design's order ending at this sample "
            "includes it; null for queue order.",
        ),
    ],
    metadata=_META,
)

TABLES = {"samples": SAMPLES_SCHEMA, "checks": CHECKS_SCHEMA, "verdicts": VERDICTS_SCHEMA}

#: The case definitions, one row per case (also in the manifest): written once as a run
#: starts, so other engines join samples and checks to cases without reading JSON.
CASES_SCHEMA = pa.schema(
    [
        _field("run_id", pa.string(), "Run identifier.", False),
        _field("case_id", pa.string(), "Case id from the cases file.", False),
        _field("group", pa.string(), "Cluster key (the case id when not given).", False),
        _field("split", pa.string(), "dev or heldout.", False),
        _field("tags", pa.list_(pa.string()), "The case's tags."),
        _field("target", pa.string(), "JSON of the reference answer(s); null when none."),
        _field("choices", pa.list_(pa.string()), "Multiple-choice options; null when none."),
        _field("vars", pa.string(), "JSON object of the template variables."),
        _field("metadata", pa.string(), "JSON object of the case's metadata."),
        _field("prompt", pa.string(), "The prompt text (null for a chat case)."),
        _field("review", pa.string(), "Instruction for a human reviewer."),
    ],
    metadata=_META,
)

#: Files of a run directory besides the tables above, for the schema page.
_OTHER_FILES = [
    "## cases/part-*.parquet",
    "",
    "One row per case, written as a run starts (the definitions are also in the manifest).",
    "",
    "{cases}",
    "## verdicts/schema.parquet",
    "",
    "An empty part with the verdicts schema, so that a glob such as",
    "`read_parquet('RUN/verdicts/*.parquet')` works before the first verdict is saved.",
    "",
    "## scores/<label>/part-*.parquet and scores/<label>/scoring.json",
    "",
    "A rescoring (`evalnb score`, `evalnb.score()`): parts with the checks schema above,",
    "then `scoring.json` (`created_at`, the checks given), written last; a rescoring without",
    "it never committed and is ignored. `scoring.json` also records `samples` (how many it",
    "scored), `planned`, `run_status` and `partial` (true when the run was not complete:",
    "`--partial`). `load(..., scoring=LABEL)` picks one; by default the newest committed one",
    "that covers every sample of the run (a partial one never).",
    "",
    "## shards/",
    "",
    "Present when a run was sharded over a cluster (`run(cluster=...)`, `--dask`).",
    "`shards/fence.json` holds the session allowed to commit; `shards/<shard>.json` is a",
    "shard's commit marker, created exclusively, listing its parts",
    "(`samples/part-shard-<shard>-<attempt>-*.parquet` and the same under `checks/`). A shard",
    "part counts only once a marker lists it: readers ignore the others, and `evalnb doctor`",
    "reports them as orphans. The manifest's `clusters` list records each cluster session",
    "(scheduler address without credentials, workers, threads, shard size, versions).",
    "",
    "## .lock",
    "",
    "The run's lock file: the writer (a run, a resume, `score`, `doctor --repair`) holds an",
    "advisory lock on it and writes its PID, job and start time there; a second writer is",
    "refused in one line naming that PID.",
    "",
]


def tables_markdown() -> str:
    """The tables' schemas and the other files as Markdown (the head of docs/schema.md)."""
    lines = [
        "# Run directory schema",
        "",
        f"Schema version {SCHEMA_VERSION}. Generated by `evalnb.store.schema_markdown()`",
        "(`make schema-doc`); a test keeps this page and the code in step.",
        "",
    ]
    for table, schema in TABLES.items():
        lines += [f"## {table}/part-*.parquet", "", *_columns(schema), ""]
    cases = "\n".join(_columns(CASES_SCHEMA)) + "\n"
    lines += [line.replace("{cases}", cases) for line in _OTHER_FILES]
    return "\n".join(lines)


def _columns(schema: pa.Schema) -> list[str]:
    lines = ["| column | type | null | meaning |", "|---|---|---|---|"]
    for field in schema:
        doc = (field.metadata or {}).get(b"doc", b"").decode()
        null = "yes" if field.nullable else "no"
        lines.append(f"| `{field.name}` | `{field.type}` | {null} | {doc} |")
    return lines
