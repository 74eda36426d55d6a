"""Count, per consumer package, the names it imports from core's private modules (``loom_otel.core._*``).

Issue 44 point 4: audit, the chained exporter, live, the viewer and the CLI read core through its public
faces. Every import statement counts, those under ``TYPE_CHECKING`` too (a type is part of what a consumer
leans on). A name is counted once per consumer (``module.name``); ``import loom_otel.core._x`` and
``from loom_otel.core import _x`` count the module itself. Prints one line per consumer; ``--names`` lists
the names. Run from the checkout root."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
CONSUMERS: Final = (
    ("audit", ROOT / "loom_otel" / "audit"),
    ("exporters", ROOT / "exporters" / "loom_otel" / "exporters"),
    ("live", ROOT / "loom_otel" / "live"),
    ("viewer", ROOT / "loom_otel" / "viewer"),
    ("cli", ROOT / "loom_otel" / "cli"),
)
VENDORS: Final = ROOT / "instrumentation" / "loom_otel" / "instrumentation"
PRIVATE_CORE: Final = "loom_otel.core._"


def _imports(path: Path) -> Iterator[tuple[str, str]]:
    """The ``(module, name)`` pairs one source file imports (``name`` empty for ``import module``)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if node.module == "loom_otel.core" and alias.name.startswith("_"):
                    yield f"{node.module}.{alias.name}", ""  # from loom_otel.core import _attributes
                else:
                    yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ""


def private_imports(folder: Path, prefix: str = PRIVATE_CORE) -> set[tuple[str, str]]:
    """The ``(module, name)`` pairs imported under ``folder`` from modules starting with ``prefix``."""
    return {
        (module, name)
        for path in sorted(folder.rglob("*.py"))
        for module, name in _imports(path)
        if module.startswith(prefix)
    }


def main(argv: list[str]) -> int:
    rows = [(label, private_imports(folder)) for label, folder in CONSUMERS]
    rows.append(("vendors: live._*", private_imports(VENDORS, "loom_otel.live._")))
    for label, found in rows:
        modules = {module for module, _ in found}
        print(f"{label}: {len(found)} name(s) from {len(modules)} private module(s)")
        if "--names" in argv:
            for module, name in sorted(found):
                print(f"    {module} {name}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
