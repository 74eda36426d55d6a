"""The viewer's worker threads: the job due first runs first, outcomes reach the caller unchanged."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterator

import pytest

from loom_otel.viewer import _threads
from loom_otel.viewer._threads import QUICK, SLOW, WAIT, PriorityThreads


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(_threads, "monotonic", fake)
    return fake


@pytest.fixture
def threads() -> Iterator[PriorityThreads]:
    pool = PriorityThreads(1)
    yield pool
    pool.close()


async def _blocked(pool: PriorityThreads) -> tuple[asyncio.Task[None], threading.Event]:
    """The pool's one thread busy until the event is set."""
    release, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        assert release.wait(30)

    task = asyncio.create_task(pool.run(SLOW, hold))
    while not started.is_set():
        await asyncio.sleep(0.01)
    return task, release


def _job(order: list[str], name: str) -> Callable[[], str]:
    def job() -> str:
        order.append(name)
        return name

    return job


async def test_a_step_read_goes_before_the_pages_queued_just_before_it(threads: PriorityThreads, clock: _Clock) -> None:
    busy, release = await _blocked(threads)
    order: list[str] = []
    pages = [asyncio.create_task(threads.run(SLOW, _job(order, f"page {n}"))) for n in (1, 2)]
    await asyncio.sleep(0)
    clock.now += (WAIT[SLOW] - WAIT[QUICK]) / 2  # queued after the pages, due before them
    step = asyncio.create_task(threads.run(QUICK, _job(order, "step")))
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(busy, *pages, step) == [None, "page 1", "page 2", "step"]
    assert order == ["step", "page 1", "page 2"]


async def test_a_page_that_waited_long_enough_goes_before_a_newer_step_read(
    threads: PriorityThreads, clock: _Clock
) -> None:
    busy, release = await _blocked(threads)
    order: list[str] = []
    page = asyncio.create_task(threads.run(SLOW, _job(order, "page")))
    await asyncio.sleep(0)
    clock.now += WAIT[SLOW] - WAIT[QUICK] + 0.01
    step = asyncio.create_task(threads.run(QUICK, _job(order, "step")))
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(busy, page, step)
    assert order == ["page", "step"]


async def test_the_callers_exception_arrives_unchanged_and_the_thread_goes_on(threads: PriorityThreads) -> None:
    error = ValueError("refused")

    def fails() -> None:
        raise error

    with pytest.raises(ValueError, match="refused") as raised:
        await threads.run(QUICK, fails)
    assert raised.value is error
    assert await threads.run(QUICK, lambda: 42) == 42


async def test_a_job_runs_in_a_copy_of_its_callers_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("the request's")
    pool = PriorityThreads(2)
    try:
        assert await pool.run(SLOW, var.get) == "the request's"
    finally:
        pool.close()


async def test_a_cancelled_callers_job_still_runs_whole(threads: PriorityThreads) -> None:
    busy, release = await _blocked(threads)
    done = threading.Event()
    waiting = asyncio.create_task(threads.run(QUICK, done.set))
    await asyncio.sleep(0)
    waiting.cancel()
    release.set()
    await busy
    assert await asyncio.to_thread(done.wait, 30)  # recorded whole, though nobody waits for the answer
    assert await threads.run(QUICK, lambda: "next") == "next"


async def test_threads_grow_to_the_bound_and_close_ends_them() -> None:
    pool = PriorityThreads(3)
    release = threading.Event()
    started = threading.Semaphore(0)

    def hold() -> str:
        started.release()
        assert release.wait(30)
        return threading.current_thread().name

    jobs = [asyncio.create_task(pool.run(SLOW, hold)) for _ in range(5)]
    for _ in range(3):
        assert await asyncio.to_thread(started.acquire, True, 30)
    assert sum(t.name == "loom-otel-viewer" for t in threading.enumerate()) >= 3
    assert len(pool._threads) == 3  # no more than the bound, however many wait
    release.set()
    assert set(await asyncio.gather(*jobs)) == {"loom-otel-viewer"}
    ran = list(pool._threads)
    pool.close()
    assert not pool._threads
    assert not any(thread.is_alive() for thread in ran)
    with pytest.raises(RuntimeError, match="closed"):
        await pool.run(QUICK, lambda: None)


async def test_an_idle_thread_ends_and_a_new_job_starts_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_threads, "_IDLE", 0.05)
    pool = PriorityThreads(2)
    try:
        assert await pool.run(QUICK, lambda: 1) == 1
        for _ in range(600):
            if not pool._threads:
                break
            await asyncio.sleep(0.05)
        assert not pool._threads
        assert await pool.run(SLOW, lambda: 2) == 2
    finally:
        pool.close()
