"""Syncing many files at once without giving the interpreter up for each: a helper process does it.

loom-otel syncs only its own files and directories (never the whole file system: ``syncfs`` would write
back a neighbour's dirty pages too, and the neighbour would set how long a group commit takes). A group
commit of a new conversation per call has a few dozen of them. Synced here, each ``open``, ``fsync`` and
``close`` gives the interpreter lock up and must win it back from the application's threads, which cost
those threads about 70 us a call (issue 49). So a group of more than ``_HERE`` paths goes to a helper
process, a few lines of Python started once (``python -I -S``: no site, no environment), in one write and
one read: it opens and ``fsync``s each path, in order, and answers once. An ``fsync`` through another
process's descriptor syncs the same file.

The helper ends when this process closes its pipe (at exit, or when it dies: it reads end of file). A
forked child starts its own when it needs one. Where none can start (an embedding whose
``sys.executable`` is no Python, a sandbox without ``fork``), or one stopped answering, the paths are
synced here, one by one, and a new helper is tried ``_RETRY_SECONDS`` later. Nothing here logs the
paths' contents; a path is a store's or a journal's own (hex names under a configured directory).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Final

__all__ = ["sync_paths"]

_logger = logging.getLogger(__name__)

_HERE: Final = 2
"""At most this many paths are synced in this process (a call under ``always``: a round trip would cost more)."""
_THREADS: Final = 16
"""The helper's ``fsync``s of files run side by side: the file system commits them together (an ext4
journal commit per file, one after another, stalled the application's own writes behind them)."""
_RETRY_SECONDS: Final = 60.0
_READY_SECONDS: Final = 10.0
"""How long a new helper may take to start before its first group is synced here instead."""
_EXECUTABLE: str = sys.executable

_CHILD: Final = r"""
import os, sys
from concurrent.futures import ThreadPoolExecutor

def sync(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return b"%d\0%s" % (exc.errno or 0, path)
    try:
        os.fsync(fd)
    except OSError as exc:
        return b"%d\0%s" % (exc.errno or 0, path)
    finally:
        os.close(fd)
    return None

pool = ThreadPoolExecutor(int(sys.argv[1]))
read, write = sys.stdin.buffer.read, sys.stdout.buffer
write.write(b"ready\n")
write.flush()
while True:
    head = read(4)
    if len(head) < 4:
        break
    files, _, dirs = read(int.from_bytes(head, "big")).partition(b"\0\0")
    failed = [f for f in pool.map(sync, files.split(b"\0") if files else ()) if f]
    for path in dirs.split(b"\0") if dirs and not failed else ():
        failed = [f for f in (sync(path),) if f]
        if failed:
            break
    answer = failed[0] if failed else b"ok"
    write.write(len(answer).to_bytes(4, "big") + answer)
    write.flush()
"""


def sync_paths(files: Sequence[str], directories: Sequence[str] = ()) -> None:
    """``fsync`` ``files`` (side by side), then ``directories`` in their order (the entries a file was made
    or renamed under, the deepest first); one that is gone is skipped (erased since: nothing of it is
    left to keep). ``OSError`` for one that cannot be synced."""
    if len(files) + len(directories) > _HERE:
        with _lock:
            helper = _helper()
            if helper is not None and helper.sync(files, directories):
                return
    for path in (*files, *directories):
        sync_here(path)


def sync_here(path: str | os.PathLike[str], sync: Callable[[int], object] = os.fsync) -> None:
    """``sync`` (``fsync`` by default) one file or directory through a descriptor opened for it, in this
    process; a path that is gone is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        sync(fd)
    finally:
        os.close(fd)


class _Helper:
    """One helper process and its pipes (used under ``_lock``)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.ready = False
        self.started = time.monotonic()
        assert process.stdin is not None and process.stdout is not None
        self._to: IO[bytes] = process.stdin
        self._from: IO[bytes] = process.stdout

    def sync(self, files: Sequence[str], directories: Sequence[str]) -> bool:
        """Have the helper sync ``files``, then ``directories``: ``True`` when it did, ``False`` when it is
        not ready yet or stopped answering (the caller syncs them itself); ``OSError`` as the helper met it."""
        if not self.ready:
            if time.monotonic() - self.started > _READY_SECONDS:
                self.stop()
                return False
            if not _readable(self._from):
                return False  # still starting: this group is synced here
            if self._from.readline() != b"ready\n":
                self.stop()
                return False
            self.ready = True
        body = b"\0".join(map(os.fsencode, files)) + b"\0\0" + b"\0".join(map(os.fsencode, directories))
        try:
            self._to.write(len(body).to_bytes(4, "big") + body)
            self._to.flush()
            head = self._from.read(4)
            answer = self._from.read(int.from_bytes(head, "big")) if len(head) == 4 else b""
        except (OSError, ValueError):
            answer = b""
        if answer == b"ok":
            return True
        if not answer:
            self.stop()
            return False
        number, _, path = answer.partition(b"\0")
        code = int(number) or 5  # EIO when the helper did not say
        raise OSError(code, os.strerror(code), os.fsdecode(path))

    def stop(self) -> None:
        global _failed_at
        _failed_at = time.monotonic()
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._to.close()
        with contextlib.suppress(OSError, ValueError):
            self._from.close()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.process.wait(timeout=1)
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.kill()


def _readable(stream: IO[bytes]) -> bool:
    """Whether ``stream`` has something to read now (the helper's first line, once it has started)."""
    ready, _, _ = select.select([stream], [], [], 0)
    return bool(ready)


_lock = threading.Lock()
_current: _Helper | None = None
_failed_at: float | None = None


def _helper() -> _Helper | None:
    """The process's helper (started at its first group), or ``None`` while none can run."""
    global _current, _failed_at
    current = _current
    if current is not None and current.process.poll() is None and not current._to.closed:
        return current
    _current = None
    if _failed_at is not None and time.monotonic() - _failed_at < _RETRY_SECONDS:
        return None
    try:
        process = subprocess.Popen(
            [_EXECUTABLE, "-I", "-S", "-c", _CHILD, str(_THREADS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        _failed_at = time.monotonic()
        _logger.debug("loom-otel: no sync helper (%s); files are synced in this process", type(exc).__name__)
        return None
    _current = _Helper(process)
    return _current


_inherited: list[_Helper] = []
"""A forked child's copy of its parent's helper: kept (never waited for: it is not the child's own)."""


def _after_fork_in_child() -> None:
    """A forked child starts its own helper when it needs one; its copies of the parent's pipes are closed
    (the parent's helper must see the end of its input when the parent ends, whatever the child does)."""
    global _lock, _current
    _lock = threading.Lock()  # another thread of the parent may have held it
    if _current is not None:
        for stream in (_current._to, _current._from):
            with contextlib.suppress(OSError, ValueError):
                os.close(stream.fileno())
        _inherited.append(_current)
        _current = None


def _close() -> None:
    global _current
    helper, _current = _current, None
    if helper is not None:
        helper.close()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close)
