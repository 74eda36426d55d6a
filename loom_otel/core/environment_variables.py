"""``LOOM_OTEL_*`` environment variables, read at each ``instrument()`` and at construction time (of a
``ChainedSpanExporter``, of ``configure()``), never at import.

Precedence everywhere: an explicit argument, then the environment, then the default. An invalid value
is a ``ReasoningConfigError`` at ``instrument()`` naming the variable, the value and what is allowed
(read through ``loom_otel.core._runtime._settings``: one function per kind of value), never a silent
fallback. The standard ``OTEL_EXPORTER_OTLP_*`` variables keep their OpenTelemetry meaning for the
chained exporter's inner exporter; loom-otel defines no ``OTEL_*`` names of its own.
"""

from __future__ import annotations

from typing import Final

LOOM_OTEL_REASONING: Final = "LOOM_OTEL_REASONING"
"""``false`` is the silent opt-out of everything loom-otel does (no capture, no warning). Default: on."""

LOOM_OTEL_REASONING_STORE: Final = "LOOM_OTEL_REASONING_STORE"
"""Where readable reasoning is kept: ``file:///dir`` (or an absolute path), ``memory:``,
``s3://bucket/prefix`` or any fsspec URL; a relative path or an unknown scheme is refused. Default:
none (reasoning is not kept; one boot warning per process, at the first import of an instrumented SDK)."""

LOOM_OTEL_REASONING_CAPTURE: Final = "LOOM_OTEL_REASONING_CAPTURE"
"""Keep readable text in the store (``true``/``false``). Default: on iff a store is set."""

LOOM_OTEL_REASONING_TRANSCRIPT: Final = "LOOM_OTEL_REASONING_TRANSCRIPT"
"""``keep``: the application receives the vendor response as is. ``redact``: readable reasoning is
removed before the application sees it and put back from the store on the way out. Default: ``keep``."""

LOOM_OTEL_REQUEST_READABLE: Final = "LOOM_OTEL_REQUEST_READABLE"
"""``summarized``: where the application asked for thinking without readable output (Anthropic
``display`` omitted, or unset on a model whose default is omitted; Gemini ``thinking_config`` without
``include_thoughts``; OpenAI Responses ``reasoning`` without ``summary``), ask the vendor for readable
reasoning, keep it in the store, and hand the application exactly what the bare call returns; the text
is put back on later requests where the vendor needs it. Needs a store with capture on. ``off`` or
unset: requests are sent as the application built them. Any other value is a ``ReasoningConfigError``.
Default: ``off``."""

LOOM_OTEL_REASONING_LIVE: Final = "LOOM_OTEL_REASONING_LIVE"
"""Deliver streamed reasoning deltas to the configured sink (``true``/``false``). Default: off."""

LOOM_OTEL_REASONING_LIVE_TEXT: Final = "LOOM_OTEL_REASONING_LIVE_TEXT"
"""With the live view on, also deliver the answer's streamed text deltas (as ``TextDelta``, a channel
separate from reasoning, through the same delta guards; never journaled or exported)
(``true``/``false``). Default: off."""

LOOM_OTEL_LIVE_TRUSTED_PROXY: Final = "LOOM_OTEL_LIVE_TRUSTED_PROXY"
"""``true`` declares that the live view's HTTP app (``loom_otel.live.asgi.create_app``) runs behind a
proxy that authenticates every request, strips ``X-Loom-Principal`` / ``X-Loom-Tenant`` from the
client's request and sets them itself, and that the app is reachable through that proxy alone: the app
then takes identity from those headers (and warns once). Read only when ``create_app`` is given no
``authenticator`` and no ``trusted_proxy`` argument. Default: off (an authenticator is required)."""

LOOM_OTEL_LIVE_TOKEN: Final = "LOOM_OTEL_LIVE_TOKEN"
"""The bearer token ``loom-otel tail`` sends (``Authorization: Bearer``) when ``--token`` is not given:
the credential of a live view built with ``bearer_authenticator``. Default: none."""

LOOM_OTEL_AUDIT_JOURNAL: Final = "LOOM_OTEL_AUDIT_JOURNAL"
"""Directory of the local hash-chained audit journal (an absolute path). Default: ``<store dir>/journal``
for a file store, else ``journal`` in the user's state directory (``$XDG_STATE_HOME/loom-otel``, by default
``~/.local/state/loom-otel``; the platform's convention elsewhere), never the working directory. With a
store configured, a directory that cannot be written is a ``ReasoningConfigError`` at ``instrument()``;
without one, a single warning, and captures go on without local records."""

LOOM_OTEL_JOURNAL_DURABILITY: Final = "LOOM_OTEL_JOURNAL_DURABILITY"
"""When journal records reach the disk. Every append is written to the OS before the capture returns
(it survives a crash of the process); then ``always`` fsyncs each record before returning, ``batch``
lets a background group commit fsync every record within about 20 ms (a power loss can cost at most that
window), ``os`` leaves it to the OS. Default: ``batch``."""

LOOM_OTEL_STORE_FSYNC: Final = "LOOM_OTEL_STORE_FSYNC"
"""``false`` skips the fsync of file-store blobs (a blob is still never visible half written; a power
loss may lose the newest blobs). Only for benchmarks and throw-away runs. Default: ``true``."""

LOOM_OTEL_CHECKPOINT_KEY: Final = "LOOM_OTEL_CHECKPOINT_KEY"
"""Absolute path of an Ed25519 private key (PEM, ``loom-otel keygen``) that signs journal checkpoints;
one that cannot be loaded is a ``ReasoningConfigError`` at ``instrument()``. Default: unsigned
checkpoints, with one warning."""

LOOM_OTEL_REQUIRE_CONTINUATION: Final = "LOOM_OTEL_REQUIRE_CONTINUATION"
"""``true``: a configuration that cannot carry reasoning forward raises ``ReasoningConfigError``
instead of warning, and a request whose reasoning would be dropped (by the rule, or sent back without
it) raises ``ReasoningContinuationError`` before anything is sent. Otherwise a framework that strips
reasoning every turn gets one warning saying what loom-otel restored or dropped. Default: off."""

LOOM_OTEL_CHAIN_INNER: Final = "LOOM_OTEL_CHAIN_INNER"
"""Exporter the chained exporter forwards to: ``otlp_proto_http``, ``otlp_proto_grpc``, ``console``,
``none``. Default: ``otlp_proto_http``."""

LOOM_OTEL_DIGEST: Final = "LOOM_OTEL_DIGEST"
"""Digest of readable text in events and records: ``sha256`` (plain) or ``hmac-sha256`` (keyed per
execution; the key is erased with the execution). Default: ``sha256``."""

LOOM_OTEL_RETENTION: Final = "LOOM_OTEL_RETENTION"
"""How long reasoning is kept: a duration (``30d``, ``12h``, ``90m``, ``2w``) or ``none`` (kept until
erased). ``loom-otel retain`` (and ``serve``) erase each execution whose newest capture is older, with a
chained tombstone naming this policy; a tenant's ``retention`` in the policy file wins. Default: none."""

# -- who may read, and where (DESIGN "Who may read (live view and viewer)") --------------------------

LOOM_OTEL_PRINCIPAL_BAGGAGE: Final = "LOOM_OTEL_PRINCIPAL_BAGGAGE"
"""The OpenTelemetry baggage key naming the principal of a call that has no
``execution(principal=...)`` (recorded as ``loom.principal``). A caller of the application sends W3C
baggage unless the application's edge overwrites it (warned once at ``instrument()``); a value longer than
256 characters, not printable or still percent-encoded records no principal. Default: none (opt-in)."""

LOOM_OTEL_POLICY: Final = "LOOM_OTEL_POLICY"
"""The reading policy file (TOML): ``[global] auditors = [...]`` and per tenant
``[tenants.<name>] auditors = [...]``, ``retention = "30d"``. Read by the live view and
``loom-otel serve``. Default: none (a part is read by its principal and owner only)."""

LOOM_OTEL_VIEWER_URL: Final = "LOOM_OTEL_VIEWER_URL"
"""Base URL of ``loom-otel serve`` (``https://viewer.example``): each capture event and its model-call span
then carry ``loom.reasoning.url``, the viewer's page of the call. Default: none."""
