"""Capture overhead at the Gemini seam: the bare SDK call vs the instrumented call, in one run.

    python benchmarks/bench_gemini.py [--calls 200] [--rounds 5] [--transport memory|socket] [--only generate]

The real ``google-genai`` SDK against replies recorded from the built-in simulator (``_replay.py``): 8 KiB
of thought text (``include_thoughts``), new text and signature on every call; streams carry it in 50
chunks. Transports and variants: see ``_overhead.py``. The official OTel instrumentation
(``opentelemetry-instrumentation-google-genai``, extra ``bench``) declares ``google-genai<3``; it is run
against the installed 3.x SDK with ``skip_dep_check`` and labelled so.
Targets (issue 15, defaults, a new conversation per call): ``generate`` <= 1.50x bare, ``stream`` <= 1.20x.
"""

from __future__ import annotations

import argparse
from typing import Any

import httpx2
from _overhead import arguments, loom_variants, official_variant, remove, replayed, run, store_root
from google import genai
from google.genai import types

from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor

MODEL = "gemini-3-flash-preview"
CONFIG = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))


def main() -> None:
    args = arguments()
    with replayed(args) as (url, transport):
        measure(client_of(url, transport), args)


def client_of(url: str | None, transport: httpx2.BaseTransport | None) -> genai.Client:
    """The SDK client of the replayed vendor (``_overhead.replayed``)."""
    return genai.Client(
        api_key="bench",
        http_options=types.HttpOptions(
            base_url=url or "https://generativelanguage.bench",
            client_args={"transport": transport} if transport is not None else None,
            async_client_args={"transport": transport} if transport is not None else None,
        ),
    )


def official() -> Any:
    """The official OTel instrumentor of the SDK (``None`` when the ``bench`` extra is not installed)."""
    try:
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor as Official
    except ImportError:
        return None
    return Official


def measure(client: genai.Client, args: argparse.Namespace) -> None:
    def generate() -> Any:
        return client.models.generate_content(model=MODEL, contents="Plan the trip.", config=CONFIG)

    def stream() -> None:
        for _ in client.models.generate_content_stream(model=MODEL, contents="Plan the trip.", config=CONFIG):
            pass

    root = store_root(args)
    label = f"official OTel (no content; google-genai {genai.__version__})"
    try:
        run(
            f"google-genai {genai.__version__}, 8 KiB thought text, stores under {root}",
            [("generate", generate), ("stream", stream)],
            loom_variants(GoogleGenAiInstrumentor, root) + official_variant(official(), label),
            args,
        )
    finally:
        remove(root)


if __name__ == "__main__":
    main()
