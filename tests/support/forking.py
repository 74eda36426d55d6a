"""Running a check in a forked child: the test fails with the child's traceback, or when it hangs."""

from __future__ import annotations

import os
import signal
import time
import traceback
from collections.abc import Callable

import pytest

__all__ = ["HANG", "fork_runs"]

HANG = 10.0
"""Seconds a child gets for one locked operation (each takes milliseconds): past it, it hung."""


def fork_runs(operation: Callable[[], object]) -> None:
    """Fork; the child runs ``operation`` and must exit 0 within ``HANG`` seconds."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            operation()
            code = 0
        except BaseException:
            os.write(write, traceback.format_exc().encode()[-2000:])
        finally:
            os._exit(code)
    os.close(write)
    deadline = time.monotonic() + HANG
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            pytest.fail(f"the forked child hung for {HANG:.0f} s (a lock copied in its held state)")
        time.sleep(0.02)
    with os.fdopen(read, "rb") as fh:
        error = fh.read().decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, error
