"""Counts the vendor<->core control crossings of two model calls, and the names of the vendor face.

A crossing is one Python call whose caller frame is in a vendor package
(``loom_otel/instrumentation/*``) and whose callee is in ``loom_otel/core/*``, or the other way round,
seen with ``sys.setprofile`` during one call after one warm-up call: an Anthropic ``messages.stream``
consumed with thinking on, and one Gemini ``generate_content``, both on the real SDKs over
``loom_otel.testing.simulator``. Also prints how many names the vendor face exports and how many
distinct names each vendor package imports from core (and ``loom_otel.live``).

Run from the repository root: ``.ci/.cache/venv/bin/python .ci/crossings.py``.
"""

from __future__ import annotations

import ast
import importlib
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENDORS = ("anthropic", "google_genai", "openai", "bedrock")
VENDOR_DIR = str(ROOT / "instrumentation" / "loom_otel" / "instrumentation") + "/"
CORE_DIR = str(ROOT / "loom_otel" / "core") + "/"
FACES = ("loom_otel.core.vendor", "loom_otel.core.vendor_helpers", "loom_otel.core._adapter_kit")


def _side(filename: str) -> str | None:
    if filename.startswith(VENDOR_DIR):
        return "vendor"
    if filename.startswith(CORE_DIR):
        return "core"
    return None


def _short(filename: str) -> str:
    return filename.replace(str(ROOT) + "/", "")


@contextmanager
def _counting() -> Iterator[dict[str, Any]]:
    result: dict[str, Any] = {"edges": Counter(), "modules": set()}

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee = frame.f_code.co_filename
        caller = frame.f_back.f_code.co_filename
        to, frm = _side(callee), _side(caller)
        if to is None or frm is None or to == frm:
            return
        result["edges"][f"{frm}->{to}"] += 1
        result["modules"].update((_short(callee), _short(caller)))

    sys.setprofile(profile)
    try:
        yield result
    finally:
        sys.setprofile(None)


def _measure(label: str, call: Callable[[], object]) -> None:
    call()  # warm-up: imports, memos and lazy SDK state are not counted
    with _counting() as seen:
        call()
    edges: Counter[str] = seen["edges"]
    total = sum(edges.values())
    detail = ", ".join(f"{k} {v}" for k, v in sorted(edges.items()))
    print(f"{label}: {total} crossings ({detail}) through {len(seen['modules'])} modules")


def _anthropic(config: Any) -> None:
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
    from loom_otel.testing import instrumented
    from loom_otel.testing.simulator import Simulator

    sim = Simulator(reasoning_text="It may rain in Lyon after noon.")
    kw = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}],
    }

    def call() -> object:
        with sim.anthropic_client().messages.stream(**kw) as stream:
            for _ in stream.text_stream:
                pass
            return stream.get_final_message()

    with instrumented(AnthropicInstrumentor(), config=config):
        _measure("anthropic messages.stream (thinking)", call)


def _gemini(config: Any) -> None:
    from google.genai import types

    from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
    from loom_otel.testing import instrumented
    from loom_otel.testing.simulator import Simulator

    sim = Simulator(reasoning_text="The user wants the weather.", stream_chunks=4)
    cfg = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))

    def call() -> object:
        client = sim.genai_client()
        return client.models.generate_content(model="gemini-3-flash-preview", contents="Rain in Lyon?", config=cfg)

    with instrumented(GoogleGenAiInstrumentor(), config=config):
        _measure("gemini generate_content (thoughts)", call)


def _face_names() -> None:
    for name in FACES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        print(f"names in the vendor face {name}: {len(module.__all__)}")


def _imported_names(package: str) -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "instrumentation" / "loom_otel" / "instrumentation" / package).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith(("loom_otel.core", "loom_otel.live"))
            ):
                names.update(f"{node.module}:{alias.name}" for alias in node.names)
    return names


def main() -> None:
    import os
    import warnings

    warnings.simplefilter("ignore")

    from loom_otel.core import MemoryReasoningStore, ReasoningConfig

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_STATE_HOME"] = os.path.join(tmp, "state")
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        config = ReasoningConfig(store=MemoryReasoningStore(), journal=Path(tmp) / "journal")
        _anthropic(config)
        _gemini(config)
    _face_names()
    everything: set[str] = set()
    for vendor in VENDORS:
        names = _imported_names(vendor)
        everything |= {n.split(":", 1)[1] for n in names}
        modules = sorted({n.split(":", 1)[0] for n in names})
        print(f"{vendor} imports {len({n.split(':', 1)[1] for n in names})} names from {', '.join(modules)}")
    print(f"all vendors together: {len(everything)} distinct names")


if __name__ == "__main__":
    main()
