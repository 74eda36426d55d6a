"""Reading the evidence back: verify the chain, read reasoning (as ``Untrusted``), erase an execution."""

from __future__ import annotations

__all__: list[str] = []
