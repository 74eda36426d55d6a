"""Who may read a part (DESIGN "Who may read (live view and viewer)"): the one rule, shared by the live
view and ``loom-otel serve``, and the policy file it reads.

A part may be read by its principal, its owner, and the auditors the policy names: the auditors of its
tenant, and the global auditors (who read every tenant). A part with no principal is read by auditors
only; a part with no tenant by the global auditors (and its principal and owner). Principal and owner
are in the capture record, so the answer is the same after a restart and on any worker.

The policy file (``LOOM_OTEL_POLICY``, ``--policy``) is TOML::

    [global]
    auditors = ["root-auditor"]

    [tenants.acme]
    auditors = ["olga"]
    retention = "30d"      # read by ``loom-otel retain``; "none" keeps forever
    store = "s3://eu-bucket/reasoning"   # this tenant's texts are kept (and read) only there
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loom_otel.core import environment_variables as env
from loom_otel.core._reading._retention import Retention, parse_retention
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["Audience", "ReadingPolicy", "TenantPolicy", "load_policy", "may_read", "policy_from_env"]


@dataclass(frozen=True, slots=True)
class Audience:
    """Whose a part is, as its capture record says."""

    tenant: str | None
    principal: str | None
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class TenantPolicy:
    auditors: frozenset[str] = frozenset()
    retention: str | None = None
    """As written (``30d``, ``12h``, ``none``); ``core._reading._retention.parse_retention`` reads it."""
    store: str | None = None
    """The tenant's own store URL (data residency): its texts go there, never to the configured one."""


@dataclass(frozen=True, slots=True)
class ReadingPolicy:
    """Global auditors, and per tenant its auditors and retention. The empty policy: principal and owner
    only."""

    auditors: frozenset[str] = frozenset()
    tenants: Mapping[str, TenantPolicy] = field(default_factory=dict)

    def auditors_of(self, tenant: str | None) -> frozenset[str]:
        """Who reads every part of ``tenant`` (``None``: parts without a tenant): the global auditors,
        and that tenant's own."""
        if tenant is None:
            return self.auditors
        own = self.tenants.get(tenant)
        return self.auditors | own.auditors if own is not None else self.auditors

    def retentions(self) -> dict[str, Retention | None]:
        """Each tenant's own retention, where the file gives one (``loom-otel retain`` and ``serve``)."""
        named = {name: t.retention for name, t in self.tenants.items() if t.retention is not None}
        return {
            name: parse_retention(text, named_by=f"policy tenants.{name}.retention") for name, text in named.items()
        }

    def stores(self) -> dict[str, str]:
        """Each tenant's own store URL, where the file gives one."""
        return {name: t.store for name, t in self.tenants.items() if t.store is not None}

    def audited_tenants(self, principal: str) -> frozenset[str] | None:
        """The tenants ``principal`` audits; ``None``: every tenant (a global auditor)."""
        if principal in self.auditors:
            return None
        return frozenset(name for name, t in self.tenants.items() if principal in t.auditors)


def may_read(principal: str | None, audience: Audience, policy: ReadingPolicy) -> bool:
    """The rule: may ``principal`` (an authenticated reader; ``None`` or empty is nobody) read a part of
    ``audience``?"""
    if not principal:
        return False
    if principal in policy.auditors_of(audience.tenant):
        return True
    if not audience.principal:
        return False  # a part nobody asked for is its tenant's auditors' alone
    return principal in (audience.principal, audience.owner)


def _names(value: object, where: str, path: Path) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ReasoningConfigError(f"policy {str(path)!r}: {where} must be a list of principal names")
    return frozenset(v.strip() for v in value)


def _check_keys(table: Mapping[str, object], allowed: frozenset[str], where: str, path: Path) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        allowed_keys = ", ".join(sorted(allowed))
        raise ReasoningConfigError(
            f"policy {str(path)!r}: unknown key(s) {', '.join(unknown)} in {where} (allowed: {allowed_keys})"
        )


def load_policy(path: str | os.PathLike[str]) -> ReadingPolicy:
    """Read a policy file; ``ReasoningConfigError`` naming the file and what is wrong."""
    where = Path(path).expanduser()
    try:
        document = tomllib.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReasoningConfigError(f"policy {str(where)!r} cannot be read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ReasoningConfigError(f"policy {str(where)!r} is not TOML ({exc})") from None
    _check_keys(document, frozenset({"global", "tenants"}), "the file", where)
    global_table = document.get("global", {})
    tenants_table = document.get("tenants", {})
    if not isinstance(global_table, dict) or not isinstance(tenants_table, dict):
        raise ReasoningConfigError(f"policy {str(where)!r}: [global] and [tenants.<name>] must be tables")
    _check_keys(global_table, frozenset({"auditors"}), "[global]", where)
    tenants: dict[str, TenantPolicy] = {}
    for name, table in tenants_table.items():
        if not isinstance(table, dict):
            raise ReasoningConfigError(f"policy {str(where)!r}: [tenants.{name}] must be a table")
        _check_keys(table, frozenset({"auditors", "retention", "store"}), f"[tenants.{name}]", where)
        retention = table.get("retention")
        if retention is not None:
            if not isinstance(retention, str):
                raise ReasoningConfigError(f"policy {str(where)!r}: [tenants.{name}] retention must be a string")
            parse_retention(retention, named_by=f"policy {str(where)!r} [tenants.{name}] retention")
        store = table.get("store")
        if store is not None and (not isinstance(store, str) or not store.strip()):
            raise ReasoningConfigError(f"policy {str(where)!r}: [tenants.{name}] store must be a store URL")
        auditors = _names(table.get("auditors", []), f"[tenants.{name}] auditors", where)
        tenants[name] = TenantPolicy(auditors, retention, store)
    return ReadingPolicy(_names(global_table.get("auditors", []), "[global] auditors", where), tenants)


def policy_from_env(environ: Mapping[str, str] | None = None) -> ReadingPolicy:
    """The policy ``LOOM_OTEL_POLICY`` names, else the empty one."""
    setting = (os.environ if environ is None else environ).get(env.LOOM_OTEL_POLICY) or None
    if setting is None:
        return ReadingPolicy()
    try:
        return load_policy(setting)
    except ReasoningConfigError as exc:
        raise ReasoningConfigError(f"{env.LOOM_OTEL_POLICY}={setting!r}: {exc}") from None
