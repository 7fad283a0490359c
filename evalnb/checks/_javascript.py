"""JavaScript graders (promptfoo's ``javascript`` assertion), run by Node.js.

``{"type": "javascript", "code": "output.startsWith('Ahoy')"}``: as in promptfoo, one
line is returned (``return <line>``: an IIFE ``(() => { ...; return x; })()`` works),
several lines are a function body that ``return``\\ s; with ``function`` the code
is a CommonJS module (``module.exports = ...``) and that export is called. The code sees
``output`` and ``context`` (``vars``, ``prompt``, ``test``); ``transform`` expressions or bodies
(promptfoo's ``options.transform``) change ``output`` first. The return value is read as
promptfoo reads it (:func:`~evalnb.checks._graders.graded_outcome`).

A small pool of ``node`` workers (:data:`~evalnb.checks._sandbox.WORKERS`) serves the
calls, each worker one at a time, so a slow grader holds only its own worker; the time a call
waits for a free one is not counted in its budget. Each call runs in a fresh ``vm`` context
with no ``require``, ``process``, timers or ``fetch``, its promise jobs run inside its own
``timeout`` (``microtaskMode: 'afterEvaluate'``), so nothing it leaves behind reaches the next
call. A worker has a heap of :data:`NODE_HEAP_MB` MB and at most :data:`NODE_DATA_MB` MB of
private memory (``RLIMIT_DATA``, which counts ArrayBuffers), no file system (Node's permission
model, on a Node that has one: 20 and later), no environment but ``PATH`` and ``LANG``, and,
where ``unshare`` can make one, a network namespace of its own with no interfaces; one line
on stderr says when a layer is missing. A call over its memory or time ends its worker and
fails saying why; a worker that died after its last reply is replaced without blaming the
next grader. Workers are killed at exit, and by evalnb's watchdog if the run is killed.
Without ``node`` on ``PATH`` the check cannot be built: the error says to install Node.js.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._types import Sample
from evalnb.checks._base import CHECK_TIMEOUT, CheckReturn, Outcome, register
from evalnb.checks._graders import (
    CodeCheck,
    _number,
    _transforms,
    graded_outcome,
    grader_context,
)
from evalnb.checks._lexical import _seconds, _text
from evalnb.checks._sandbox import WORKERS, Lines, isolated, spawn, stop

__all__ = [
    "NODE_DATA_MB",
    "NODE_HEAP_MB",
    "NODE_RSS_MB",
    "JavaScriptCheck",
    "node_path",
    "permission_flag",
]

#: The heap (old space) of a Node.js worker, in MB.
NODE_HEAP_MB = 128
#: Every private writable page of a Node.js worker (``RLIMIT_DATA``), ArrayBuffers
#: included, in MB: its resident memory stays under :data:`NODE_RSS_MB`.
NODE_DATA_MB = 384
#: What a Node.js worker's resident memory stays under, in MB.
NODE_RSS_MB = 512
#: Seconds a worker may take to start and take a request.
_START_SECONDS = 20.0

_SERVER = r"""
const vm = require('vm');
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
const SETUP = 'var __req = JSON.parse(__in); var output = __req.output; ' +
  'var context = __req.context; var module = { exports: {} }; var exports = module.exports;';
const call = (text) => '(function(output, context){\n' + text + '\n})(output, context)';
// promptfoo's rule (buildFunctionBody): several lines are a function body; one line is
// `return <line>`, or after leading const/let/var statements, returns the last expression.
const lastSemicolon = (code) => {
  let quote = null, last = -1;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (quote) { if (c === '\\') i++; else if (c === quote) quote = null; }
    else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === ';') last = i;
  }
  return last;
};
// A collector for this script only: contexts made after the flag is unset have no gc.
require('v8').setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc');
require('v8').setFlagsFromString('--no-expose-gc');
// A reply stays under LIMIT characters: a long reason is cut, its size kept in the text.
const LIMIT = 100000;
const cut = (reply, size) => {
  if (size <= LIMIT) return reply;
  const v = reply.value;
  if (v && typeof v === 'object' && typeof v.reason === 'string') {
    const reason = v.reason.slice(0, LIMIT) + ' [cut: ' + v.reason.length + ' characters in all]';
    const kept = { pass: v.pass, score: v.score, reason: reason };
    if (JSON.stringify(kept).length <= LIMIT * 2) return { ok: true, value: kept };
  }
  const error = 'the grader returned ' + size + ' characters of JSON (over ' + LIMIT + ')';
  return { ok: false, error: error };
};
// A rejection or a throw left behind by a grader is not the next grader's failure.
process.on('unhandledRejection', () => {});
process.on('uncaughtException', () => {});
const body = (code) => {
  const text = code.trimEnd();
  if (text.includes('\n')) return text;
  const line = text.trim().replace(/;+\s*$/, '');
  // A line that is a return statement already is the body (promptfoo would fail on it).
  if (/^return\b/.test(line)) return line;
  if (!/^(const|let|var)\s/.test(line)) return 'return ' + line;
  const at = lastSemicolon(line);
  const tail = at === -1 ? '' : line.slice(at + 1).trim();
  return tail ? line.slice(0, at + 1) + ' return ' + tail : line;
};
// promptfoo's transforms: one line is `return <line>`, several a function body.
const transformBody = (code) => (code.includes('\n') ? code : 'return ' + code);
rl.on('line', (line) => {
  process.stdout.write('{}\n');  // taken: from here on, what happens is this call's
  let reply;
  try {
    const req = JSON.parse(line);
    const sandbox = Object.create(null);
    sandbox.__in = line;
    const gen = { strings: false, wasm: false };
    // Promise jobs run before each evaluation returns, inside its timeout: none outlives it.
    const ctx = vm.createContext(sandbox, { codeGeneration: gen, microtaskMode: 'afterEvaluate' });
    const opts = { timeout: req.timeout_ms };
    // Everything the grader touches is made inside its own realm.
    vm.runInContext(SETUP, ctx, opts);
    for (let i = 0; i < req.transforms.length; i++) {
      vm.runInContext('output = ' + call(transformBody(req.transforms[i])), ctx, opts);
    }
    let value;
    if (req.function) {
      vm.runInContext(req.code, ctx, opts);
      const name = JSON.stringify(req.function);
      value = vm.runInContext('(function(){ var e = module.exports; var f = ' + name +
        " === 'default' && typeof e === 'function' ? e : e[" + name + "]; " +
        "if (typeof f !== 'function') throw new Error('the module exports no function ' + " +
        name + '); return f(output, context); })()', ctx, opts);
    } else {
      value = vm.runInContext(call(body(req.code)), ctx, opts);
    }
    if (value && typeof value.then === 'function') {
      throw new Error('returned a Promise; graders here must return a value');
    }
    sandbox.__v = value;
    const text = value === undefined ? 'null' : vm.runInContext('JSON.stringify(__v)', ctx, opts);
    reply = { ok: true, value: JSON.parse(text || 'null') };
    reply = cut(reply, text ? text.length : 0);
  } catch (e) {
    reply = { ok: false, error: String(e && e.message ? e.message : e).split('\n')[0] };
  }
  process.stdout.write(JSON.stringify(reply).slice(0, LIMIT * 2) + '\n');
  // What the call left (its context, its ArrayBuffers) is freed before the next call.
  if (process.memoryUsage().arrayBuffers > 32 * 1024 * 1024) collect();
});
"""


def node_path() -> str | None:
    """The ``node`` executable on ``PATH`` (``nodejs`` on older Debian), or None."""
    return shutil.which("node") or shutil.which("nodejs")


@functools.cache
def permission_flag(node: str) -> str | None:
    """The flag that turns on ``node``'s permission model (no file system, no child
    processes): ``--permission`` (Node 22.13+), ``--experimental-permission`` (Node 20), or
    None for a Node without one (Debian 12's Node 18), which then runs without it."""
    for flag in ("--permission", "--experimental-permission"):
        try:
            probe = subprocess.run(
                [node, flag, "-e", ""], capture_output=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if probe.returncode == 0:
            return flag
    return None


_noticed: set[str] = set()


def _notice(node: str) -> None:
    """Say once, in one line, which layer a javascript grader runs without here."""
    missing = []
    if not isolated(["true"])[0].endswith("unshare"):
        missing.append("a network namespace of its own (unshare cannot make one here)")
    if permission_flag(node) is None:
        missing.append("Node's permission model (this Node has no permission flag)")
    line = " and without ".join(missing)
    if line and line not in _noticed:
        _noticed.add(line)
        print(f"evalnb: javascript graders run without {line}", file=sys.stderr)


class _Worker:
    """One Node.js process: one call at a time, each in a fresh context."""

    def __init__(self, node: str):
        flag = permission_flag(node)
        command = isolated(
            [
                node,
                f"--max-old-space-size={NODE_HEAP_MB}",
                *([flag] if flag else []),
                "--no-warnings",
                "-e",
                _SERVER,
            ]
        )
        self.process = spawn(command, memory_mb=NODE_DATA_MB, data=True)
        assert self.process.stdout is not None
        self.lines = Lines(self.process.stdout.fileno())

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The reply, or a failure saying why; None when the worker was dead before it
        took the request (then it is not this grader's fault: the caller asks another)."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            return None
        if self.lines.next(time.monotonic() + _START_SECONDS) != b"{}":  # taken
            return None
        # The vm timeout bounds the grader's own code and its promise jobs; this the rest.
        deadline = time.monotonic() + timeout + 2.0
        line = self.lines.next(deadline)
        if line is None:
            # Before the deadline, no line means the pipe closed: the process ended.
            why = (
                f"took longer than {timeout:g} s"
                if time.monotonic() >= deadline
                else f"ended Node.js (past its {NODE_HEAP_MB} MB heap or {NODE_DATA_MB} MB "
                "of memory?)"
            )
            return {"ok": False, "error": f"the grader {why}; its worker is replaced", "dead": 1}
        reply: dict[str, Any] = json.loads(line)
        return reply

    def stop(self) -> None:
        stop(self.process)


class _Pool:
    """Up to :data:`WORKERS` Node.js processes, each serving one call at a time: a slow
    grader holds only its own worker, and the time a call waits for one is not its budget."""

    def __init__(self) -> None:
        self.slots = threading.BoundedSemaphore(WORKERS)
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []
        self.busy: set[_Worker] = set()

    def _take(self, node: str) -> _Worker:
        with self.lock:
            while self.idle:
                worker = self.idle.pop()
                if worker.process.poll() is None:
                    self.busy.add(worker)
                    return worker
                worker.stop()  # it died between calls: nobody's fault
        worker = _Worker(node)
        with self.lock:
            self.busy.add(worker)
        return worker

    def _give_back(self, worker: _Worker, healthy: bool) -> None:
        with self.lock:
            self.busy.discard(worker)
            if healthy:
                self.idle.append(worker)
        if not healthy:
            worker.stop()

    def call(self, node: str, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        with self.slots:
            for _attempt in range(2):  # a second worker when the first was already dead
                worker = self._take(node)
                try:
                    reply = worker.call(request, timeout)
                except BaseException:
                    self._give_back(worker, False)
                    raise
                healthy = reply is not None and "dead" not in reply
                self._give_back(worker, healthy)
                if reply is not None:
                    reply.pop("dead", None)
                    return reply
        return {"ok": False, "error": "Node.js could not be started"}

    def stop(self) -> None:
        """End every worker (at exit, and for tests)."""
        with self.lock:
            workers = [*self.idle, *self.busy]
            self.idle, self.busy = [], set()
        for worker in workers:
            worker.stop()


_NODE = _Pool()
atexit.register(_NODE.stop)


@register
class JavaScriptCheck(CodeCheck):
    """JavaScript source as a grader, run by Node.js (see the module)."""

    type = "javascript"
    required = {"code": _text}
    optional = {
        "function": _text,
        "threshold": _number,
        "timeout": _seconds,
        "transform": _transforms,
    }
    bounded = False
    self_timed = True
    reads_case = True

    def validate(self, where: str) -> None:
        self.node = node_path()
        if self.node is None:
            raise ArgumentError(
                f"'{where}' is a javascript check, which needs Node.js: no 'node' on PATH "
                "(install it: apt-get install nodejs)"
            )
        self.timeout = self.values.get("timeout", CHECK_TIMEOUT)
        self.take_threshold()

    def __call__(self, sample: Sample) -> CheckReturn:
        assert self.node is not None
        _notice(self.node)
        request = {
            "code": self.values["code"],
            "function": self.values.get("function"),
            "output": sample.answer or "",
            "context": grader_context(self.case, sample),
            "transforms": list(self.values.get("transform", ())),
            "timeout_ms": int(self.timeout * 1000),
        }
        reply = _NODE.call(self.node, request, self.timeout)
        if not reply.get("ok"):
            return Outcome(False, f"JavaScript error: {reply.get('error')}"[:300])
        return graded_outcome(reply.get("value"), self.values.get("threshold"))
