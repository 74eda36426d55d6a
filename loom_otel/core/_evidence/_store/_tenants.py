"""The configured store and the tenants' own ones (the policy file's ``[tenants.<name>] store``, data
residency) as one store, for reading back: a tenant's blobs are read, erased and checked in its own store
only (``loom-otel audit show``, ``erase``, ``retain``, ``verify --store``, ``serve``'s retention).

Capture does not go through it: each call's store is decided once (``Runtime.store_for``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from loom_otel.core._evidence._store._protocol import DigestKeyStore, Envelope, ReasoningStore, Unsealed, open_sealed

if TYPE_CHECKING:
    from loom_otel.core._reading._policy import ReadingPolicy

__all__ = ["TenantStores", "with_tenant_stores"]


def with_tenant_stores(store: ReasoningStore, policy: ReadingPolicy) -> ReasoningStore:
    """``store`` with the tenants' own stores ``policy`` names (``[tenants.<name>] store``), or ``store``
    itself when it names none."""
    from loom_otel.core._evidence._store._uri import store_from_uri

    urls = policy.stores()
    if not urls:
        return store
    return TenantStores(store, {name: store_from_uri(url, fsync=False) for name, url in urls.items()})


class TenantStores:
    """``default`` for blobs of no tenant and of tenants without a store of their own; ``tenants[name]``
    for that tenant's."""

    __slots__ = ("default", "tenants")

    def __init__(self, default: ReasoningStore, tenants: Mapping[str, ReasoningStore]) -> None:
        self.default = default
        self.tenants = dict(tenants)

    def of(self, tenant: str | None) -> ReasoningStore:
        """The store a tenant's blobs are in."""
        return self.default if tenant is None else self.tenants.get(tenant, self.default)

    def every(self) -> list[ReasoningStore]:
        """Every store: the default, then the tenants' own."""
        return [self.default, *self.tenants.values()]

    def put(self, envelope: Envelope) -> str:
        return self.of(envelope.tenant).put(envelope)

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        return self.of(tenant).get(ref, tenant=tenant, execution_id=execution_id)

    def unsealed(self, ref: str, *, tenant: str | None, execution_id: str) -> Unsealed | None:
        """The blob with its sealed audience, from the tenant's own store (a store that cannot tell the
        audience gives none: its tenant's auditors only)."""
        return open_sealed(self.of(tenant), ref, tenant=tenant, execution_id=execution_id)

    def delete(self, ref: str) -> None:
        for store in self.every():  # a ref alone names no tenant: it is removed wherever it is
            store.delete(ref)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        return self.of(tenant).erase_execution(tenant, execution_id)

    def exists(self, ref: str) -> bool:
        return any(isinstance(s, DigestKeyStore) and s.exists(ref) for s in self.every())

    def digest_key(self, tenant: str | None, execution_id: str, *, create: bool = False) -> bytes | None:
        store = self.of(tenant)
        return store.digest_key(tenant, execution_id, create=create) if isinstance(store, DigestKeyStore) else None

    def __repr__(self) -> str:
        return f"TenantStores({self.default!r}, tenants={sorted(self.tenants)})"
