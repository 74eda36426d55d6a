"""How to run ``loom-otel`` again, as the running process was started: hints print commands that work
as printed, with or without the virtual environment on the ``PATH``."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["command_line", "program"]


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def program() -> list[str]:
    """The argv prefix that runs this ``loom-otel``: ``loom-otel`` when that name on the ``PATH`` is the
    running script, else the script's absolute path, else ``<python> -m loom_otel.cli``."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is None or not str(getattr(spec, "name", "")).startswith("loom_otel.cli"):
        script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
        if script is not None and script.name.startswith("loom-otel") and script.is_file():
            on_path = shutil.which("loom-otel")
            if on_path is not None and _same_file(on_path, script):
                return ["loom-otel"]
            return [str(script.absolute())]
    return [sys.executable, "-m", "loom_otel.cli"]


def command_line(*args: str) -> str:
    """A shell command that runs this ``loom-otel`` with ``args`` (each quoted as needed)."""
    return shlex.join([*program(), *args])
