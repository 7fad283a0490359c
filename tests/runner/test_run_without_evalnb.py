"""A run directory read by DuckDB and Polars in a process that never imports evalnb:
samples, checks and the cases/ table join on their columns alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalnb.cli import main

DATA = Path(__file__).parents[1] / "data" / "peers"

DUCKDB = """
import json, sys, duckdb
run = sys.argv[1]
rows = duckdb.sql(f'''
    SELECT s.case_id, k."check", cs."group", cs.split, count(*) AS n,
           sum(CASE WHEN k.outcome THEN 1 ELSE 0 END) AS k
    FROM read_parquet('{run}/samples/*.parquet') s
    JOIN read_parquet('{run}/checks/*.parquet') k USING (run_id, case_id, variant, repeat)
    JOIN read_parquet('{run}/cases/*.parquet') cs USING (run_id, case_id)
    GROUP BY ALL ORDER BY 1, 2
''').fetchall()
samples = f"read_parquet('{run}/samples/*.parquet')"
(orders,) = duckdb.sql(f'SELECT max("order") FROM {samples}').fetchall()
verdicts_glob = f"read_parquet('{run}/verdicts/*.parquet')"
(verdicts,) = duckdb.sql(f"SELECT count(*) FROM {verdicts_glob}").fetchall()
print(json.dumps({"rows": rows, "max_order": orders[0], "verdicts": verdicts[0],
                  "evalnb": any(m.startswith("evalnb") for m in sys.modules)}))
"""

POLARS = """
import json, sys, polars as pl
run = sys.argv[1]
samples = pl.scan_parquet(f"{run}/samples/*.parquet")
checks = pl.scan_parquet(f"{run}/checks/*.parquet")
cases = pl.scan_parquet(f"{run}/cases/*.parquet")
out = (
    samples.join(checks, on=["run_id", "case_id", "variant", "repeat"])
    .join(cases, on=["run_id", "case_id"])
    .group_by(["case_id", "check", "group", "split"])
    .agg(pl.len().alias("n"), pl.col("outcome").cast(pl.Int64).sum().alias("k"))
    .sort(["case_id", "check"])
    .collect()
)
verdicts = pl.scan_parquet(f"{run}/verdicts/*.parquet").collect()
print(json.dumps({"rows": [list(r) for r in out.rows()], "verdicts": verdicts.height,
                  "evalnb": any(m.startswith("evalnb") for m in sys.modules)}))
"""


@pytest.fixture(scope="module")
def run_dir(standin, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    cases = root / "cases.yaml"
    cases.write_text(
        "cases:\n"
        "- {id: a, prompt: 'say hello', group: g1, split: dev, tags: [x],"
        " checks: [{type: contains, text: hello}]}\n"
        "- {id: b, prompt: 'say bye', group: g1, split: heldout,"
        " checks: [{type: contains, text: bye}, {type: word_count, max: 50}]}\n",
        encoding="utf-8",
    )
    out = root / "run"
    argv = ["run", str(cases), "--base-url", standin.base_url, "--model", "echo"]
    assert main([*argv, "--repeats", "3", "--out", str(out)]) == 0
    return out


def _query(code: str, run_dir: Path) -> dict:
    # -I: isolated, so neither the working directory nor PYTHONPATH can bring evalnb in.
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(run_dir)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


EXPECTED = [
    ["a", "contains", "g1", "dev", 3, 3],
    ["b", "contains", "g1", "heldout", 3, 3],
    ["b", "word_count", "g1", "heldout", 3, 3],
]


def test_duckdb_joins_samples_checks_and_cases(run_dir: Path) -> None:
    found = _query(DUCKDB, run_dir)
    assert found["evalnb"] is False
    assert found["rows"] == EXPECTED and found["max_order"] == 5
    assert found["verdicts"] == 0  # the empty verdicts part keeps the glob working


def test_polars_joins_samples_checks_and_cases(run_dir: Path) -> None:
    found = _query(POLARS, run_dir)
    assert found["evalnb"] is False
    assert found["rows"] == EXPECTED and found["verdicts"] == 0
