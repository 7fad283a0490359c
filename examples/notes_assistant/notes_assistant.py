#!/usr/bin/env python3
"""A small notes assistant: a chat loop against an OpenAI-compatible endpoint, with tools.

    python notes_assistant.py --base-url http://127.0.0.1:8080/v1 --model qwen3 \\
        "What is the project in notes.txt called?"

It answers one question (one user turn) about the notes in its workspace, calling the
model until it replies without tool calls, and prints that reply on stdout. Nothing
else goes to stdout; problems go to stderr. See README.md next to this file for the
policy, the budgets, the exit codes and the trace format.

Standalone on purpose (standard library and httpx only): an evaluator runs it as an
unchanged executable and must not be able to lend it anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn, TextIO

import httpx

EXIT_OK = 0
EXIT_MODEL = 2  # HTTP error, unreachable server or a response that is not a chat completion
EXIT_APPROVAL = 3  # propose_note needed an answer on stdin, and stdin was at end of file
EXIT_TOOL_CALLS = 4  # more tool calls than --max-tool-calls in the turn
EXIT_READ_BYTES = 5  # more note bytes than --max-read-bytes in the turn
EXIT_DEADLINE = 6  # the turn took longer than --turn-deadline seconds
EXIT_USAGE = 64  # bad command line, request file or workspace (argparse's own 2 is taken)

PRIVATE_NOTE = "private.txt"
NOTE_SUFFIX = ".txt"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "list_notes",
            "description": "List the notes in the workspace (the file names you may read).",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_note",
            "description": "Read one note. Only names returned by list_notes can be read.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A note name, e.g. notes.txt"}
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "propose_note",
            "description": (
                "Propose a new note. The user must approve it before it is saved; "
                "an existing note is never overwritten."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "New note name ending in .txt"},
                    "text": {"type": "string", "description": "The note's text"},
                },
                "required": ["path", "text"],
                "additionalProperties": False,
            },
        },
    },
]

# Argument names each tool takes, and which of them are required.
_SIGNATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "list_notes": ((), ()),
    "read_note": (("path",), ("path",)),
    "propose_note": (("path", "text"), ("path", "text")),
}


class RunStopped(Exception):
    """Ends the run: the process exits with ``exit_code`` after one stderr line."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ModelError(RunStopped):
    exit_code = EXIT_MODEL


class ApprovalUnavailable(RunStopped):
    exit_code = EXIT_APPROVAL


class ToolCallBudgetExceeded(RunStopped):
    exit_code = EXIT_TOOL_CALLS


class ReadBudgetExceeded(RunStopped):
    exit_code = EXIT_READ_BYTES


class DeadlineExceeded(RunStopped):
    exit_code = EXIT_DEADLINE


class _Refused(Exception):
    """A tool call the policy or the arguments do not allow; the model gets the message."""


def ask_on_stdin(path: str, text: str, *, stdin: TextIO | None = None) -> bool:
    """Show a proposed note on stderr and read one line: only "yes" approves.

    End of file (or no stdin at all) means nobody can approve, which ends the run.
    """
    stdin = sys.stdin if stdin is None else stdin
    print(f"The assistant proposes a new note {path!r}:", file=sys.stderr)
    for line in text.splitlines() or [""]:
        print(f"  | {line}", file=sys.stderr)
    print("Save it? Type yes to approve: ", end="", file=sys.stderr, flush=True)
    line = stdin.readline() if stdin is not None and not stdin.closed else ""
    if not line:
        raise ApprovalUnavailable("approval needed but stdin is closed")
    return line.strip().lower() == "yes"


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict; raises ``_Refused`` when they are not an object.

    Servers send a JSON string (the OpenAI shape); some send the object itself, and
    some send an empty string for a call without arguments.
    """
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None:
        return {}
    if not isinstance(raw, str):
        raise _Refused(f"arguments must be a JSON object; got {type(raw).__name__}")
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise _Refused(f"arguments are not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise _Refused(f"arguments must be a JSON object; got {raw!r}")
    return value


def arguments_for_trace(raw: Any) -> Any:
    """The parsed arguments when they are JSON, else the raw value as received."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


class Dispatcher:
    """Runs tool calls under the notes policy and the turn's budgets.

    ``dispatch(name, raw_arguments)`` returns ``{"ok": True, "result": ...}`` or
    ``{"ok": False, "error": "..."}``: anything wrong with one call is an error result
    for the model, never an exception. Only what ends the run raises (a ``RunStopped``):
    a call beyond ``max_tool_calls``, reading past ``max_read_bytes``, or a proposal
    when nobody can approve it.

    The policy. The listed notes are the ``.txt`` files directly in the workspace,
    except ``private.txt`` and hidden files; that list is the allow-list. A symlink is
    listed only when it resolves to a listed note of the same workspace (it then reads
    the same bytes the model could read anyway); one leading anywhere else is refused.
    ``read_note`` reads listed notes only: ``..``, absolute paths, subfolders and
    unlisted files are refused. ``propose_note`` asks ``approve(path, text)`` and then
    creates a new note exclusively: it never overwrites or follows a link.

    >>> tools = Dispatcher("/tmp/notes", approve=lambda path, text: False)
    >>> tools.dispatch("read_note", '{"path": "../private.txt"}')["ok"]
    False
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        max_tool_calls: int = 8,
        max_read_bytes: int = 64 * 1024,
        approve: Callable[[str, str], bool] = ask_on_stdin,
    ):
        self.workspace = Path(os.path.realpath(workspace))
        self.max_tool_calls = max_tool_calls
        self.max_read_bytes = max_read_bytes
        self.approve = approve
        self.calls = 0
        self.bytes_read = 0

    def dispatch(self, name: Any, raw_arguments: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls > self.max_tool_calls:
            raise ToolCallBudgetExceeded(
                f"tool-call budget exceeded: the model asked for more than "
                f"{self.max_tool_calls} tool calls in one turn"
            )
        try:
            if not isinstance(name, str) or name not in _SIGNATURES:
                known = ", ".join(_SIGNATURES)
                raise _Refused(f"unknown tool {name!r}; the tools are {known}")
            arguments = self._checked(name, parse_arguments(raw_arguments))
            handler = getattr(self, f"_{name}")
            return {"ok": True, "result": handler(**arguments)}
        except _Refused as exc:
            return {"ok": False, "error": str(exc)}
        except OSError as exc:
            return {"ok": False, "error": f"{name} failed: {exc.strerror or exc}"}

    # -- the policy -----------------------------------------------------------------

    def listed(self) -> list[str]:
        """The listed notes, sorted: the allow-list for ``read_note``."""
        try:
            names = os.listdir(self.workspace)
        except OSError as exc:
            raise _Refused(f"cannot list the workspace: {exc.strerror or exc}") from None
        return sorted(name for name in names if self._why_unlisted(name) is None)

    def _why_unlisted(self, name: str) -> str | None:
        """Why the workspace entry ``name`` is not a listed note, or None when it is."""
        reason = _name_problem(name)
        if reason is not None:
            return reason
        path = self.workspace / name
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return "it does not exist"
        if stat.S_ISLNK(mode):
            target = Path(os.path.realpath(path))
            if not target.is_relative_to(self.workspace):
                return "it is a link leading outside the workspace"
            if target.parent != self.workspace or self._why_unlisted(target.name) is not None:
                return "it is a link to something that is not a listed note"
            return None
        if not stat.S_ISREG(mode):
            return "it is not a regular file"
        return None

    def _name_of(self, path: str) -> str:
        """The note name ``path`` refers to, refusing anything that leaves the workspace."""
        if "\x00" in path:
            raise _Refused(f"refused: {path!r} contains a NUL character")
        if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or os.path.isabs(path):
            raise _Refused(f"refused: {path!r} is an absolute path; give a note name")
        parts = [part for part in re.split(r"[\\/]", path) if part not in ("", ".")]
        if ".." in parts:
            raise _Refused(f"refused: {path!r} leaves the workspace ('..' is not allowed)")
        if len(parts) != 1:
            raise _Refused(
                f"refused: {path!r} is not a listed note; notes are the files list_notes returns"
            )
        return parts[0]

    # -- the tools ------------------------------------------------------------------

    def _checked(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        allowed, required = _SIGNATURES[name]
        for key in arguments:
            if key not in allowed:
                takes = ", ".join(repr(k) for k in allowed) or "no arguments"
                raise _Refused(f"{name} takes {takes}; got an unexpected argument {key!r}")
        for key in required:
            if key not in arguments:
                raise _Refused(f"{name} needs the argument {key!r} (a string)")
            if not isinstance(arguments[key], str):
                raise _Refused(f"{name}: {key!r} must be a string; got {arguments[key]!r}")
        if "path" in arguments and not arguments["path"].strip():
            raise _Refused(f"{name}: 'path' must name a note; got an empty string")
        return arguments

    def _list_notes(self) -> list[str]:
        return self.listed()

    def _read_note(self, path: str) -> str:
        name = self._name_of(path)
        if not os.path.lexists(self.workspace / name):
            raise _Refused(f"no note named {name!r}; list_notes shows the notes there are")
        reason = self._why_unlisted(name)
        if reason is not None:
            raise _Refused(f"refused: {name!r} is not a listed note ({reason})")
        target = os.path.realpath(self.workspace / name)
        # O_NOFOLLOW: a link swapped in after the check is refused by the kernel.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(target, flags)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise _Refused(f"refused: {name!r} is not a regular file")
            room = self.max_read_bytes - self.bytes_read
            data = handle.read(room + 1)
        if len(data) > room:
            raise ReadBudgetExceeded(
                f"read budget exceeded: reading {name!r} would take the turn past "
                f"{self.max_read_bytes} bytes of notes"
            )
        self.bytes_read += len(data)
        return data.decode("utf-8", errors="replace")

    def _propose_note(self, path: str, text: str) -> str:
        name = self._name_of(path)
        reason = _name_problem(name)
        if reason is not None:
            raise _Refused(f"refused: cannot save {name!r} ({reason})")
        target = self.workspace / name
        if os.path.lexists(target):
            raise _Refused(f"refused: {name!r} already exists and notes are never overwritten")
        if not self.approve(name, text):
            raise _Refused("not approved")
        try:
            # "x": exclusive creation, which also refuses a dangling link put there meanwhile.
            with open(target, "x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            raise _Refused(
                f"refused: {name!r} already exists and notes are never overwritten"
            ) from None
        return f"saved {name}"


def _name_problem(name: str) -> str | None:
    """Why a bare file name cannot be a listed note, or None when it can."""
    if name.startswith("."):
        return "hidden files are not notes"
    if not name.endswith(NOTE_SUFFIX) or name == NOTE_SUFFIX:
        return f"only {NOTE_SUFFIX} files are notes"
    if name.casefold() == PRIVATE_NOTE:
        return f"{PRIVATE_NOTE} is never listed"
    return None


class Trace:
    """A JSONL file, one event a line, flushed after every line (or nothing at all)."""

    def __init__(self, path: str | None):
        self._handle: TextIO | None = None
        if path:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            self._handle = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, event: dict[str, Any]) -> None:
        if self._handle is not None:
            self._handle.write(json.dumps(event, ensure_ascii=False) + "\n")
            self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


class Chat:
    """Posts chat bodies to ``{base_url}/chat/completions`` within the turn's deadline."""

    def __init__(self, base_url: str, api_key: str | None, deadline: float):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.deadline = deadline
        self._client = httpx.Client(headers=headers)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def post(self, body: dict[str, Any]) -> tuple[int, Any]:
        """The HTTP status and the response body (parsed JSON, else the raw text)."""
        remaining = self.remaining()
        if remaining <= 0:
            raise DeadlineExceeded("turn deadline exceeded before the next model request")
        try:
            response = self._client.post(self.url, json=body, timeout=remaining)
        except httpx.TimeoutException:
            raise DeadlineExceeded(
                "turn deadline exceeded while waiting for the model at " + self.url
            ) from None
        except httpx.HTTPError as exc:
            raise ModelError(f"cannot reach the model at {self.url}: {exc}") from None
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, response.text

    def close(self) -> None:
        self._client.close()


def _message_of(status: int, payload: Any) -> dict[str, Any]:
    """The assistant message of a completion; raises ``ModelError`` for anything else."""
    if status != 200:
        shown = json.dumps(payload)[:300] if not isinstance(payload, str) else payload[:300]
        raise ModelError(f"the model server answered HTTP {status}: {shown}")
    if isinstance(payload, str):
        raise ModelError(f"invalid response: not JSON: {payload[:300]!r}")
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelError("invalid response: no choices[0].message in the body") from None
    if not isinstance(message, dict):
        raise ModelError(f"invalid response: the message is not an object: {message!r}")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ModelError(f"invalid response: content is not text: {content!r}")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list) or not all(
        isinstance(call, dict)
        and isinstance(call.get("function"), dict)
        and isinstance(call["function"].get("name"), str)
        for call in calls
    ):
        raise ModelError(f"invalid response: malformed tool_calls: {calls!r}")
    return message


def answer(
    question: str,
    *,
    chat: Chat,
    tools: Dispatcher,
    trace: Trace,
    model: str,
    temperature: float,
    max_tokens: int,
    num_ctx: int | None = None,
) -> str:
    """Run the turn: call the model, run its tool calls, until it replies without any."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    turn = 0
    while True:
        turn += 1
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "tools": TOOLS,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stream": False,
        }
        if num_ctx is not None:
            body["options"] = {"num_ctx": num_ctx}
        trace.write({"event": "request", "turn": turn, "body": body})
        status, payload = chat.post(body)
        trace.write({"event": "response", "turn": turn, "status": status, "body": payload})
        message = _message_of(status, payload)
        calls = message.get("tool_calls") or []
        if not calls:
            final = message.get("content") or ""
            trace.write({"event": "final", "answer": final})
            return final
        # A call without an id gets one, so that its result can name the call it answers.
        calls = [
            call if call.get("id") else {**call, "id": f"call_{turn}_{index}"}
            for index, call in enumerate(calls)
        ]
        messages.append(
            {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
        )
        for call in calls:
            if chat.remaining() <= 0:
                raise DeadlineExceeded("turn deadline exceeded while running tool calls")
            call_id = call["id"]
            name = call["function"]["name"]
            raw = call["function"].get("arguments")
            result = tools.dispatch(name, raw)
            content = json.dumps(result, ensure_ascii=False)
            trace.write(
                {
                    "event": "tool_result",
                    "turn": turn,
                    "tool_call_id": call_id,
                    "tool": name,
                    "arguments": arguments_for_trace(raw),
                    "ok": result["ok"],
                    "content": content,
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {kind.__name__}; got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0; got {text!r}")
        return value

    return parse


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2; got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="notes_assistant.py",
        description="Answer one question about the notes in a workspace, with tools.",
        epilog=(
            f"exit codes: {EXIT_OK} answered, {EXIT_MODEL} model/HTTP error, {EXIT_APPROVAL} "
            f"approval needed but stdin closed, {EXIT_TOOL_CALLS} tool-call budget, "
            f"{EXIT_READ_BYTES} read budget, {EXIT_DEADLINE} turn deadline, {EXIT_USAGE} usage"
        ),
    )
    parser.add_argument("question", nargs="?", help="the question (or use --request)")
    parser.add_argument(
        "--request",
        metavar="FILE",
        help="read the question from the 'prompt' field of a JSON file (evalnb's request.json)",
    )
    parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", required=True)
    parser.add_argument(
        "--api-key-env", metavar="NAME", help="send the key held in this environment variable"
    )
    parser.add_argument("--temperature", type=_temperature, default=0.2)
    parser.add_argument("--max-tokens", type=_positive(int), default=1024)
    parser.add_argument(
        "--context",
        type=_positive(int),
        default=8192,
        help="context size in tokens; sent only with --send-context",
    )
    parser.add_argument(
        "--send-context",
        action="store_true",
        help='send the context size as "options": {"num_ctx": N}; the OpenAI '
        "API has no field for it, so only servers that read this Ollama-style "
        "option honour it (llama.cpp fixes it at launch with -c)",
    )
    parser.add_argument(
        "--trace",
        metavar="PATH",
        default=os.environ.get("EVALNB_TRACE"),
        help="JSONL trace file (default: $EVALNB_TRACE, else none)",
    )
    parser.add_argument(
        "--workspace",
        metavar="DIR",
        default=".",
        help="the folder holding the notes (default: the current one)",
    )
    parser.add_argument("--max-tool-calls", type=_positive(int), default=8)
    parser.add_argument("--max-read-bytes", type=_positive(int), default=64 * 1024)
    parser.add_argument("--turn-deadline", type=_positive(float), default=120.0, metavar="SECONDS")
    return parser


def _question(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    if (args.question is None) == (args.request is None):
        parser.error("give the question as an argument or with --request FILE (exactly one)")
    if args.request is None:
        question = args.question
    else:
        try:
            with open(args.request, encoding="utf-8") as handle:
                question = json.load(handle).get("prompt")
        except (OSError, ValueError, AttributeError) as exc:
            parser.error(f"--request {args.request!r}: cannot read a JSON object: {exc}")
    if not isinstance(question, str) or not question.strip():
        parser.error(f"the question must be non-empty text; got {question!r}")
    return question


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    question = _question(parser, args)
    if not os.path.isdir(args.workspace):
        parser.error(f"--workspace {args.workspace!r} is not a folder")
    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None

    deadline = time.monotonic() + args.turn_deadline
    tools = Dispatcher(
        args.workspace, max_tool_calls=args.max_tool_calls, max_read_bytes=args.max_read_bytes
    )
    try:
        trace = Trace(args.trace)
    except OSError as exc:
        parser.error(f"--trace {args.trace!r}: cannot write it: {exc.strerror or exc}")
    chat = Chat(args.base_url, api_key, deadline)
    try:
        final = answer(
            question,
            chat=chat,
            tools=tools,
            trace=trace,
            model=args.model,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            num_ctx=args.context if args.send_context else None,
        )
    except RunStopped as stop:
        print(f"notes_assistant: {stop.message}", file=sys.stderr)
        return stop.exit_code
    finally:
        chat.close()
        trace.close()
    sys.stdout.write(final + "\n")
    sys.stdout.flush()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
