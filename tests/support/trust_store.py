"""The trust store the tests' TLS contexts load: one self-signed certificate (no key), not the machine's
CA bundle. No test speaks TLS: every SDK talks plain HTTP, to a mock transport or to the simulator on
loopback. Yet each google-genai and OpenAI client builds a TLS context at construction and loads the whole
bundle into it, about 50 ms a client on a slow machine, most of a Gemini test's time. ``SSL_CERT_FILE``,
which httpx2 and google-genai read, names the small file instead, for the tests and every subprocess they
start. A subprocess that reaches the network (an install from the package index) gets the machine's own
store back from ``machine_environment``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ANCHOR", "machine_environment", "use_the_anchor"]

ANCHOR = Path(__file__).resolve().parents[1] / "fixtures" / "trust-anchor.pem"
_MACHINE = "LOOM_TESTS_MACHINE_SSL_CERT_FILE"
"""Where the machine's ``SSL_CERT_FILE`` is kept (empty: it had none), set by the first test process:
pytest-xdist's workers, and the suites a test runs, inherit the anchor, not the machine's value."""


def use_the_anchor() -> None:
    os.environ.setdefault(_MACHINE, os.environ.get("SSL_CERT_FILE", ""))
    os.environ["SSL_CERT_FILE"] = str(ANCHOR)


def machine_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the machine's ``SSL_CERT_FILE`` (or none, where it had none)."""
    machine = {k: v for k, v in env.items() if k not in ("SSL_CERT_FILE", _MACHINE)}
    if original := os.environ.get(_MACHINE):
        machine["SSL_CERT_FILE"] = original
    return machine
