"""The text redact mode hands the application in place of a reasoning text it withholds.

Not empty: frameworks drop an empty thinking block (LlamaIndex 0.14 does), and the next request of a tool
loop is then rejected. It names no reasoning and no reference (a stream hands it on before the text it
stands for is complete and stored). On the way out it is recognised like any text the binding record does
not match and replaced by the stored text when the block binds; elsewhere (a text block, a user message)
it goes out as the application sent it, and it carries nothing.
"""

from __future__ import annotations

from typing import Final

__all__ = ["WITHHELD"]

WITHHELD: Final = "[reasoning withheld by loom-otel]"
