"""Every importer fed a corpus of wrong types: each field of a valid record replaced, in
turn, by a value of every other JSON kind (and removed). Each import either succeeds or
ends in one line naming the file, exit 2, with nothing written; never a traceback."""

from __future__ import annotations

import copy
import json
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalnb.cli import main

#: What each field is replaced by in turn; ``REMOVED`` takes the field out.
REMOVED = object()
VALUES: list[Any] = [REMOVED, None, True, -1, 2.5, "x", "\ud800", [], [1], {}, {"a": 1}]

HEADER = {
    "version": 2,
    "status": "success",
    "eval": {"task": "t", "model": "m", "scorers": [{"name": "match"}]},
    "stats": {"started_at": "2025-01-01T00:00:00+00:00", "completed_at": "2025-01-01"},
}
SAMPLE = {
    "id": 1,
    "epoch": 1,
    "input": [{"role": "user", "content": "What is 2 + 2?"}],
    "target": "4",
    "choices": ["3", "4"],
    "metadata": {"k": "v"},
    "attachments": {"abc": "text"},
    "messages": [{"role": "user", "content": "attachment://abc"}],
    "output": {
        "model": "m",
        "completion": "4",
        "choices": [{"message": {"role": "assistant", "content": "4"}, "stop_reason": "stop"}],
        "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6},
        "time": 0.5,
    },
    "error": None,
    "scores": {"match": {"value": "C", "answer": "4"}},
}
ROW = {
    "prompt": {"raw": "Say hi", "label": "p1"},
    "provider": {"id": "openai:gpt"},
    "promptIdx": 0,
    "testIdx": 0,
    "testCase": {"vars": {"q": "hi"}, "description": "d"},
    "vars": {"q": "hi"},
    "response": {"output": "hi", "tokenUsage": {"prompt": 1, "completion": 1, "total": 2}},
    "latencyMs": 12,
    "success": True,
    "gradingResult": {
        "pass": True,
        "componentResults": [{"pass": True, "score": 1, "assertion": {"type": "icontains"}}],
    },
}
RESULTS = {"evalId": "e", "results": {"version": 3, "prompts": [{"label": "p1"}], "results": [ROW]}}
CONFIG = {
    "prompts": ["Answer {{q}}", {"raw": "Say {{q}}", "label": "two"}],
    "providers": ["openai:gpt"],
    "defaultTest": {"vars": {"d": "x"}, "assert": [{"type": "contains", "value": "a"}]},
    "assertionTemplates": {"t": {"type": "icontains", "value": "b"}},
    "tests": [
        {
            "description": "one",
            "vars": {"q": ["a", "b"]},
            "metadata": {"m": 1},
            "assert": [{"type": "equals", "value": "{{q}}"}, {"$ref": "#/assertionTemplates/t"}],
        }
    ],
}
DATASET = {"input": "Q?", "target": "A", "choices": ["A", "B"], "id": "s1", "metadata": {"a": 1}}
OPENAI = {"input": [{"role": "user", "content": "Q?"}], "ideal": ["A", "a"]}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in ``value``: each key of each object, each item of each list."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        yield (*path, key)
        if isinstance(child, dict | list) and child:
            yield from _paths(child, (*path, key))


def _mutants(base: Any) -> Iterator[tuple[str, Any]]:
    for path in _paths(base):
        for value in VALUES:
            mutant = copy.deepcopy(base)
            parent = mutant
            for key in path[:-1]:
                parent = parent[key]
            if value is REMOVED:
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
            shown = "removed" if value is REMOVED else json.dumps(value)
            yield f"{'.'.join(map(str, path))} = {shown}", mutant


def _zip(path: Path, header: Any, sample: Any) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(header))
        archive.writestr("samples/1_epoch_1.json", json.dumps(sample))


#: format -> (the valid record, writer(folder, mutant) -> source file)
Writer = Callable[[Path, Any], Path]
CORPUS: dict[str, tuple[Any, str, Writer]] = {
    "inspect-log json": (
        {**HEADER, "samples": [SAMPLE]},
        "inspect-log",
        lambda d, m: _write(d / "log.json", json.dumps(m)),
    ),
    "inspect-log eval header": (
        HEADER,
        "inspect-log",
        lambda d, m: _zipped(d / "log.eval", m, SAMPLE),
    ),
    "inspect-log eval sample": (
        SAMPLE,
        "inspect-log",
        lambda d, m: _zipped(d / "log.eval", HEADER, m),
    ),
    "promptfoo-results": (
        RESULTS,
        "promptfoo-results",
        lambda d, m: _write(d / "output.json", json.dumps(m)),
    ),
    "promptfoo": (
        CONFIG,
        "promptfoo",
        lambda d, m: _write(d / "promptfooconfig.yaml", json.dumps(m)),
    ),
    "inspect": (DATASET, "inspect", lambda d, m: _write(d / "data.jsonl", json.dumps(m))),
    "openai-evals": (OPENAI, "openai-evals", lambda d, m: _write(d / "s.jsonl", json.dumps(m))),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def _zipped(path: Path, header: Any, sample: Any) -> Path:
    _zip(path, header, sample)
    return path


@pytest.mark.parametrize("name", list(CORPUS))
def test_every_field_of_the_wrong_type_is_one_line_or_imported(name, tmp_path, capsys) -> None:
    base, fmt, write = CORPUS[name]
    # The valid record imports.
    source = write(tmp_path, base)
    assert main(["import", fmt, str(source), "--out", str(tmp_path / "valid")]) == 0, (
        capsys.readouterr().err
    )
    capsys.readouterr()
    refused = 0
    for n, (label, mutant) in enumerate(_mutants(base)):
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        source = write(folder, mutant)
        out = folder / "out"
        code = main(["import", fmt, str(source), "--out", str(out)])
        err = capsys.readouterr().err
        assert code in (0, 2), label
        if code == 2:
            refused += 1
            assert err.count("\n") == 1 and err.startswith("evalnb import: error: "), (label, err)
            assert source.name in err, (label, err)
            assert not out.exists(), label
        else:
            assert (out / "imported.json").is_file(), label
    assert refused >= 10, f"only {refused} mutants refused: the corpus has no teeth"
