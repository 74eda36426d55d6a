"""The installed anthropic SDK line (0.47 through 2.x; CI runs the Anthropic tests on 0.47 and 0.73 too,
.ci/anthropic-0x.sh): a test of an SDK feature older releases lack skips naming the release that has it
(``requires_anthropic``, and ``mark_sdk_modes`` for the call modes of tests/anthropic/modes.py), and what
a test does only to keep a conversation going works on every line (``assistant_turn``, ``accumulate_one``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final, TypeVar

import anthropic
import pytest
from anthropic.lib.streaming._messages import accumulate_event

INSTALLED: Final = anthropic.__version__
_Test = TypeVar("_Test", bound=Callable[..., Any])

MODE_MINIMUM: Final = {
    "parse": ("0.77", "messages.parse"),
    "async_parse": ("0.77", "messages.parse"),
    "beta.stream": ("0.48", "beta.messages.stream(thinking=)"),
}
"""The call modes (tests/anthropic/modes.py) an SDK release before the minimum does not have."""


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def requires_anthropic(minimum: str, feature: str) -> pytest.MarkDecorator:
    """Skips the test on an anthropic SDK older than ``minimum``, the first release with ``feature``."""
    return pytest.mark.skipif(
        _release(INSTALLED) < _release(minimum),
        reason=f"{feature} needs anthropic >= {minimum}; this venv has {INSTALLED}",
    )


def runs_on_every_sdk(*modes: str) -> Callable[[_Test], _Test]:
    """The test runs ``modes`` without the feature ``MODE_MINIMUM`` names (no ``thinking=`` for
    ``beta.stream``, a request refused before the SDK is called): ``mark_sdk_modes`` leaves them to run."""

    def mark(test: _Test) -> _Test:
        test._on_every_sdk = frozenset(modes)
        return test

    return mark


def mark_sdk_modes(items: Iterable[pytest.Item], under: Path) -> None:
    """``requires_anthropic`` on each test under ``under`` parametrized with a ``mode`` the SDK lacks, but
    for the modes it ``runs_on_every_sdk``."""
    for item in items:
        mode = getattr(getattr(item, "callspec", None), "params", {}).get("mode")
        on_every_sdk = getattr(getattr(item, "function", None), "_on_every_sdk", frozenset())
        if (
            isinstance(mode, str)
            and mode in MODE_MINIMUM
            and mode not in on_every_sdk
            and item.path.is_relative_to(under)
        ):
            item.add_marker(requires_anthropic(*MODE_MINIMUM[mode]))


def assistant_turn(message: Any) -> dict[str, Any]:
    """``message.to_param()``: the assistant turn as an application appends it (its pydantic blocks);
    built alike where the SDK has no ``to_param`` (anthropic 0.x, early 1.x)."""
    to_param = getattr(message, "to_param", None)
    if to_param is not None:
        return dict(to_param())
    return {"role": message.role, "content": list(message.content)}


_JSON_BUFS: Final = "json_bufs" in inspect.signature(accumulate_event).parameters


def accumulate_one(event: Any, snapshot: Any, bufs: dict[Any, Any]) -> Any:
    """``accumulate_event``: the message so far with one more raw stream event, as the SDK's stream helper
    builds it; ``bufs`` (one dict per stream) holds partial tool input JSON (anthropic < 1 keeps none)."""
    if _JSON_BUFS:
        return accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
    return accumulate_event(event=event, current_snapshot=snapshot)


def accumulate(events: Iterable[Any]) -> Any:
    """The final message of a raw event stream."""
    snapshot, bufs = None, {}
    for event in events:
        snapshot = accumulate_one(event, snapshot, bufs)
    return snapshot
