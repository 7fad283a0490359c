"""A sync ``Function`` runs each call on a worker thread of the running loop, as
``asyncio.to_thread`` did: in a copy of the caller's context, as many at once as asyncio's
default executor allows, every exception reaching the caller, and a call cancelled before
it starts never run."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import threading
import time
import weakref
from typing import Any

import pytest

from evalnb import Case, Completion, Function, Variant
from evalnb._types import Request
from evalnb.targets import _function

REQUEST = Request(Case("c", prompt="p"), Variant("v"), 0, ({"role": "user", "content": "p"},), {})
WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_each_call_runs_on_a_worker_thread_in_the_callers_context() -> None:
    seen: list[tuple[str, str]] = []

    def fn(request: Request) -> str:
        seen.append((threading.current_thread().name, WHO.get()))
        return "ok"

    async def call() -> Completion:
        WHO.set("caller")
        return await Function(fn).complete(REQUEST)

    assert asyncio.run(call()).text == "ok"
    assert seen == [("evalnb-function", "caller")]


@pytest.mark.parametrize("error", [ValueError("bad"), KeyboardInterrupt()])
def test_what_the_function_raises_reaches_the_caller(error: BaseException) -> None:
    def fn(request: Request) -> str:
        raise error

    with pytest.raises(type(error)):
        asyncio.run(Function(fn).complete(REQUEST))


def test_calls_run_as_wide_as_asyncio_default_executor_and_no_wider() -> None:
    size = min(32, (os.cpu_count() or 1) + 4)
    assert size == _function._SIZE
    together = threading.Barrier(size, timeout=10)
    lock = threading.Lock()
    running, widest = 0, 0

    def fn(request: Request) -> str:
        nonlocal running, widest
        with lock:
            running += 1
            widest = max(widest, running)
        together.wait()  # only passes once `size` calls run at the same time
        time.sleep(0.05)
        with lock:
            running -= 1
        return "ok"

    async def calls() -> list[Completion]:
        target = Function(fn)
        return await asyncio.gather(*(target.complete(REQUEST) for _ in range(size * 2)))

    assert [c.text for c in asyncio.run(calls())] == ["ok"] * size * 2
    assert widest == size


def test_threads_are_reused_and_end_with_their_loop() -> None:
    async def calls() -> int:
        target = Function(lambda request: "ok")
        for _ in range(50):
            await target.complete(REQUEST)
        return _function._LOOPS[asyncio.get_running_loop()].started

    assert asyncio.run(calls()) == 1  # one call at a time: one thread
    deadline = time.monotonic() + 5
    while _threads_named("evalnb-function") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _threads_named("evalnb-function") == []


def _threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_a_call_cancelled_before_it_starts_never_runs() -> None:
    release = threading.Event()
    ran: list[str] = []

    def fn(request: Request) -> str:
        ran.append(request.case.id)
        release.wait(10)
        return "ok"

    async def calls() -> None:
        target = Function(fn)
        busy = [asyncio.create_task(target.complete(REQUEST)) for _ in range(_function._SIZE)]
        while len(ran) < _function._SIZE:
            await asyncio.sleep(0.01)
        later = Request(Case("later", prompt="p"), Variant("v"), 0, REQUEST.messages, {})
        waiting = asyncio.create_task(target.complete(later))
        await asyncio.sleep(0.05)
        waiting.cancel()
        release.set()
        await asyncio.gather(*busy)
        await asyncio.sleep(0.1)  # a thread is free: it would run the call now

    asyncio.run(calls())
    assert "later" not in ran and len(ran) == _function._SIZE


def test_a_call_outliving_its_loop_leaves_later_runs_working(monkeypatch: Any) -> None:
    failures: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    release = threading.Event()

    def slow(request: Request) -> str:
        release.wait(10)
        return "late"

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def abandoned() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(Function(slow).complete(REQUEST), 0.05)

    asyncio.run(abandoned())  # the loop is closed while the call still runs
    release.set()
    time.sleep(0.1)
    gc.collect()
    assert failures == [] and loops[0]() is None  # nothing keeps the closed loop
    assert asyncio.run(Function(lambda r: "ok").complete(REQUEST)).text == "ok"
