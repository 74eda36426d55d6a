"""Capture overhead at the Gemini seam: the bare SDK call vs the instrumented call, in one run.

    python benchmarks/bench_gemini.py [--calls 200] [--rounds 3]

The real ``google-genai`` SDK over an in-process transport that replays one response recorded from the
built-in simulator: 8 KiB of thought text (``include_thoughts``); streams carry it in 50 chunks.
Variants: see ``_overhead.py``. Targets (issue 3, as Anthropic): <= 1.15 non-streaming, <= 1.10 streaming.
"""

from __future__ import annotations

from typing import Any

from _overhead import arguments, recorded_transport, run
from google import genai
from google.genai import types

from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing.simulator import Simulator

MODEL = "gemini-3-flash-preview"
CONFIG = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))


def main() -> None:
    transport = recorded_transport(Simulator(thinking_size=8192, stream_chunks=50, strict=False))
    client = genai.Client(
        api_key="bench",
        http_options=types.HttpOptions(
            base_url="https://generativelanguage.bench", client_args={"transport": transport}
        ),
    )

    def generate() -> Any:
        return client.models.generate_content(model=MODEL, contents="Plan the trip.", config=CONFIG)

    def stream() -> None:
        for _ in client.models.generate_content_stream(model=MODEL, contents="Plan the trip.", config=CONFIG):
            pass

    run(
        f"google-genai {genai.__version__}, 8 KiB thought text",
        GoogleGenAiInstrumentor,
        [("generate", generate), ("stream", stream)],
        arguments(),
    )


if __name__ == "__main__":
    main()
