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
    _every_mutant(base, fmt, write, [], tmp_path, capsys)


def _every_mutant(
    base: Any, fmt: str, write: Writer, extra: list[str], tmp_path: Path, capsys: Any
) -> None:
    """The valid record imports; each of its mutants imports or is refused in one line
    naming the file, exit 2, nothing written."""
    source = write(tmp_path, base)
    argv = ["import", fmt, str(source), *extra, "--out", str(tmp_path / "valid")]
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    refused = 0
    for n, (label, mutant) in enumerate(_mutants(base)):
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        source = write(folder, mutant)
        out = folder / "out"
        code = main(["import", fmt, str(source), *extra, "--out", str(out)])
        err = capsys.readouterr().err
        assert code in (0, 2), label
        if code == 2:
            refused += 1
            assert err.count("\n") == 1 and err.startswith("evalnb import: error: "), (label, err)
            assert source.name in err, (label, err)
            assert "Traceback" not in err, (label, err)
            assert not out.exists(), label
        else:
            assert (out / "imported.json").is_file(), label
    assert refused >= 10, f"only {refused} mutants refused: the corpus has no teeth"


#: OpenAI / Azure Evals data and its testing_criteria: every grader type.
ITEM = {"item": {"input": "Capital of France?", "reference": "Paris", "prompt": "Capital?"}}
CRITERIA = {
    "testing_criteria": [
        {
            "type": "string_check",
            "name": "exact",
            "input": "{{sample.output_text}}",
            "reference": "{{item.reference}}",
            "operation": "ilike",
        },
        {
            "type": "text_similarity",
            "name": "fuzzy",
            "input": "{{sample.output_text}}",
            "reference": "{{item.reference}}",
            "evaluation_metric": "fuzzy_match",
            "pass_threshold": 0.5,
        },
        {
            "type": "score_model",
            "name": "score",
            "model": "gpt-4o",
            "input": [
                {"role": "user", "content": "Rate {{sample.output_text}} for {{item.prompt}}"}
            ],
            "range": [0, 1],
            "pass_threshold": 0.5,
        },
        {
            "type": "label_model",
            "name": "label",
            "model": "gpt-4o",
            "input": [{"role": "user", "content": "Label {{sample.output_text}}"}],
            "labels": ["good", "bad"],
            "passing_labels": ["good"],
        },
        {
            "type": "python",
            "name": "py",
            "source": "def grade(sample, item):\n    return 1.0",
            "pass_threshold": 0.5,
        },
        {
            "type": "multi",
            "name": "both",
            "graders": {
                "a": {
                    "type": "string_check",
                    "name": "a",
                    "input": "{{sample.output_text}}",
                    "reference": "{{item.reference}}",
                    "operation": "eq",
                }
            },
            "calculate_output": "a",
            "pass_threshold": 0.5,
        },
    ]
}


def test_openai_graders_data_of_the_wrong_type_is_one_line_or_imported(tmp_path, capsys) -> None:
    criteria = _write(tmp_path / "criteria.json", json.dumps(CRITERIA))
    extra = ["--criteria", str(criteria)]
    write: Writer = lambda d, m: _write(d / "data.jsonl", json.dumps(m))  # noqa: E731
    _every_mutant(ITEM, "openai-graders", write, extra, tmp_path, capsys)


def test_openai_graders_criteria_of_the_wrong_type_are_one_line_or_imported(
    tmp_path, capsys
) -> None:
    data = _write(tmp_path / "data.jsonl", json.dumps(ITEM))

    def write(folder: Path, mutant: Any) -> Path:
        criteria = _write(folder / "criteria.json", json.dumps(mutant))
        argv[:] = [str(data), "--criteria", str(criteria)]
        return criteria

    argv: list[str] = []
    source = write(tmp_path, CRITERIA)
    assert main(["import", "openai-graders", *argv, "--out", str(tmp_path / "valid")]) == 0
    capsys.readouterr()
    refused = 0
    for n, (label, mutant) in enumerate(_mutants(CRITERIA)):
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        source = write(folder, mutant)
        out = folder / "out"
        code = main(["import", "openai-graders", *argv, "--out", str(out)])
        err = capsys.readouterr().err
        assert code in (0, 2), label
        if code == 2:
            refused += 1
            assert err.count("\n") == 1 and err.startswith("evalnb import: error: "), (label, err)
            assert "Traceback" not in err and source.name in err, (label, err)
            assert not out.exists(), label
        else:
            assert (out / "imported.json").is_file(), label
    assert refused >= 10, f"only {refused} mutants refused: the corpus has no teeth"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"input": "Q?", "reference": "A"}', 'expected {"item": {...}}'),
        ('{"item": "Q?"}', 'expected {"item": {...}}'),
        ('["Q?"]', 'expected {"item": {...}}'),
        ('{"item": {"question_text": "Q?"}}', "name the prompt's field 'input'"),
        ('{"item": {"input": "Q?"', "data.jsonl:1"),
        (
            '{"item": {"id": 7, "input": "Q?", "reference": "A", "prompt": "p"}}\n'
            '{"item": {"id": 7, "input": "R?", "reference": "B", "prompt": "p"}}',
            "data.jsonl:2: 'id' must be unique; got '7' again (first at",
        ),
    ],
)
def test_openai_graders_wrong_item_wrappers_say_what_to_do(
    line, expected, tmp_path, capsys
) -> None:
    data = _write(tmp_path / "data.jsonl", line + "\n")
    criteria = _write(tmp_path / "criteria.json", json.dumps(CRITERIA))
    argv = ["import", "openai-graders", str(data), "--criteria", str(criteria)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "data.jsonl:" in err and expected in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("inspect", "or read its field with --field input=item.input"),
        ("openai-evals", "import it with `evalnb import openai-graders"),
    ],
)
def test_openai_evals_items_given_to_another_importer_say_which_to_use(
    fmt, expected, tmp_path, capsys
) -> None:
    data = _write(tmp_path / "data.jsonl", json.dumps(ITEM) + "\n")
    assert main(["import", fmt, str(data), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "data.jsonl:1: expected" in err and expected in err, err
    assert not (tmp_path / "out").exists()


def test_a_data_file_given_as_criteria_says_what_it_holds(tmp_path, capsys) -> None:
    data = _write(tmp_path / "data.jsonl", json.dumps(ITEM) + "\n")
    argv = ["import", "openai-graders", str(data), "--criteria", str(data)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "data.jsonl: expected a list of graders" in err, err
    assert "got an object with 'item'" in err
