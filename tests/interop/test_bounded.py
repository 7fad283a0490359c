"""What importers read and how much: ``file://`` references inside the suite's folder or
an allowed path, every file read listed in ``imported.json``, the caps and their options,
and ``guarded()`` turning decoding errors into one line."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from pathlib import Path

import pytest

import evalnb
from evalnb.cases import expanded_nodes
from evalnb.cli import main
from evalnb.cli._common import guarded
from evalnb.interop import Limits, import_inspect_log, import_promptfoo
from evalnb.interop._bounded import parse_size, size_text

DATA = Path(__file__).parents[1] / "data" / "peers"


def _suite(folder: Path, config: str, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "promptfooconfig.yaml").write_text(config)
    return folder / "promptfooconfig.yaml"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_file_read_is_listed_in_imported_json(tmp_path: Path) -> None:
    config = _suite(
        tmp_path / "suite",
        "prompts: [file://prompt.txt]\ntests: file://tests.csv\ndefaultTest: file://default.yaml\n",
        **{
            "prompt.txt": "Say {{q}}",
            "tests.csv": "q,__expected\nhi,icontains:hi\nyo,icontains:yo\n",
            "default.yaml": "assert: [{type: not-icontains, value: sorry}]\n",
        },
    )
    result = import_promptfoo(config, tmp_path / "out")
    record = json.loads((tmp_path / "out" / "imported.json").read_text())
    folder = config.parent.resolve()
    listed = [(Path(f["path"]).name, f["sha256"], f["bytes"]) for f in record["files_read"]]
    expected = ["promptfooconfig.yaml", "prompt.txt", "default.yaml", "tests.csv"]
    assert listed == [
        (name, _sha(folder / name), (folder / name).stat().st_size) for name in expected
    ]
    assert record["source_sha256"] == _sha(config) and result.files == record["files_read"]
    cases = evalnb.load_cases(tmp_path / "out" / "cases.yaml")
    assert len(cases) == 2 and [c.type for c in cases[0].checks] == ["contains", "avoids"]


def test_an_inspect_log_lists_itself_and_the_members_it_inflated(tmp_path: Path) -> None:
    log = DATA / "inspect_logs" / "popularity_scored.eval"
    import_inspect_log(log, tmp_path / "run")
    (listed,) = json.loads((tmp_path / "run" / "imported.json").read_text())["files_read"]
    with zipfile.ZipFile(log) as archive:
        samples = [n for n in archive.namelist() if n.startswith("samples/")]
    assert listed == {
        "path": str(log),
        "bytes": log.stat().st_size,
        "sha256": _sha(log),
        "members": len(samples) + 1,  # and header.json; nothing else was inflated
    }
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["provenance"]["sha256"] == _sha(log)


def test_allow_outside_lets_a_named_file_or_folder_in(tmp_path: Path, capsys) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "prompt.txt").write_text("Shared {{q}}")
    config = _suite(
        tmp_path / "suite", "prompts: [file://../shared/prompt.txt]\ntests: [{vars: {q: a}}]\n"
    )
    out = tmp_path / "out"
    assert main(["import", "promptfoo", str(config), "--out", str(out)]) == 2
    assert "outside the suite's folder" in capsys.readouterr().err and not out.exists()
    argv = ["import", "promptfoo", str(config), "--out", str(out), "--allow-outside", str(shared)]
    assert main(argv) == 0
    variants = evalnb.load_experiment(out / "experiment.toml").variants
    assert [v.template for v in variants] == ["Shared {{q}}"]
    listed = json.loads((out / "imported.json").read_text())["files_read"]
    assert listed[1]["path"] == str((shared / "prompt.txt").resolve())
    # The Python keyword takes a path (a file here) or several.
    import_promptfoo(config, tmp_path / "py", allow_outside=[shared / "prompt.txt"])
    with pytest.raises(evalnb.CasesError, match="outside the suite's folder"):
        import_promptfoo(config, tmp_path / "py2", allow_outside=[tmp_path / "elsewhere"])


def test_a_symlink_that_stays_inside_the_suite_is_read(tmp_path: Path) -> None:
    config = _suite(
        tmp_path / "suite",
        "prompts: [file://link.txt]\ntests: [{vars: {q: a}}]\n",
        **{"real.txt": "Real {{q}}"},
    )
    (config.parent / "link.txt").symlink_to("real.txt")
    import_promptfoo(config, tmp_path / "out")
    variants = evalnb.load_experiment(tmp_path / "out" / "experiment.toml").variants
    assert [v.template for v in variants] == ["Real {{q}}"]


def test_anchors_a_config_really_uses_stay_within_the_budget(tmp_path: Path) -> None:
    config = _suite(
        tmp_path / "suite",
        "prompts: ['{{q}}']\n"
        "common: &common\n  - {type: icontains, value: ok}\n  - {type: not-icontains, value: no}\n"
        "tests:\n" + "".join(f"  - vars: {{q: q{i}}}\n    assert: *common\n" for i in range(50)),
    )
    import_promptfoo(config, tmp_path / "out")
    cases = evalnb.load_cases(tmp_path / "out" / "cases.yaml")
    assert len(cases) == 50 and all(len(c.checks) == 2 for c in cases)
    with pytest.raises(evalnb.CasesError, match="to more than 100 YAML nodes; raise it with"):
        import_promptfoo(config, tmp_path / "small", limits=Limits(yaml_nodes=100))
    assert not (tmp_path / "small").exists()


def test_expanded_nodes_count_an_alias_as_what_it_repeats() -> None:
    import yaml  # type: ignore[import-untyped]

    node = yaml.compose("a: &x [1, 2, 3]\nb: [*x, *x, *x]\n", Loader=yaml.SafeLoader)
    # root + 2 keys + the list (1 + 3) + b's list (1 + 3 x 4)
    assert expanded_nodes(node, 10**6, "f.yaml") == 1 + 2 + 4 + 1 + 3 * 4
    assert expanded_nodes(node, 5, "f.yaml") > 5  # stops once past the limit
    tree = yaml.compose("a: [1, 2]\nb: {c: 3}\n", Loader=yaml.SafeLoader)
    assert expanded_nodes(tree, 10**6, "f.yaml") == 9
    assert expanded_nodes(tree, 10**6, "f.yaml", aliases=False) == 9
    looped = yaml.compose("a: &x [1, *x]\n", Loader=yaml.SafeLoader)
    with pytest.raises(evalnb.CasesError, match=r"f.yaml:1: an alias refers to a node that holds"):
        expanded_nodes(looped, 10**6, "f.yaml")


def test_limits_and_sizes() -> None:
    assert Limits() == Limits(
        file_bytes=256 << 20,
        member_bytes=64 << 20,
        total_bytes=1 << 30,
        zip_ratio=100,
        yaml_nodes=1_000_000,
    )
    for bad in ({"file_bytes": 0}, {"yaml_nodes": 1.5}, {"zip_ratio": True}):
        with pytest.raises(evalnb.ArgumentError, match=next(iter(bad))):
            Limits(**bad)
    assert [parse_size(t) for t in ("4096", "512K", "64M", "64MiB", "1.5g", "2 GB")] == [
        4096,
        512 << 10,
        64 << 20,
        64 << 20,
        3 << 29,
        2 << 30,
    ]
    for bad in ("", "lots", "-1M", "0"):
        with pytest.raises(ValueError, match="size"):
            parse_size(bad)
    assert [size_text(n) for n in (512, 1536, 64 << 20, 3 << 30)] == [
        "512 bytes",
        "1.5 KiB",
        "64 MiB",
        "3 GiB",
    ]


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (["--max-file-size", "lots"], "--max-file-size: a size must be bytes or a number"),
        (["--max-yaml-nodes", "0"], "--max-yaml-nodes must be at least 1; got 0"),
        (["--max-zip-ratio", "nan"], "--max-zip-ratio must be at least 1; got nan"),
        (["--allow-outside", "/tmp"], "--allow-outside applies to the promptfoo format only"),
    ],
)
def test_a_bad_cap_option_is_one_line(option, expected, tmp_path, capsys) -> None:
    fmt = "inspect-log" if "--allow-outside" in option else "promptfoo"
    argv = ["import", fmt, str(tmp_path / "x.eval"), "--out", str(tmp_path / "o"), *option]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own error for a value of the wrong type
        code = int(str(exc.code))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and expected in err


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (zlib.error("Error -3 while decompressing data: invalid block type"), "damaged"),
        (zipfile.BadZipFile("Bad CRC-32 for file 'x'"), "Bad CRC-32"),
        (MemoryError(), "more memory than there is"),
    ],
    ids=["zlib.error", "BadZipFile", "MemoryError"],
)
def test_guarded_turns_decoding_errors_into_one_line(error, expected) -> None:
    def command() -> int:
        raise error

    err = io.StringIO()
    assert guarded("import", command, stderr=err) == 2
    assert err.getvalue().count("\n") == 1 and expected in err.getvalue()
