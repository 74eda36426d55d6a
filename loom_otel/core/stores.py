"""Reasoning stores, public face for the parts that open what core sealed (audit, live, the viewer, the CLI):
the store protocol and its implementations, opening a sealed blob with its audience, the tenant stores, the
key layout and the retention a store keeps."""

from __future__ import annotations

from loom_otel.core._evidence._layout import describe, parse_layout
from loom_otel.core._evidence._model import ReasoningKind
from loom_otel.core._evidence._store._file import FileReasoningStore, PackGap
from loom_otel.core._evidence._store._protocol import (
    DigestKeyStore,
    MemoryReasoningStore,
    ReasoningStore,
    Unsealed,
    digest_matches,
    open_sealed,
    scope_of,
)
from loom_otel.core._evidence._store._tenants import TenantStores, with_tenant_stores
from loom_otel.core._evidence._store._uri import store_from_uri
from loom_otel.core._reading._retention import Retention, parse_retention

__all__ = [
    "DigestKeyStore",
    "FileReasoningStore",
    "MemoryReasoningStore",
    "PackGap",
    "ReasoningKind",
    "ReasoningStore",
    "Retention",
    "TenantStores",
    "Unsealed",
    "describe",
    "digest_matches",
    "open_sealed",
    "parse_layout",
    "parse_retention",
    "scope_of",
    "store_from_uri",
    "with_tenant_stores",
]
