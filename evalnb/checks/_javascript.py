"""JavaScript graders (promptfoo's ``javascript`` assertion), run by Node.js.

``{"type": "javascript", "code": "output.startsWith('Ahoy')"}``: as in promptfoo, one
line is returned (``return <line>``: an IIFE ``(() => { ...; return x; })()`` works),
several lines are a function body that ``return``\\ s; with ``function`` the code
is a CommonJS module (``module.exports = ...``) and that export is called. The code sees
``output`` and ``context`` (``vars``, ``prompt``, ``test``); ``transform`` expressions or bodies
(promptfoo's ``options.transform``) change ``output`` first. The return value is read as
promptfoo reads it (:func:`~evalnb.checks._graders.graded_outcome`).

One long-lived ``node`` process serves every call, one at a time. Each call runs in a
fresh ``vm`` context with no ``require``, ``process`` or ``fetch``, for at most
``timeout`` seconds; the process has a heap of :data:`NODE_HEAP_MB` MB, no file system
(Node's permission model, on a Node that has one: 20 and later) and, where ``unshare`` can
make one, a network namespace of its own with no interfaces. A call that exhausts the heap or
the time ends the process, fails saying why, and the next call starts a new one. Without
``node`` on ``PATH`` the check cannot be built: the error says to install Node.js.
"""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import subprocess
import threading
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

__all__ = ["NODE_HEAP_MB", "JavaScriptCheck", "node_path", "permission_flag"]

#: The heap (old space) of the Node.js process, in MB.
NODE_HEAP_MB = 128

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
const body = (code) => {
  const text = code.trimEnd();
  if (text.includes('\n')) return text;
  const line = text.trim().replace(/;+\s*$/, '');
  if (!/^(const|let|var)\s/.test(line)) return 'return ' + line;
  const at = lastSemicolon(line);
  const tail = at === -1 ? '' : line.slice(at + 1).trim();
  return tail ? line.slice(0, at + 1) + ' return ' + tail : line;
};
// promptfoo's transforms: one line is `return <line>`, several a function body.
const transformBody = (code) => (code.includes('\n') ? code : 'return ' + code);
rl.on('line', (line) => {
  let reply;
  try {
    const req = JSON.parse(line);
    const sandbox = Object.create(null);
    sandbox.__in = line;
    const gen = { strings: false, wasm: false };
    const ctx = vm.createContext(sandbox, { codeGeneration: gen });
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
  } catch (e) {
    reply = { ok: false, error: String(e && e.message ? e.message : e).split('\n')[0] };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
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


def _isolated(command: list[str]) -> list[str]:
    """``command`` in a network namespace of its own when ``unshare`` can make one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return command
    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=10, check=False)
    return [unshare, "-rn", *command] if probe.returncode == 0 else command


class _Node:
    """The one Node.js process, started on first use and again after a fatal call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None

    def start(self, node: str) -> subprocess.Popen[str]:
        flag = permission_flag(node)
        command = _isolated(
            [
                node,
                f"--max-old-space-size={NODE_HEAP_MB}",
                *([flag] if flag else []),
                "--no-warnings",
                "-e",
                _SERVER,
            ]
        )
        env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}
        return subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            env=env,
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def call(self, node: str, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.process = self.start(node)
            process = self.process
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
            except (BrokenPipeError, OSError):
                self.stop()
                return {"ok": False, "error": "the Node.js process could not be started"}
            # The vm timeout bounds synchronous code; this bounds everything else.
            ready, _, _ = select.select([process.stdout], [], [], timeout + 2.0)
            line = process.stdout.readline() if ready else ""
            if not line:
                self.stop()
                why = (
                    f"took longer than {timeout:g} s"
                    if not ready
                    else f"ended Node.js (past its {NODE_HEAP_MB} MB heap?)"
                )
                return {"ok": False, "error": f"the grader {why}; Node.js restarts for the next"}
            reply: dict[str, Any] = json.loads(line)
            return reply


_NODE = _Node()


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
