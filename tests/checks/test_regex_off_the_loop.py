"""A pathological regex check runs off the event loop with a wall-clock deadline: the other
samples go on meanwhile, the run ends in bounded time, and the check fails saying it timed
out."""

from __future__ import annotations

import json
import threading
import time

import evalnb
from evalnb import store
from evalnb.checks import run_checks
from tests.builders import sample

#: Each backtracks for minutes on "aaaa...!" (the regex package answers "(a+)+$" at once).
PATHOLOGICAL = ["(a|aa)+$", "(a|aa)+b", "(aa|a)+$", "(aa|a)+b", "((a|aa)+)+c", "(a|aa|aaa)+$"]
SLOW_CASES = 6
INSTANT_CASES = 60
TIMEOUT = 1.0


def test_slow_patterns_do_not_hold_up_the_other_samples(tmp_path):
    slow = [
        {
            "id": f"slow-{i}",
            "prompt": "slow",
            "checks": [
                {"type": "regex", "pattern": p, "timeout": TIMEOUT, "name": f"slow-{k}"}
                for k, p in enumerate(PATHOLOGICAL)
            ],
        }
        for i in range(SLOW_CASES)
    ]
    instant = [
        {"id": f"quick-{i}", "prompt": "quick", "checks": [{"type": "regex", "pattern": "^ok"}]}
        for i in range(INSTANT_CASES)
    ]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in slow + instant))
    called: dict[str, float] = {}
    lock = threading.Lock()

    def answer(request):
        with lock:
            called[request.case.id] = time.monotonic()
        return "a" * 40 + "!" if request.prompt == "slow" else "ok"

    out = tmp_path / "run"
    started = time.monotonic()
    evalnb.run(cases, evalnb.Function(answer), out=out, concurrency=8, progress=False)
    elapsed = time.monotonic() - started

    # Six checks in a row of at most TIMEOUT each, the slow samples side by side.
    assert elapsed < 6 * TIMEOUT * 2.5 + 5, elapsed
    quick = [t - started for case, t in called.items() if case.startswith("quick")]
    assert len(quick) == INSTANT_CASES
    # Every instant sample was asked while the slow checks were still running.
    assert max(quick) < 6 * TIMEOUT, sorted(quick)[-5:]

    checks = store.read_table(out, "checks").to_pandas()
    slow_rows = checks[checks["case_id"].str.startswith("slow")]
    assert len(slow_rows) == SLOW_CASES * len(PATHOLOGICAL)
    assert slow_rows["outcome"].eq(False).all()
    assert slow_rows["detail"].str.startswith(f"gave up after {TIMEOUT:g} s: timed out").all()
    quick_rows = checks[checks["case_id"].str.startswith("quick")]
    assert len(quick_rows) == INSTANT_CASES and quick_rows["outcome"].eq(True).all()


def test_the_deadline_is_wall_clock_and_the_answer_still_right_off_the_loop():
    spec = {"type": "regex", "pattern": "(a|aa)+$", "timeout": 0.3}
    started = time.monotonic()
    (result,) = run_checks([spec], sample("a" * 40 + "!"))
    assert time.monotonic() - started < 3
    assert result.outcome is False and "timed out" in result.detail
    # A pattern that is slow to say yes still says yes from its thread.
    (result,) = run_checks(
        [{"type": "regex", "pattern": "(a|aa)+$", "timeout": 10}], sample("a" * 22)
    )
    assert result.outcome is True
    (result,) = run_checks([{"type": "regex", "pattern": "^x"}], sample("ok"))
    assert result.outcome is False and result.detail == "does not match /^x/"
