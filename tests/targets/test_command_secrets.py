"""A ``Command`` harness that prints its whole environment: the key named by
``--api-key-env`` reaches it but is stored nowhere, and the inherited secrets the name
filter must catch (``OPENAI_KEY``, ``AWS_ACCESS_KEY_ID``, a ``DB_URL`` with a password) never
reach it and are stored nowhere either: not in the run directory, any export, the HTML
report or the review panel."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalnb._secrets import secret_env, secret_env_name
from evalnb.cli import main
from evalnb.review import annotate

HARNESS = """\
import os, sys
lines = [f"{name}={value}" for name, value in sorted(os.environ.items())]
print("\\n".join(lines))
print("\\n".join(lines), file=sys.stderr)
"""


def _files_holding(folder: Path, values: dict[str, str]) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".parquet":  # compressed pages: read the values
            data = json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
        found += [f"{path}: {name}" for name, value in values.items() if value.encode() in data]
    return found


@pytest.fixture
def environment(monkeypatch):
    password = f"pw-{secrets.token_hex(8)}"
    values = {
        # Named so no filter would withhold it: only --api-key-env keeps it out.
        "EVALNB_MODEL_AUTH": f"sk-model-{secrets.token_hex(12)}",
        "OPENAI_KEY": f"sk-openai-{secrets.token_hex(12)}",
        "AWS_ACCESS_KEY_ID": f"AKIA{secrets.token_hex(8).upper()}",
        "DB_URL": f"postgres://evalnb:{password}@db.internal:5432/app",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("EVALNB_HARMLESS", "plain-visible-value")
    return values, password


def test_no_secret_of_the_environment_is_stored_anywhere(tmp_path, environment, capsys):
    values, password = environment
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(json.dumps({"id": f"c{i}", "prompt": f"env {i}"}) + "\n" for i in range(3))
    )
    run = tmp_path / "run"
    argv = ["run", str(cases), "--command", f"{sys.executable} {script}"]
    argv += ["--api-key-env", "EVALNB_MODEL_AUTH", "--variant", "a", "--variant", "b"]
    argv += ["--out", str(run), "--no-progress"]
    assert main(argv) == 0

    exports = tmp_path / "exports"
    exports.mkdir()
    for fmt, out in (
        ("csv", exports / "run.csv"),
        ("jsonl", exports / "run.jsonl"),
        ("eee", exports / "eee"),
        ("inspect-scores", exports / "scores.json"),
    ):
        extra = ["--variant", "a"] if fmt == "inspect-scores" else []
        assert main(["export", str(run), "--format", fmt, "--out", str(out), *extra]) == 0, fmt
    report = tmp_path / "report.html"
    assert main(["report", str(run), "--html", str(report)]) == 0
    printed = capsys.readouterr()

    panel = annotate(run, annotator="ana", advance=False)
    pages = []
    for _ in range(panel.count):
        widgets = (panel.header, panel.body, panel.earlier, panel.status, panel.children[0])
        pages.append("".join(w.value for w in widgets))
        panel.next()
    (tmp_path / "panel.html").write_text("\n".join(pages))

    secrets_only = {**values, "DB_URL password": password}
    assert _files_holding(run, secrets_only) == []
    assert _files_holding(exports, secrets_only) == []
    assert _files_holding(tmp_path, secrets_only) == []  # report.html and panel.html too
    assert not any(v in printed.out + printed.err for v in secrets_only.values())

    samples = pq.read_table(next((run / "samples").glob("part-*.parquet"))).to_pylist()
    assert len(samples) == 6 and all(s["status"] == "completed" for s in samples)
    seen = dict(line.split("=", 1) for line in samples[0]["answer"].splitlines() if "=" in line)
    # The harness had the model key (stored redacted), and none of the three others.
    assert seen["EVALNB_MODEL_AUTH"] == "[redacted]"
    assert "OPENAI_KEY" not in seen and "AWS_ACCESS_KEY_ID" not in seen and "DB_URL" not in seen
    assert seen["EVALNB_HARMLESS"] == "plain-visible-value"
    assert (
        "EVALNB_MODEL_AUTH" in json.loads((run / "manifest.json").read_text())["target"]["pass_env"]
    )
    # The panel did show the answers: what it shows is the redacted text.
    assert "[redacted]" in "".join(pages) and "EVALNB_HARMLESS" in "".join(pages)


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("OPENAI_KEY", "x" * 20, True),
        ("SSH_KEY", "x" * 20, True),
        ("KEY", "x" * 20, True),
        ("AWS_ACCESS_KEY_ID", "x" * 20, True),
        ("aws_secret_access_key", "x" * 20, True),
        ("DB_URL", "postgres://u:pw@host/db", True),
        ("DATABASE_URL", "https://token@example.com/x", True),
        ("REDIS_DSN", "redis://:hunter22@cache:6379/0", True),
        ("HOMEPAGE_URL", "https://example.com/a@b", False),
        ("KEYBOARD", "us", False),
        ("MONKEY_MODE", "on", False),
        ("PATH", "/usr/bin:/bin", False),
    ],
)
def test_the_filter_catches_keys_key_ids_and_urls_with_user_info(name, value, secret):
    assert secret_env(name, value) is secret
    assert secret_env_name("OPENAI_API_KEY") and not secret_env_name("HOME")
