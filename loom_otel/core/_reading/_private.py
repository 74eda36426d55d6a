"""Directories only their owner can write (DESIGN "Who may read": the capture index, the viewer's session
key): made mode 0700, and an existing one used only when it is a real directory of this user that nobody
else can write."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["private_directory"]


def private_directory(path: Path) -> Path:
    """``path``, made (with its parents) if missing, mode 0700; ``OSError`` when it is not a directory, a
    symbolic link, another user's, or cannot be made writable by its owner alone."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode):
        raise NotADirectoryError(f"{str(path)!r} is not a directory")
    if hasattr(os, "getuid") and found.st_uid != os.getuid():
        raise PermissionError(f"{str(path)!r} belongs to another user")
    if stat.S_IMODE(found.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path
