"""An instrumentor wraps its SDK when the application imports it, not before: a process never imports an
SDK it does not use (under ``opentelemetry-instrument`` every installed instrumentor is instrumented at
start, and importing the three SDKs cost a no-op script most of its start-up). Run in a fresh
interpreter, where no SDK is imported yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = textwrap.dedent(
    """
    import sys
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
    from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
    from loom_otel.instrumentation.openai import OpenAiInstrumentor
    from loom_otel.core import MemoryReasoningStore, ReasoningConfig

    SDKS = ("anthropic", "openai", "google.genai")
    config = ReasoningConfig(store=MemoryReasoningStore())
    instrumentors = [AnthropicInstrumentor(), GoogleGenAiInstrumentor(), OpenAiInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(config=config)
    print("imported at instrument():", [m for m in SDKS if m in sys.modules])
    instrumentors[1].uninstrument()  # before the application imported google-genai: nothing to wrap later

    from anthropic.resources.messages.messages import Messages
    from google.genai.models import Models
    from openai.resources.chat.completions.completions import Completions

    import wrapt

    def wrapped(cls, name="create"):
        return isinstance(vars(cls)[name], wrapt.FunctionWrapper)

    print("wrapped once imported:", wrapped(Messages), wrapped(Completions), wrapped(Models, "generate_content"))
    instrumentors[0].uninstrument()
    print("unwrapped:", wrapped(Messages))
    instrumentors[0].instrument(config=config)  # already imported: wrapped at once
    print("again:", wrapped(Messages))
    """
)


def test_an_sdk_is_wrapped_when_the_application_imports_it() -> None:
    paths = [str(ROOT), str(ROOT / "instrumentation"), str(ROOT / "exporters")]
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", f"import sys; sys.path[:0] = {paths!r}\n{_SCRIPT}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "imported at instrument(): []",
        "wrapped once imported: True True False",
        "unwrapped: False",
        "again: True",
    ], done.stdout
