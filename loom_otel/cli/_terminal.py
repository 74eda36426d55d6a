"""Untrusted text on the auditor's terminal: origin names, ids and model output come from journals,
collector archives and model responses anyone upstream may have crafted."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["CONTROL", "clean"]

CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls (escape sequences start with one) except tab and newline, and bidi overrides."""


def clean(text: str) -> str:
    """Text safe to print on a terminal: control and bidi characters shown as U+FFFD."""
    return CONTROL.sub("\ufffd", text)
