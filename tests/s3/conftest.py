"""The S3 tests share the read-back fixtures' isolation (no store or journal from the environment)."""

from __future__ import annotations

from tests.support.evidence import _isolated

__all__ = ["_isolated"]
