"""The discard check (ADR D7 "direct-path check"): a framework that drops the reasoning blocks from the
history it sends back every turn loses them for the model, silently. Per conversation, each request's
plan counts the reasoning the application sent back (``Plan.sent_back``), the responses it sent back
without theirs (``Plan.stripped``: found by the conversation's digest before them, which this process
recorded when they were produced), what loom-otel restored from the store (``Plan.restored``) and what
the drop rule removed (``Plan.drops``).

When the application sent none back on two consecutive turns that had some to send, one warning per
process names the call site, its top-level package (the framework) and what happened (restored from
the store, or dropped and why). A response the vendor rejects the request without (``Plan.required``: the
assistant turn of an in-flight tool round, thinking on) sent back stripped and not restored is warned of
at that first request: the rejection ends the conversation before a second turn comes. With
``LOOM_OTEL_REQUIRE_CONTINUATION=true`` a request whose reasoning would be dropped raises
``ReasoningContinuationError`` before anything is sent. Off with loom-otel (``LOOM_OTEL_REASONING=false``):
no continuation pass runs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Final, Protocol

from loom_otel.core import environment_variables as env
from loom_otel.core._runtime._warnings import call_package, call_site, warn
from loom_otel.core.exceptions import ReasoningContinuationError

__all__ = ["Counted", "DiscardCheck"]

_ROUNDS: Final = (
    "loom-otel puts a stripped tool round back only inside the execution() that produced it (wrap the "
    "agent run in loom_otel.core.execution()), from its reasoning store."
)
_KEPT: Final = 65536
"""Responses (and conversations) remembered; the oldest is forgotten first."""


class Counted(Protocol):
    """What the check reads of a request's plan (``_rule.Plan``, named here so neither imports the other)."""

    @property
    def sent_back(self) -> int: ...

    @property
    def stripped(self) -> Sequence[tuple[int, str]]: ...

    @property
    def drops(self) -> Mapping[tuple[int, int], str]: ...

    @property
    def restored(self) -> Mapping[int, Sequence[object]]: ...

    @property
    def required(self) -> int | None: ...


class DiscardCheck:
    """One per continuation rule (``Continuation``), given by the runtime (``Runtime.discards``).

    ``lost``: why reasoning a request does not carry is gone for good (``no store``, ``redact off``);
    ``require``: raise rather than warn (``LOOM_OTEL_REQUIRE_CONTINUATION``)."""

    __slots__ = ("_heads", "_lock", "_produced", "_runs", "lost", "require")

    def __init__(self, *, lost: str, require: bool) -> None:
        self.lost = lost
        self.require = require
        self._heads: frozenset[bytes] = frozenset()
        """The heads of the messages responses became (only such messages are looked up)."""
        self._produced: dict[bytes, str] = {}
        """The conversation's digest before a response that began with reasoning -> its execution."""
        self._runs: dict[str, int] = {}
        """Per conversation: consecutive requests that sent none of its reasoning back."""
        self._lock = threading.Lock()

    def produced(self, head: bytes, history: bytes, execution: str) -> None:
        """A response (a message with ``head``) began with reasoning, after the conversation ``history``."""
        if not head or not history:
            return
        with self._lock:
            if head not in self._heads:
                self._heads = self._heads | {head}
            self._produced[history] = execution
            if len(self._produced) > _KEPT:
                del self._produced[next(iter(self._produced))]

    def watches(self, head: bytes) -> bool:
        return head in self._heads

    def stripped(self, history: bytes) -> str | None:
        """The execution of the response that followed ``history`` with reasoning, if this process saw one."""
        return self._produced.get(history)

    def check(self, plan: Counted) -> None:
        """After the plan of a request is made (before anything is sent)."""
        if not plan.stripped and not plan.drops:
            return
        restored = sum(len(plan.restored.get(i, ())) for i, _ in plan.stripped)
        lost = [i for i, _ in plan.stripped if i not in plan.restored]
        if self.require and (plan.drops or lost):
            raise ReasoningContinuationError(
                f"{env.LOOM_OTEL_REQUIRE_CONTINUATION} is set and this request would go out without reasoning "
                f"its conversation produced ({len(plan.drops)} block(s) dropped by the rule, {len(lost)} "
                f"response(s) sent back without theirs: {self.lost}); nothing was sent"
            )
        if not plan.stripped:
            return
        conversation = plan.stripped[0][1]
        with self._lock:
            runs = 0 if plan.sent_back else self._runs.pop(conversation, 0) + 1
            self._runs[conversation] = runs
            if len(self._runs) > _KEPT:
                del self._runs[next(iter(self._runs))]
        if plan.required is not None and any(i == plan.required and i not in plan.restored for i, _ in plan.stripped):
            warn(
                f"{call_site()}: the application sent back none of the reasoning its model began the tool-use "
                f"turn at message {plan.required} with, in conversation {conversation!r} (the call is "
                f"made by {call_package()!r}: a framework that drops reasoning blocks from the history it "
                f"sends); the vendor rejects such a request while thinking is on. {_ROUNDS} "
                f"{env.LOOM_OTEL_REQUIRE_CONTINUATION}=true makes this an error",
                once=("discarded-reasoning",),
            )
            return
        if runs < 2:
            return
        what = f"loom-otel restored {restored} block(s) from the store" if restored else f"dropped: {self.lost}"
        warn(
            f"{call_site()}: the application sent back none of the reasoning its model returned, on two "
            f"consecutive turns of conversation {conversation!r} (the call is made by {call_package()!r}: a "
            f"framework that drops reasoning blocks from the history it sends); {what}. "
            f"{env.LOOM_OTEL_REQUIRE_CONTINUATION}=true makes this an error",
            once=("discarded-reasoning",),
        )
