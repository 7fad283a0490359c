from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalnb._exceptions import TargetError
from evalnb._types import Case, Request, Variant
from evalnb.targets._command import Command

PY = sys.executable


def make_request(case: Case | None = None, variant: Variant | None = None, **params) -> Request:
    case = case or Case("project-name", prompt="What is the project called?")
    variant = variant or Variant("baseline")
    return Request(case, variant, 0, variant.messages_for(case), params)


def script(tmp_path: Path, body: str, name: str = "harness.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), "utf-8")
    return str(path)


def run(target: Command, request: Request | None = None):
    return asyncio.run(target.complete(request or make_request()))


def fail(target: Command, request: Request | None = None) -> TargetError:
    with pytest.raises(TargetError) as info:
        run(target, request)
    return info.value


def group_gone(pgid: int, within: float = 5.0) -> bool:
    # The killed grandchild is reaped by init, which may take a moment.
    deadline = time.monotonic() + within
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_fixtures_are_written_into_the_workspace_which_is_the_cwd(tmp_path):
    harness = script(
        tmp_path,
        """
        import json, os
        files = {}
        for root, _, names in os.walk("."):
            for name in names:
                path = os.path.relpath(os.path.join(root, name))
                files[path] = open(path, encoding="utf-8").read()
        print(json.dumps({"cwd": os.getcwd(), "files": files}))
        """,
    )
    case = Case(
        "two-sources",
        prompt="Combine the notes.",
        fixtures={"notes.txt": "Project: Paper Kite", "docs/sub/project.txt": "Status: released"},
    )
    completion = run(Command([PY, harness]), make_request(case))
    seen = json.loads(completion.text)
    cwd = Path(seen["cwd"])
    assert cwd.name == "workspace"
    assert cwd.parent.name.startswith("evalnb-")
    assert seen["files"] == {
        "notes.txt": "Project: Paper Kite",
        "docs/sub/project.txt": "Status: released",
    }
    assert completion.exit_code == 0
    assert not cwd.parent.exists()  # the whole sample directory is gone


def test_request_json_and_environment(tmp_path):
    harness = script(
        tmp_path,
        """
        import json, os
        with open(os.environ["EVALNB_REQUEST"], encoding="utf-8") as handle:
            request = json.load(handle)
        env = {k: v for k, v in os.environ.items() if k.startswith("EVALNB_")}
        print(json.dumps({"request": request, "env": env, "extra": os.environ.get("MY_FLAG")}))
        """,
    )
    case = Case("language", prompt="Which language does the project use?")
    variant = Variant("revised", prefix="Read the note first.")
    request = Request(case, variant, 2, variant.messages_for(case), {"temperature": 0.2})
    completion = run(Command([PY, harness], env={"MY_FLAG": "on"}), request)
    seen = json.loads(completion.text)

    expected = {
        "case_id": "language",
        "variant": "revised",
        "repeat": 2,
        "messages": [
            {
                "role": "user",
                "content": "Read the note first.\n\nWhich language does the project use?",
            }
        ],
        "prompt": "Read the note first.\n\nWhich language does the project use?",
        "params": {"temperature": 0.2},
    }
    assert seen["request"] == expected
    assert completion.request == expected
    env = seen["env"]
    # Params travel only in request.json, never as environment variables.
    assert set(env) == {
        "EVALNB_REQUEST",
        "EVALNB_TRACE",
        "EVALNB_WORKSPACE",
        "EVALNB_CASE_ID",
        "EVALNB_VARIANT",
        "EVALNB_REPEAT",
    }
    assert env["EVALNB_REQUEST"].endswith("/io/request.json")
    assert env["EVALNB_TRACE"].endswith("/io/trace.jsonl")
    assert env["EVALNB_WORKSPACE"].endswith("/workspace")
    assert (env["EVALNB_CASE_ID"], env["EVALNB_VARIANT"], env["EVALNB_REPEAT"]) == (
        "language",
        "revised",
        "2",
    )
    assert seen["extra"] == "on"


def test_placeholders_are_replaced_once_and_other_braces_kept(tmp_path):
    harness = script(tmp_path, "import json, sys; print(json.dumps(sys.argv[1:]))")
    case = Case("braces", prompt="Say {workspace} and {0} literally")
    argv = [PY, harness, "{request}", "--trace={trace}", "{workspace}", "{prompt}", "x{y}z"]
    args = json.loads(run(Command(argv), make_request(case)).text)
    assert args[0].endswith("/io/request.json")
    assert args[1].startswith("--trace=") and args[1].endswith("/io/trace.jsonl")
    assert args[2].endswith("/workspace")
    assert args[3] == "Say {workspace} and {0} literally"
    assert args[4] == "x{y}z"


def test_stdin_is_at_end_of_file(tmp_path):
    harness = script(tmp_path, "import sys; print(repr(sys.stdin.read()))")
    assert run(Command([PY, harness], timeout=10)).text == "''"


def test_non_zero_exit_is_an_error_that_keeps_the_evidence(tmp_path):
    harness = script(
        tmp_path,
        """
        import sys
        print("half an answer")
        print("warming up", file=sys.stderr)
        print("approval needed but stdin closed", file=sys.stderr)
        sys.exit(3)
        """,
    )
    error = fail(Command([PY, harness]))
    assert error.status == "error"
    assert str(error) == "exit code 3: approval needed but stdin closed"
    assert error.partial.exit_code == 3
    assert error.partial.text == "half an answer"
    assert "warming up" in error.partial.stderr


def test_missing_executable_is_an_error(tmp_path):
    error = fail(Command([str(tmp_path / "no-such-program")]))
    assert error.status == "error"
    assert "cannot start" in str(error)


def test_blank_stdout_is_an_empty_answer(tmp_path):
    harness = script(tmp_path, "print('   ')")
    error = fail(Command([PY, harness]))
    assert error.status == "empty"
    assert str(error) == "empty answer"
    assert error.partial.exit_code == 0


def test_flooded_output_is_capped_and_drained(tmp_path):
    harness = script(
        tmp_path,
        """
        import sys
        sys.stdout.write("x" * 1_000_000)
        sys.stderr.write("e" * 1_000_000)
        """,
    )
    started = time.monotonic()
    completion = run(Command([PY, harness], timeout=20))
    assert time.monotonic() - started < 10
    assert completion.stdout == "x" * (128 * 1024)
    assert completion.stdout_truncated
    assert len(completion.stderr) == 128 * 1024
    assert completion.stderr_truncated


def test_output_of_exactly_max_output_is_not_truncated(tmp_path):
    harness = script(tmp_path, "import sys; sys.stdout.write('0123456789')")
    completion = run(Command([PY, harness], max_output=10))
    assert completion.stdout == "0123456789"
    assert not completion.stdout_truncated


HANGING = """
import os, subprocess, sys, time
grandchild = 0
if sys.argv[2] == "grandchild":
    # Inherits stdout and stderr, so it holds the pipes open.
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]).pid
with open(sys.argv[1] + ".tmp", "w") as handle:
    handle.write(f"{os.getpid()} {os.getpgid(0)} {grandchild}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("started", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("mode", ["alone", "grandchild"])
def test_timeout_kills_the_whole_process_group(tmp_path, mode):
    harness = script(tmp_path, HANGING)
    pids = tmp_path / "pids"
    started = time.monotonic()
    error = fail(Command([PY, harness, str(pids), mode], timeout=1))
    assert time.monotonic() - started < 5
    assert error.status == "timeout"
    assert error.partial.stdout == "started\n"
    pid, pgid, grandchild = map(int, pids.read_text().split())
    assert pgid == pid  # its own process group
    assert group_gone(pgid)
    if grandchild:
        with pytest.raises(ProcessLookupError):
            os.kill(grandchild, 0)


def test_cancellation_kills_the_process_group(tmp_path):
    harness = script(tmp_path, HANGING)
    pids = tmp_path / "pids"
    seen: dict[str, Path] = {}

    def setup(tmpdir, workspace, request):
        seen["tmpdir"] = tmpdir

    async def cancel_once_started():
        target = Command([PY, harness, str(pids), "grandchild"], timeout=30, setup=setup)
        task = asyncio.create_task(target.complete(make_request()))
        deadline = time.monotonic() + 10
        while not pids.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_once_started())
    _, pgid, _ = map(int, pids.read_text().split())
    assert group_gone(pgid)
    assert not seen["tmpdir"].exists()


def test_children_left_behind_after_a_clean_exit_do_not_hold_the_sample(tmp_path):
    harness = script(
        tmp_path,
        """
        import subprocess, sys
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(helper.pid, file=sys.stderr)
        print("done")
        """,
    )
    started = time.monotonic()
    completion = run(Command([PY, harness], timeout=30))
    assert time.monotonic() - started < 5
    assert completion.text == "done"
    helper = int(completion.stderr.split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(helper, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the helper outlived the sample")


def test_trace_is_read_and_capped(tmp_path):
    harness = script(
        tmp_path,
        """
        import json, os, sys
        with open(os.environ["EVALNB_TRACE"], "w") as handle:
            for turn in range(int(sys.argv[1])):
                handle.write(json.dumps({"turn": turn}) + "\\n")
        print("answer")
        """,
    )
    full = run(Command([PY, harness, "2"]))
    assert full.trace == '{"turn": 0}\n{"turn": 1}\n'
    assert not full.trace_truncated

    capped = run(Command([PY, harness, "100"], max_trace=50))
    assert len(capped.trace) == 50
    assert capped.trace.startswith('{"turn": 0}\n')
    assert capped.trace_truncated

    none = run(Command([PY, harness, "0"]))
    assert none.trace == ""
    no_file = run(Command([PY, "-c", "print('answer')"]))
    assert no_file.trace is None


def test_setup_runs_before_the_process_and_everything_is_removed(tmp_path):
    harness = script(
        tmp_path,
        """
        import os
        print(open("private.txt").read(), open("../private.txt").read())
        """,
    )
    places: list[Path] = []

    def setup(tmpdir, workspace, request):
        places.append(tmpdir)
        (workspace / "private.txt").write_text("MARKER-1")
        (tmpdir / "private.txt").write_text(f"MARKER-2 {request.case.id}")

    async def async_setup(tmpdir, workspace, request):
        setup(tmpdir, workspace, request)

    assert run(Command([PY, harness], setup=setup)).text == "MARKER-1 MARKER-2 project-name"
    assert run(Command([PY, harness], setup=async_setup)).text.startswith("MARKER-1")
    fail(Command([PY, "-c", "import sys; sys.exit(1)"], setup=setup))
    assert len(places) == 3
    assert not any(place.exists() for place in places)


def test_read_only_folders_made_by_the_process_are_still_removed(tmp_path):
    harness = script(
        tmp_path,
        """
        import os
        os.makedirs("locked/inner")
        open("locked/inner/file.txt", "w").write("x")
        os.chmod("locked/inner", 0o500)
        os.chmod("locked", 0o000)
        print(os.getcwd())
        """,
    )
    workspace = Path(run(Command([PY, harness])).text)
    assert not workspace.parent.exists()


@pytest.mark.parametrize("name", ["../private.txt", "/etc/evil", "notes/../../x", ""])
def test_fixture_paths_must_stay_inside_the_workspace(tmp_path, name):
    case = Case("traversal", prompt="Read it.", fixtures={name: "x"})
    error = fail(Command([PY, "-c", "print('never')"]), make_request(case))
    assert error.status == "error"
    assert "'traversal'" in str(error)
    assert repr(name) in str(error)


def test_describe_hashes_the_executable_and_script_and_hides_env_values(tmp_path):
    harness = script(tmp_path, "print('hi')")
    target = Command([PY, harness, "{request}"], timeout=5, env={"API_KEY": "s3cret"})
    described = asyncio.run(target.describe())
    assert described["type"] == "command"
    assert described["argv"] == [PY, harness, "{request}"]
    assert described["timeout"] == 5.0
    assert described["executable"] == PY
    assert described["executable_sha256"] == hashlib.sha256(Path(PY).read_bytes()).hexdigest()
    assert described["files"] == {harness: hashlib.sha256(Path(harness).read_bytes()).hexdigest()}
    assert described["env"] == ["API_KEY"]
    assert "s3cret" not in json.dumps(described)


def test_describe_when_the_program_is_not_found():
    described = asyncio.run(Command(["evalnb-no-such-program"]).describe())
    assert described["executable"] is None
    assert described["executable_sha256"] is None


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"argv": "python app.py"}, TypeError, "'argv'.*'python app.py'"),
        ({"argv": []}, ValueError, r"'argv'.*\[\]"),
        ({"argv": ["python", 3]}, TypeError, "'argv'.*3"),
        ({"argv": ["./app"]}, ValueError, "'argv\\[0\\]'.*'./app'"),
        ({"argv": ["python"], "timeout": 0}, ValueError, "'timeout'.*0"),
        ({"argv": ["python"], "max_output": 0}, ValueError, "'max_output'.*0"),
        ({"argv": ["python"], "max_trace": -1}, ValueError, "'max_trace'.*-1"),
        ({"argv": ["python"], "answer": "trace"}, ValueError, "'answer'.*'trace'"),
        ({"argv": ["python"], "env": {"A": 1}}, TypeError, "'env'"),
        ({"argv": ["python"], "setup": "nope"}, TypeError, "'setup'"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    argv = kwargs.pop("argv")
    with pytest.raises(error, match=match):
        Command(argv, **kwargs)
