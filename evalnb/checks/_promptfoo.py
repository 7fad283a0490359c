"""promptfoo's own grading: an imported assertion graded by ``assertions.runAssertion``.

``{"type": "promptfoo", "assertion": {"type": "icontains", "value": "{{topic}}"}}``: the
assertion, as the config wrote it, is handed to promptfoo's Node API with the case's vars
and the sample's answer, prompt and latency; promptfoo renders its value, grades and
returns pass, score and reason. The stored evidence names the engine and its version.

One long-lived Node.js process loads promptfoo once (2-8 s) and serves every call, one at a
time, under the bounds of evalnb's ``javascript`` checks: a time limit per call, an address
space limit (``RLIMIT_AS``, :data:`WORKER_MEMORY_MB`; WebAssembly runs without its guard
regions so that the limit holds) and a V8 heap limit, Node's permission model (read
anywhere, write only its own temporary folder, no child process), a network namespace with
no interface where ``unshare`` can make one, only ``PATH`` and promptfoo's own switches in
its environment, and it dies with the evalnb process. A call past its time ends the
process, fails saying why, and the next call starts a new one.

An assertion that carries code promptfoo would run (``javascript``, a ``transform``, a
template that calls something: :mod:`evalnb.checks._promptfoo_code`) is suite code: it is
graded only once trusted (:mod:`evalnb.checks._trust`, ``--trust-code``).

A model-graded assertion (``llm-rubric``, ``factuality``, ``g-eval``, ...) gets a grading
provider that asks evalnb: evalnb sends promptfoo's grading prompt to the run's judge target
(:data:`~evalnb.checks._judge.JUDGE`: the run's OpenAI-compatible server or ``--judge``)
and hands the reply back, so the grader reaches that address and no other.

``select-best`` and ``max-score`` compare the variants' answers to one case in one repeat: such
a check is graded once per group (:mod:`evalnb.checks._compare`), select-best by promptfoo's
own comparison in the same worker (:mod:`evalnb.checks._promptfoo_compare`).

:func:`find_promptfoo` says where promptfoo is: ``EVALNB_PROMPTFOO`` (a package folder, or
``off`` to hide it), the user's own ``promptfoo`` on ``PATH``, or the one ``make`` pins under
``build/promptfoo``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import resource
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnb._exceptions import ArgumentError, TargetError
from evalnb._types import Case, CheckResult, Request, Sample, Variant
from evalnb.checks._base import Outcome, SpecCheck, register
from evalnb.checks._javascript import node_path, permission_flag
from evalnb.checks._promptfoo_code import assertion_code, code_kinds, for_worker
from evalnb.checks._promptfoo_compare import (
    COMPARING,
    assertion_types,
    components,
    max_score,
    select_best,
)
from evalnb.checks._trust import require_approved

__all__ = [
    "WORKER_MEMORY_MB",
    "PromptfooCheck",
    "PromptfooEngine",
    "find_promptfoo",
    "no_network",
    "quiet_env",
]

#: The address space of the grading process, in MB (V8 reserves far more than it uses).
WORKER_MEMORY_MB = 8192
#: The V8 heap (old space) of the grading process, in MB.
WORKER_HEAP_MB = 768
#: Seconds to load promptfoo, and for one deterministic assertion; a judge call adds its own.
LOAD_TIMEOUT = 90.0
CALL_TIMEOUT = 30.0
#: The mark of the worker's own lines on its stdout.
MARK = b"\x1eevalnb "
#: promptfoo's switches: no telemetry, no update check, no sharing, no remote generation.
QUIET = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "true",
    "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "true",
    "PROMPTFOO_CACHE_ENABLED": "false",
    "PROMPTFOO_SELF_HOSTED": "1",
}
#: The pinned promptfoo (the Makefile's ``promptfoo`` target installs it here).
PINNED = Path(__file__).resolve().parents[2] / "build" / "promptfoo" / "node_modules" / "promptfoo"

_WORKER = r"""
const pf = require(process.env.EVALNB_PROMPTFOO_PACKAGE);
const readline = require('readline');
// promptfoo logs to stdout too: evalnb reads only the lines that carry this mark.
const write = (m) => process.stdout.write('\u001eevalnb ' + JSON.stringify(m) + '\n');
let pending = null;
const judge = {
  id: () => 'evalnb-judge',
  callApi: (prompt) => new Promise((resolve) => {
    pending = resolve;
    write({ judge: String(prompt) });
  }),
};
const grade = async (req) => {
  const test = { ...req.test, options: { ...(req.test.options || {}), provider: judge } };
  const given = { prompt: req.prompt, test, providerResponse: { output: req.output },
    latencyMs: req.latency_ms };
  // An assert-set is graded where promptfoo grades it: runAssertions, over the set alone.
  const r = req.assertion.type === 'assert-set'
    ? await pf.assertions.runAssertions({ ...given, test: { ...test, assert: [req.assertion] } })
    : await pf.assertions.runAssertion({ ...given, assertion: req.assertion });
  const components = (r.componentResults || []).filter((c) => c.assertion)
    .map((c) => ({ type: c.assertion.type, score: c.score }));
  return { pass: r.pass, score: r.score, reason: String(r.reason || ''), components };
};
// select-best: promptfoo's own comparison (matchesSelectBest, exported as
// matchesComparisonBoolean) over the group's answers, as runCompareAssertion calls it.
const compare = async (req) => {
  const a = req.assertion;
  if (typeof a.value !== 'string') throw new Error('select-best must have a string value');
  const options = req.test.options || {};
  const rubricPrompt = a.rubricPrompt || options.rubricPrompt;
  const grading = { ...options, provider: judge, rubricPrompt };
  const rs = await pf.assertions.matchesComparisonBoolean(a.value, req.outputs, grading,
    req.test.vars, {});
  return rs.map((r) => ({ pass: r.pass, score: r.score, reason: String(r.reason || '') }));
};
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.judge_reply !== undefined) {
    const resolve = pending;
    pending = null;
    resolve(msg.error ? { error: msg.error } : { output: msg.judge_reply });
    return;
  }
  (msg.outputs ? compare(msg) : grade(msg)).then((done) => write({ done }),
    (e) => write({ error: String(e && e.message ? e.message : e).split('\n')[0] }));
});
// evalnb ended (or closed the pipe): so does the worker.
rl.on('close', () => process.exit(0));
write({ ready: true });
"""


@dataclass(frozen=True)
class PromptfooEngine:
    """An installed promptfoo: its package folder, version and the ``node`` that runs it."""

    package: Path
    version: str
    node: str

    @property
    def name(self) -> str:
        """``promptfoo 0.121.20``: what each stored check records."""
        return f"promptfoo {self.version}"

    def command(self) -> list[str]:
        """The ``promptfoo`` command line (its CLI through this ``node``)."""
        return [self.node, str(self.package / "dist" / "src" / "entrypoint.js")]


def _package_of(path: Path) -> Path | None:
    """The promptfoo package folder holding ``path`` (its own ``package.json``)."""
    for folder in [path, *path.parents]:
        manifest = folder / "package.json"
        if manifest.is_file():
            with contextlib.suppress(OSError, ValueError):
                if json.loads(manifest.read_text(encoding="utf-8")).get("name") == "promptfoo":
                    return folder
    return None


def find_promptfoo() -> PromptfooEngine | None:
    """The promptfoo to grade with, or None (then evalnb's own translation grades).

    ``EVALNB_PROMPTFOO=off`` hides it; ``EVALNB_PROMPTFOO=/path/to/node_modules/promptfoo``
    names one; else the user's own ``promptfoo`` on ``PATH``, else the pinned one.
    """
    node = node_path()
    given = os.environ.get("EVALNB_PROMPTFOO", "").strip()
    if node is None or given.lower() in ("off", "0", "none", "false"):
        return None
    candidates = [Path(given)] if given else []
    own = shutil.which("promptfoo")
    if own is not None and not given:
        candidates.append(Path(own).resolve())
    candidates.append(PINNED)
    for candidate in candidates:
        package = _package_of(candidate) if candidate.exists() else None
        if package is not None and (package / "dist" / "src" / "index.js").exists():
            return _engine(str(package), node)
    return None


@functools.cache
def _engine(package: str, node: str) -> PromptfooEngine:
    manifest = json.loads((Path(package) / "package.json").read_text(encoding="utf-8"))
    return PromptfooEngine(Path(package), str(manifest.get("version", "?")), node)


def quiet_env(home: Path) -> dict[str, str]:
    """promptfoo's environment: ``PATH``, its switches off, its config folder in ``home``."""
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "HOME": str(home)}
    return {**env, **QUIET, "PROMPTFOO_CONFIG_DIR": str(home / "promptfoo")}


def _limits() -> None:
    """In the child before ``exec``: its address space bounded. (It dies with evalnb by
    its stdin: the worker exits when the pipe closes.)"""
    limit = WORKER_MEMORY_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@functools.cache
def _unshare() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=10, check=False)
    return [unshare, "-rn"] if probe.returncode == 0 else []


def no_network() -> list[str]:
    """The command prefix that runs a process in a network namespace with no interface
    (``unshare -rn``), or nothing where this system cannot make one."""
    return _unshare()


#: Answers a grading prompt: ``(reply, error)``.
JudgeCall = Callable[[str], tuple[str | None, str | None]]


class _Worker:
    """The one grading process, started on first use and again after a fatal call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.home: tempfile.TemporaryDirectory[str] | None = None
        self.pending = b""

    def start(self, engine: PromptfooEngine) -> subprocess.Popen[bytes]:
        self.pending = b""
        self.home = tempfile.TemporaryDirectory(prefix="evalnb-promptfoo-")
        home = Path(self.home.name)
        (home / "promptfoo").mkdir()
        flag = permission_flag(engine.node)
        allow = [f"{flag}", "--allow-fs-read=*", f"--allow-fs-write={home}"] if flag else []
        command = [
            *_unshare(),
            engine.node,
            f"--max-old-space-size={WORKER_HEAP_MB}",
            "--disable-wasm-trap-handler",
            *allow,
            "--no-warnings",
            "-e",
            _WORKER,
        ]
        env = {**quiet_env(home), "EVALNB_PROMPTFOO_PACKAGE": str(engine.package)}
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=home,
            preexec_fn=_limits,
        )
        if self.read(process, time.monotonic() + LOAD_TIMEOUT) != {"ready": True}:
            self.stop()
            raise RuntimeError(f"{engine.name} did not load within {LOAD_TIMEOUT:g} s")
        return process

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        if self.home is not None:
            self.home.cleanup()
            self.home = None

    def read(self, process: subprocess.Popen[bytes], deadline: float) -> dict[str, Any] | None:
        """The next message of the worker (lines without :data:`MARK` are promptfoo's
        logs, skipped), or None when it ends or the deadline passes."""
        assert process.stdout is not None
        fd = process.stdout.fileno()
        while True:
            line, newline, rest = self.pending.partition(b"\n")
            if newline:
                self.pending = rest
                if line.startswith(MARK):
                    message: dict[str, Any] = json.loads(line[len(MARK) :])
                    return message
                continue
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 1 << 16) if ready else b""
            if not chunk:
                return None
            self.pending += chunk

    def grade(
        self, engine: PromptfooEngine, request: dict[str, Any], judge: JudgeCall
    ) -> dict[str, Any]:
        """promptfoo's ``{"done": {pass, score, reason}}`` or ``{"error": ...}``."""
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.process = None
                self.process = self.start(engine)
            process = self.process
            assert process.stdin is not None
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
            deadline = time.monotonic() + CALL_TIMEOUT
            while True:
                message = self.read(process, deadline)
                if message is None:
                    why = (
                        f"took longer than {CALL_TIMEOUT:g} s"
                        if process.poll() is None
                        else f"ended (past its {WORKER_MEMORY_MB} MB address space?)"
                    )
                    self.stop()
                    return {"error": f"promptfoo {why}; it restarts for the next call"}
                if "judge" not in message:
                    return message
                reply, error = judge(str(message["judge"]))
                answer = {"judge_reply": reply or "", "error": error}
                process.stdin.write(json.dumps(answer).encode() + b"\n")
                process.stdin.flush()
                deadline = time.monotonic() + CALL_TIMEOUT


_PROCESS = _Worker()


def grading_messages(prompt: str) -> list[dict[str, Any]]:
    """promptfoo's grading prompt as chat messages: a JSON message list is one, as
    promptfoo's OpenAI provider reads it; other text is one user message."""
    with contextlib.suppress(ValueError):
        parsed = json.loads(prompt)
        if isinstance(parsed, list) and all(isinstance(m, dict) and "role" in m for m in parsed):
            return parsed
    return [{"role": "user", "content": prompt}]


def _assertion(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise ValueError("must be a promptfoo assertion (an object with a 'type')")
    plain: dict[str, Any] = json.loads(json.dumps(dict(value)))
    return plain


def _var_names(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError("must be an object of evalnb's var name: promptfoo's var name")
    return dict(value)


@register
class PromptfooCheck(SpecCheck):
    """An imported promptfoo assertion graded by promptfoo itself (see the module)."""

    type = "promptfoo"
    required = {"assertion": _assertion}
    optional = {"engine": str, "var_names": _var_names}
    reads_case = True

    def validate(self, where: str) -> None:
        # select-best and max-score compare the variants' answers: graded per group.
        self.compares = self.values["assertion"]["type"] in COMPARING
        self.engine = find_promptfoo()
        if self.engine is None:
            raise ArgumentError(
                f"'{where}' is graded by promptfoo, which is not installed here: run "
                "`make promptfoo` or `npm install promptfoo`, or import the suite again "
                "without it (evalnb's own translation then grades)"
            )

    def label(self) -> str:
        return str(self.values["assertion"]["type"])

    def promptfoo_vars(self, case: Case) -> dict[str, Any]:
        """The case's vars under the names promptfoo knows (``var_names``: an importer kept
        a var named like one of evalnb's own fields apart, as ``var_prompt``)."""
        names = self.values.get("var_names") or {}
        return {names.get(key, key): value for key, value in case.vars.items()}

    def carried_code(self) -> str | None:
        """What of the assertion promptfoo would run as code (the trust rule asks about it)."""
        return assertion_code(self.values["assertion"])

    def code_label(self) -> str:
        """``promptfoo javascript in check 'x'``: how a refusal names it."""
        return f"promptfoo {'/'.join(code_kinds(self.values['assertion']))} in check {self.name!r}"

    @staticmethod
    def code_bounds() -> str:
        """One line: which layers bound the code promptfoo runs in the grading worker."""
        node = node_path()
        fenced = (
            "Node's permission model: reads anywhere, writes only its temporary folder, "
            "no child process"
            if node is not None and permission_flag(node)
            else "no Node permission model here: the file system is not fenced"
        )
        network = "no network (own namespace)" if _unshare() else "no network namespace here"
        return (
            f"promptfoo's grading worker, one Node.js process with {WORKER_MEMORY_MB} MB of "
            f"address space and a {WORKER_HEAP_MB} MB heap, {CALL_TIMEOUT:g} s a call, PATH "
            f"only; {network}; {fenced}"
        )

    async def __call__(self, sample: Sample) -> Outcome:
        assert self.engine is not None
        engine = self.engine
        if self.carried_code() is not None:  # suite code: only once trusted
            require_approved(self)
        case = self.bound_case()
        loop = asyncio.get_running_loop()
        asked: list[dict[str, Any]] = []
        judge = _judge_call(loop, sample, asked)
        request = {
            "assertion": for_worker(self.values["assertion"]),
            "test": {"vars": self.promptfoo_vars(case), "metadata": dict(case.metadata)},
            "output": sample.answer or "",
            "prompt": sample.prompt,
            "latency_ms": sample.latency_ms,
        }
        reply = await asyncio.to_thread(_PROCESS.grade, engine, request, judge)
        evidence: dict[str, Any] = {"engine": engine.name, **({"judge": asked} if asked else {})}
        if "done" not in reply:
            return Outcome(
                False, f"promptfoo could not grade: {reply.get('error')}"[:300], evidence
            )
        done = reply["done"]
        score = done.get("score")
        kept = float(score) if isinstance(score, int | float) and 0 <= score <= 1 else None
        evidence["reason"] = done.get("reason")
        evidence["score"] = score  # as promptfoo gave it (max-score reads it)
        if done.get("components"):
            evidence["components"] = done["components"]  # an assert-set's, one by one
        detail = "" if done.get("pass") else str(done.get("reason") or "")[:300]
        return Outcome(bool(done.get("pass")), detail, evidence, kept)

    async def compare(
        self, samples: Sequence[Sample], others: Sequence[Sequence[CheckResult]]
    ) -> list[Outcome]:
        """The outcome of each of a group's answers (see :mod:`evalnb.checks._compare`):
        select-best graded by promptfoo in the worker, max-score by promptfoo's formula."""
        assert self.engine is not None
        assertion, case = self.values["assertion"], self.bound_case()
        if assertion["type"] == "max-score":
            types = assertion_types(case)
            rows = [components(row, types) for row in others]
            return max_score(assertion, rows, self.engine.name)
        if self.carried_code() is not None:  # suite code: only once trusted
            require_approved(self)
        asked: list[dict[str, Any]] = []
        judge = _judge_call(asyncio.get_running_loop(), samples[0], asked)
        grade = functools.partial(_PROCESS.grade, self.engine, judge=judge)
        given = self.promptfoo_vars(case)
        return await select_best(
            for_worker(assertion), case, self.engine.name, samples, grade, asked, given
        )


def _judge_call(
    loop: asyncio.AbstractEventLoop, sample: Sample, asked: list[dict[str, Any]]
) -> JudgeCall:
    """What the worker thread calls for a grading prompt: the run's judge target, asked on
    the run's event loop; each exchange is kept in ``asked`` as evidence."""
    from evalnb.checks._judge import JUDGE

    target = JUDGE.get()

    def call(prompt: str) -> tuple[str | None, str | None]:
        if target is None:
            return None, "no judge target: give the run a judge (--judge or [judge])"
        messages = grading_messages(prompt)
        request = Request(
            Case(f"judge:{sample.case_id}", messages=messages),
            Variant("judge"),
            sample.repeat,
            tuple(messages),
            {},
        )
        future = asyncio.run_coroutine_threadsafe(target.complete(request), loop)
        try:
            completion = future.result(timeout=CALL_TIMEOUT * 4)
        except (TargetError, TimeoutError) as exc:
            asked.append({"request": messages, "error": str(exc)})
            return None, f"the judge failed ({exc})"
        asked.append({"request": messages, "reply": completion.text})
        return completion.text, None

    return call
