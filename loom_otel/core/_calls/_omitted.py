"""The one warning of a process whose calls return reasoning with nothing readable in it (DESIGN
"Readable by request"): an Anthropic display that is omitted, a Gemini call without
``include_thoughts``, a Responses call without ``reasoning.summary``. The trail then holds signatures
and sizes only; the warning names the setting that asks the vendor for readable reasoning."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from loom_otel.core import environment_variables as env
from loom_otel.core._evidence._model import Reasoning, ReasoningKind
from loom_otel.core._runtime._config import Runtime
from loom_otel.core._runtime._warnings import warn

__all__ = ["warn_if_only_omitted"]

_ONCE: Final = ("loom-otel", "omitted reasoning")


def only_omitted(reasonings: Sequence[Reasoning]) -> bool:
    """The response had thinking blocks, and none of them carried readable text (redacted blocks are
    the vendor's encryption, not an omission: they neither count nor prevent)."""
    readable = [r for r in reasonings if r.kind is not ReasoningKind.REDACTED]
    return bool(readable) and not any(r.text for r in readable)


def warn_if_only_omitted(runtime: Runtime, provider: str, reasonings: Sequence[Reasoning]) -> None:
    """Warn once per process when a call returned only omitted reasoning and loom-otel does not ask
    for readable reasoning."""
    if runtime.request_readable != "off" or not only_omitted(reasonings):
        return
    warn(
        f"{provider} returned reasoning with no readable text (the application asked for thinking "
        "without it): only signatures and sizes are recorded. Set "
        f"{env.LOOM_OTEL_REQUEST_READABLE}=summarized (with {env.LOOM_OTEL_REASONING_STORE}) to ask the "
        "vendor for readable reasoning, keep it, and still hand the application what it asked for",
        once=_ONCE,
    )
