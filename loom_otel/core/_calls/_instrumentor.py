"""The one instrumentor shape every vendor package declares: what to wrap, with which factories.

A vendor instrumentor is a subclass that only sets ``provider``, ``instruments``, ``wraps``,
``adapter`` (its ``VendorAdapter``) and ``live_view`` (core never imports the live view); building the
shared handler, the boot warning and the mirrored wrap/unwrap list live here once.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Collection, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar, Final, Protocol

from opentelemetry.instrumentation.dependencies import DependencyConflict, get_dependency_conflicts
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.instrumentation.utils import unwrap
from wrapt import register_post_import_hook, wrap_function_wrapper

from loom_otel.core import environment_variables as env
from loom_otel.core._calls._adapter import VendorAdapter
from loom_otel.core._calls._handler import ObserverFactory, ReasoningHandler
from loom_otel.core._calls._identity import warn_of_baggage_principal
from loom_otel.core._calls._limits import warn_if_truncating
from loom_otel.core._calls._withheld import warn_if_sdk_debug_logs
from loom_otel.core._runtime._callbacks import logger, shielded
from loom_otel.core._runtime._config import Runtime, runtime_for
from loom_otel.core._runtime._lifecycle import hold, release
from loom_otel.core._runtime._providers import tracer_provider_given
from loom_otel.core._runtime._warnings import warn
from loom_otel.core._runtime._zero_code import refusal, refuse, refused_call, under_zero_code
from loom_otel.core._scrub import install_scrubber, uninstall_scrubber
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["LiveView", "ReasoningInstrumentor", "Wrap"]

Wrap = tuple[str, str, Callable[[ReasoningHandler], Any]]
"""(module, "Class.method", wrapper factory taking the shared handler)."""


class LiveView(Protocol):
    """Builds a handler's watcher from the runtime (``loom_otel.live.LiveChannel``)."""

    def __call__(self, runtime: Runtime, /) -> ObserverFactory: ...


class ReasoningInstrumentor(BaseInstrumentor):
    """Instrument with ``tracer_provider=`` and ``config=`` (a ``ReasoningConfig``; without one,
    everything comes from the ``LOOM_OTEL_*`` environment, as under ``opentelemetry-instrument``).

    An invalid configuration is a ``ReasoningConfigError`` at ``instrument()``; under
    ``opentelemetry-instrument``, which would catch it and run the application without loom-otel, it is
    told in one line and every model call raises it (``_zero_code``, ``_refusing``)."""

    provider: ClassVar[str]
    sdk: ClassVar[str]
    """The SDK's package: its methods are wrapped once the application imports it (at ``instrument()`` if
    it already has), so a process never imports an SDK it does not use."""
    instruments: ClassVar[Collection[str]]
    wraps: ClassVar[Sequence[Wrap]]
    optional_wraps: ClassVar[Sequence[Wrap]] = ()
    """Wrapped when the SDK version has them (private seams of newer releases)."""
    adapter: ClassVar[type[VendorAdapter[Any]]]
    """The vendor's adapter to the call skeleton, built with the runtime (``handler.adapter``)."""
    version: ClassVar[str] = "0.1.0"
    _wrapped: list[Wrap] | None = None
    """What this instrumentation wrapped (filled when the SDK is imported); ``None`` when not instrumented."""
    live_view: ClassVar[LiveView | None] = None
    """Builds the live view of the handler when live is on (``loom_otel.live.LiveChannel``): it watches
    every call (``CallObserver``). Given by the vendor package, since core never imports the live view."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return self.instruments

    def _check_dependency_conflicts(self) -> DependencyConflict | None:
        """None: an installed SDK outside ``instruments`` is never skipped in silence (``instrument()``
        would only log it); ``_instrument`` decides what it gets (``_unsupported``)."""
        return None

    def _instrument(self, **kwargs: Any) -> None:
        zero_code = under_zero_code()
        try:
            runtime = runtime_for(kwargs.get("config"))
        except ReasoningConfigError as error:
            if not zero_code:
                raise
            refuse(error)
        refused = refusal() if zero_code else None  # this configuration's error, or the exporter's
        if refused is not None:
            self._wrap_when_imported(lambda _entry: _refusing(refused), (), self.wraps)  # model calls the SDK has
            return
        unsupported = _unsupported(self.instruments)
        if unsupported is not None:
            self._refuse(runtime, unsupported)
            return
        warn_of_baggage_principal(runtime.principal_baggage if runtime.enabled else None)
        if runtime.enabled:
            _warn_of_exports_out_of_reach()
        if runtime.enabled and runtime.transcript == "redact":
            warn_if_sdk_debug_logs(f"{env.LOOM_OTEL_REASONING_TRANSCRIPT}=redact")
        elif runtime.enabled and runtime.request_readable != "off":
            warn_if_sdk_debug_logs(f"{env.LOOM_OTEL_REQUEST_READABLE}={runtime.request_readable}")
        warn_if_truncating(kwargs.get("tracer_provider"))  # before the handler: a limit cuts its events
        hold(self, runtime)
        adapter = type(self).adapter(runtime)
        tracer_provider = kwargs.get("tracer_provider")
        tracer_provider_given(tracer_provider)
        live_view = type(self).live_view
        observe = live_view(runtime) if live_view is not None and runtime.live and runtime.enabled else None
        handler = ReasoningHandler(
            tracer_provider,
            runtime,
            type(self).__module__,
            self.version,
            adapter,
            meter_provider=kwargs.get("meter_provider"),
            observe=observe,
        )
        shielded(
            "installing the reasoning scrubber", install_scrubber, self, tracer_provider, kwargs.get("logger_provider")
        )
        self._wrap_when_imported(
            lambda entry: entry[2](handler),
            self.wraps,
            self.optional_wraps,
            then=lambda: runtime.boot_warning(self.provider),
        )

    def _refuse(self, runtime: Runtime, unsupported: str) -> None:
        """The installed SDK is outside the supported range: with a store configured, every model call
        fails closed (``ReasoningConfigError`` naming the version); without one, a warning says so."""
        message = f"loom-otel {self.provider}: {unsupported}"
        if not (runtime.enabled and runtime.fail_closed):
            logger.warning("%s: not instrumented", message)
            return
        error = ReasoningConfigError(f"{message}: model calls fail while a reasoning store is configured")
        logger.error("%s", error)
        self._wrap_when_imported(lambda _entry: _refusing(error), (), self.wraps)  # those the SDK has

    def _wrap_when_imported(
        self,
        wrapper: Callable[[Wrap], Any],
        entries: Sequence[Wrap],
        optional: Sequence[Wrap] = (),
        *,
        then: Callable[[], None] | None = None,
    ) -> None:
        """Wrap ``entries`` and those of ``optional`` the installed SDK has with ``wrapper(entry)`` once
        the application imports the SDK (now if it has), then run ``then`` (the warnings about the SDK
        in use: a process never hears about an SDK it does not import)."""
        wrapped: list[Wrap] = []
        self._wrapped = wrapped

        def wrap(_sdk: object) -> None:
            if self._wrapped is not wrapped:  # uninstrumented before the application imported the SDK
                return
            for entry in (*entries, *_present(optional)):
                module, name, _ = entry
                wrap_function_wrapper(module, name, wrapper(entry))
                wrapped.append(entry)
            if then is not None:
                then()

        imported = sys.modules.get(self.sdk)
        if imported is not None:
            wrap(imported)
        else:  # at the application's import of the SDK, which must not fail for it
            register_post_import_hook(lambda sdk: shielded(f"wrapping {self.sdk}", wrap, sdk), self.sdk)

    def _uninstrument(self, **kwargs: Any) -> None:
        """Unwrap what was wrapped, then stop the background work of the runtime ``instrument()`` used
        (``_lifecycle``: its store and journal flushed and closed unless another instrumentor still uses
        them); the scrubber rewrites nothing once no loom-otel instrumentor is instrumented."""
        wrapped, self._wrapped = self._wrapped or [], None
        for module, name, _ in wrapped:
            owner, _, attribute = f"{module}.{name}".rpartition(".")
            unwrap(owner, attribute)
        uninstall_scrubber(self)
        release(self)


def _refusing(error: ReasoningConfigError) -> Callable[..., Any]:
    """A wrapper whose every call raises ``error`` (afresh) before anything is sent: the SDK of an
    application run under zero code with an invalid configuration (``_zero_code``), or an SDK outside the
    supported range while a store is configured (``_refuse``)."""

    def refused(wrapped: Callable[..., Any], instance: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise refused_call(error)

    return refused


def _unsupported(instruments: Collection[str]) -> str | None:
    """What is wrong with the installed SDK's version (``None``: within ``instruments``, or not installed)."""
    conflict = get_dependency_conflicts(list(instruments))
    if conflict is None or conflict.found is None:
        return None
    return f"{conflict.found} is installed, outside the supported {conflict.required}"


def _present(wraps: Sequence[Wrap]) -> list[Wrap]:
    """The entries whose module and attribute exist in the installed SDK."""
    present = []
    for module, name, factory in wraps:
        try:
            target: Any = importlib.import_module(module)
            for part in name.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError):
            continue
        present.append((module, name, factory))
    return present


# Telemetry a framework sends outside OpenTelemetry, which loom-otel can neither reach nor scrub, said once
# at ``instrument()``: the OpenAI Agents SDK exports its own traces to OpenAI with its own processors
# (tool arguments and results, a Chat Completions model's messages). Its switch is read as the SDK reads
# it; ``set_tracing_disabled(True)`` comes after ``instrument()`` under ``opentelemetry-instrument``.

_AGENTS_DISTRIBUTION: Final = "openai-agents"
_AGENTS_DISABLED: Final = "OPENAI_AGENTS_DISABLE_TRACING"
"""The Agents SDK's own switch (``true`` or ``1`` turns its trace export off)."""


def _warn_of_exports_out_of_reach() -> None:
    """One warning per process for each installed framework whose own trace export is on."""
    try:
        installed = version(_AGENTS_DISTRIBUTION)
    except PackageNotFoundError:
        return
    if os.environ.get(_AGENTS_DISABLED, "false").lower() in ("true", "1"):
        return
    warn(
        f"the OpenAI Agents SDK ({_AGENTS_DISTRIBUTION} {installed}) exports its own traces to OpenAI, "
        "outside OpenTelemetry: loom-otel cannot reach or scrub them (tool arguments and results, and a "
        f"Chat Completions model's messages); set {_AGENTS_DISABLED}=true (or call "
        "agents.set_tracing_disabled(True)) where they must not leave",
        once=("exports-out-of-reach", _AGENTS_DISTRIBUTION),
    )
