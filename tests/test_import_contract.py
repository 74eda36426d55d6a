"""ARCHITECTURE.md "What each part must never import", checked by import-linter (the contracts in
``pyproject.toml``) and by ``.ci/import_cycles.py`` (no import cycle among loom_otel's modules).

Both run in a subprocess that sees one checkout only: ``-S`` leaves out the site directory's ``.pth``
files (an editable install of another checkout would add its folders to the ``loom_otel`` namespace),
and the tools come from the site directory put on ``PYTHONPATH`` instead."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = (".", "instrumentation", "exporters")
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = [str(root / d) for d in SOURCE_DIRS] + [sysconfig.get_paths()["purelib"]]
    env = {"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-S", *args], cwd=root, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def _copy(tmp_path: Path) -> Path:
    """The source roots and ``pyproject.toml`` of this checkout, in a temporary directory."""
    copy = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("loom_otel", "instrumentation", "exporters"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def _add_import(root: Path, module: str, statement: str) -> None:
    path = root / next(d for d in SOURCE_DIRS[::-1] if (root / d / module).exists()) / module
    path.write_text(path.read_text() + f"\n{statement}\n")


def test_the_import_contracts_hold() -> None:
    done = _run(ROOT, "-c", LINT, "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert " broken" not in done.stdout.replace("0 broken", "") and "Contracts: " in done.stdout


def test_no_import_cycle() -> None:
    done = _run(ROOT, str(ROOT / ".ci" / "import_cycles.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 import cycle(s)" in done.stdout


def test_core_importing_the_live_view_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _add_import(copy, "loom_otel/core/_evidence/_model.py", "from loom_otel.live import _channel  # noqa: E402")
    done = _run(copy, "-c", LINT, "--no-cache")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "core never imports the parts built on it, nor a vendor SDK BROKEN" in " ".join(done.stdout.split())
    assert "loom_otel.core._evidence._model -> loom_otel.live._channel" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "statement", "expected"),
    [
        (
            "loom_otel/core/_evidence/_journal/_reader.py",
            "import loom_otel.core._calls._capture",
            "_journal._reader -> ",
        ),
        (
            "loom_otel/core/_reading/_retention.py",
            "import loom_otel.core._scrub._registry",
            "_reading._retention -> loom_otel.core._scrub._registry",
        ),
        ("loom_otel/live/_hub.py", "import loom_otel.instrumentation.anthropic", "live._hub -> "),
        (
            "loom_otel/instrumentation/openai/_adapter.py",
            "import loom_otel.instrumentation.anthropic",
            "openai._adapter -> ",
        ),
        ("loom_otel/instrumentation/anthropic/_extractors.py", "import openai", "anthropic._extractors -> openai"),
        ("loom_otel/exporters/chain/_outbox.py", "import loom_otel.instrumentation.openai", "chain._outbox -> "),
        ("loom_otel/audit/_read.py", "import loom_otel.instrumentation.openai", "audit._read -> "),
        ("loom_otel/core/_runtime/_config.py", "import anthropic", "core._runtime._config -> anthropic"),
        (
            "loom_otel/instrumentation/openai/_adapter.py",
            "from loom_otel.core._runtime._shapes import field",
            "openai._adapter -> loom_otel.core._runtime._shapes",
        ),
    ],
)
def test_each_rule_fails_on_a_forbidden_import(tmp_path: Path, module: str, statement: str, expected: str) -> None:
    copy = _copy(tmp_path)
    _add_import(copy, module, f"{statement}  # noqa: E402")
    done = _run(copy, "-c", LINT, "--no-cache")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Contracts: " in done.stdout and " 0 broken" not in done.stdout, done.stdout
    assert expected in " ".join(done.stdout.split()), done.stdout


def test_a_cycle_is_found(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _add_import(
        copy,
        "loom_otel/core/_evidence/_durability.py",
        "import loom_otel.core._evidence._journal._writer  # noqa: E402",
    )
    done = _run(copy, str(ROOT / ".ci" / "import_cycles.py"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "import cycle: loom_otel.core._evidence._durability <-> loom_otel.core._evidence._journal._writer"
        in done.stdout
    )


def test_a_cycle_through_type_annotations_only_is_found(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _add_import(
        copy,
        "loom_otel/core/_calls/_model_call.py",
        "if TYPE_CHECKING:  # noqa: E402\n    from loom_otel.core._calls._handler import ReasoningHandler",
    )
    done = _run(copy, str(ROOT / ".ci" / "import_cycles.py"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "loom_otel.core._calls._handler <-> loom_otel.core._calls._model_call" in done.stdout


def test_a_vendor_reaching_past_the_vendor_face_breaks_the_contract(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _add_import(copy, "loom_otel/instrumentation/google_genai/_wrappers.py", "import loom_otel.core._calls._skeleton")
    done = _run(copy, "-c", LINT, "--no-cache")
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert "imports core through its face, core.vendor (or the public core names) BROKEN" in said
    assert "google_genai._wrappers -> loom_otel.core._calls._skeleton" in said


PRIVATE_CORE = "the parts that read what core wrote import it through its public faces, never a private core module"
LAYERS = "the layers: the CLI over the viewer over the vendors and the chained exporter, over live, audit and core"


@pytest.mark.parametrize(
    ("module", "statement", "contract", "expected"),
    [
        (
            "loom_otel/audit/_read.py",
            "from loom_otel.core._reading._policy import may_read",
            PRIVATE_CORE,
            "loom_otel.audit._read -> loom_otel.core._reading._policy",
        ),
        (
            "loom_otel/exporters/chain/_outbox.py",
            "from loom_otel.core._evidence import _canonical",
            PRIVATE_CORE,
            "loom_otel.exporters.chain._outbox -> loom_otel.core._evidence._canonical",
        ),
        (
            "loom_otel/live/_hub.py",
            "import loom_otel.viewer._settings",
            LAYERS,
            "loom_otel.live._hub -> loom_otel.viewer._settings",
        ),
    ],
)
def test_the_read_face_and_the_layers_fail_on_a_planted_import(
    tmp_path: Path, module: str, statement: str, contract: str, expected: str
) -> None:
    copy = _copy(tmp_path)
    _add_import(copy, module, f"{statement}  # noqa: E402")
    done = _run(copy, "-c", LINT, "--no-cache")
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert f"{contract} BROKEN" in said, done.stdout
    assert expected in said, done.stdout


BELOW_THE_CALL = ("_continuation", "_guard", "_evidence", "_reading")
"""The core packages below the call path: the continuation rule, the guard, and the rooms of the evidence
(the store and the journal among them) and of who may read."""


def _names_the_call_path(path: Path) -> bool:
    import ast

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("loom_otel.core._calls"):
            return True
        if isinstance(node, ast.Import) and any(a.name.startswith("loom_otel.core._calls") for a in node.names):
            return True
    return False


def test_what_lies_below_the_call_path_does_not_name_it_even_in_annotations(tmp_path: Path) -> None:
    """import-linter leaves out imports under ``TYPE_CHECKING``; the packages below the call path do
    not make them either (``Plan.emit`` takes an event sink, ``Continuation.record`` an owner: protocols
    of their own), so the file graph and ARCHITECTURE.md's layers agree. A planted type-only import is
    found."""
    core = ROOT / "loom_otel" / "core"
    assert all((core / d).is_dir() for d in BELOW_THE_CALL)  # a move never leaves the check with nothing to read
    named = [p for d in BELOW_THE_CALL for p in sorted((core / d).rglob("*.py")) if _names_the_call_path(p)]
    assert named == []
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from loom_otel.core._calls._model_call import ModelCall\n"
    )
    assert _names_the_call_path(planted)
