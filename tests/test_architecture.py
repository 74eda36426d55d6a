"""ARCHITECTURE.md names what exists: every module path it gives is a file or folder of the checkout, and
every function, class, method or attribute it names in backticks (``_skeleton.finish``, ``ModelCall.complete``,
``core/_guard/_requests.check``, ``active(handler)``) is defined there, in the module or class it is named
with."""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "ARCHITECTURE.md"
PACKAGES = (ROOT / "loom_otel", ROOT / "instrumentation" / "loom_otel", ROOT / "exporters" / "loom_otel")
# Where a path ARCHITECTURE.md gives may start: the checkout, the loom_otel package, the vendors' folder.
PATH_ROOTS = (ROOT, ROOT / "loom_otel", ROOT / "instrumentation" / "loom_otel" / "instrumentation")
# Backticked words that are not names of this code: files and tools, OTel and SDK names, span names.
NOT_CODE = re.compile(r"^(loom|gen_ai|tests|anthropic|botocore|opentelemetry)\.|\.(py|toml|js|md)$|-")
IDENTIFIER = r"[A-Za-z_]\w*"
# Names of the SDKs, their wire formats and OpenTelemetry's API, which the code reads but does not define.
FOREIGN = frozenset(
    {
        "Converse",
        "ConverseStream",
        "converse_stream",
        "create",
        "input_transformations",
        "message_start",
        "None",
        "reasoningContent",
        "uninstrument",
        "with_raw_response",
    }
)


class Index:
    """What the code defines: per module stem and per class, the names defined in it; and every name."""

    def __init__(self) -> None:
        self.members: defaultdict[str, set[str]] = defaultdict(set)
        self.everything: set[str] = set()
        for package in PACKAGES:
            for path in package.rglob("*.py"):
                if "__pycache__" not in path.parts:
                    self._read(path)

    def _read(self, path: Path) -> None:
        stem = path.parent.name if path.stem == "__init__" else path.stem
        self.everything.update(path.relative_to(ROOT).with_suffix("").parts)
        if path.stem != "__init__":
            self.members[path.parent.name].add(stem)  # a package names its modules
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            for name in _defined(node):
                self.members[stem].add(name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.members[node.name].update(n for child in node.body for n in _defined(child))
                self.members[node.name].update(
                    target.attr
                    for child in ast.walk(node)
                    if isinstance(child, ast.Assign | ast.AnnAssign)
                    for target in (child.targets if isinstance(child, ast.Assign) else [child.target])
                    if isinstance(target, ast.Attribute)
                )
            self.everything.update(_defined(node))
            if isinstance(node, ast.arg):
                self.everything.add(node.arg)  # a parameter (``vendor_drops``) is a name callers give
        self.everything.update(self.members[stem])

    def defines(self, scope: str, name: str) -> bool:
        return name in self.members.get(scope, set())


@functools.cache
def index() -> Index:
    return Index()


def _defined(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            yield from (t.id for t in ast.walk(target) if isinstance(t, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id
    elif isinstance(node, ast.ImportFrom):
        yield from (alias.asname or alias.name for alias in node.names)
    elif isinstance(node, ast.If):  # TYPE_CHECKING blocks, fallbacks
        for child in node.body + node.orelse:
            yield from _defined(child)


def references() -> Iterator[str]:
    """Each name ARCHITECTURE.md gives in backticks: a whole span that is one name or path, else the names
    called in it (``finish`` in ``_skeleton.finish(call, outgoing)``, ``sending`` in ``with sending(...)``)."""
    for span in re.findall(r"`([^`]+)`", DOC.read_text()):
        if re.fullmatch(r"[\w./<>]+", span):
            tokens = [span]
        elif "=" in span or ":" in span.rstrip(":"):
            continue  # an expression or a setting, not a name
        else:
            tokens = re.findall(rf"(?:^|[\s(])({IDENTIFIER}(?:\.{IDENTIFIER})*)\(", span)
        for token in tokens:
            if not NOT_CODE.search(token) and not token.isupper() and token not in FOREIGN:
                yield token.rstrip("/")


def _paths(spec: str) -> list[Path]:
    pattern = spec.replace("<vendor>", "*").replace("...", "**")
    found: list[Path] = []
    for root in PATH_ROOTS:
        for suffix in ("", ".py"):
            found.extend(p for p in root.glob(pattern + suffix) if "__pycache__" not in p.parts)
    return found


def problems(index: Index) -> list[str]:
    """The names ARCHITECTURE.md gives that the code does not define, each told once."""
    wrong: list[str] = []
    for token in dict.fromkeys(references()):
        if "/" in token:
            module, _, attribute = token.partition(".") if "." in token.split("/")[-1] else (token, "", "")
            where = _paths(module)
            if not where:
                wrong.append(f"{token}: no module or folder {module}")
            elif attribute and not any(index.defines(p.stem, attribute.split(".")[0]) for p in where):
                wrong.append(f"{token}: {module} defines no {attribute.split('.')[0]}")
            continue
        parts = token.split(".")
        if len(parts) == 1:
            if parts[0] not in index.everything:
                wrong.append(f"{token}: defined nowhere")
            continue
        scope, name = parts[-2], parts[-1]
        if scope in index.members and not index.defines(scope, name):
            wrong.append(f"{token}: {scope} defines no {name}")
        elif scope not in index.members and scope not in index.everything:
            wrong.append(f"{token}: {scope} is defined nowhere")
    return wrong


def test_architecture_names_what_the_code_defines() -> None:
    assert problems(index()) == []


@pytest.mark.parametrize(
    "stale",
    [
        "`core/_calls/_gone`",
        "`core/_calls/_skeleton.no_such_step`",
        "`ModelCall.no_such_method`",
        "`_skeleton.no_such_function(call)`",
        "`no_such_helper`",
    ],
)
def test_a_stale_name_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stale: str) -> None:
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text(DOC.read_text() + f"\nA stale line: {stale}.\n")
    monkeypatch.setattr(f"{__name__}.DOC", doc)
    found = problems(index())
    assert len(found) == 1 and found[0].startswith(stale.strip("`").split("(")[0]), found
