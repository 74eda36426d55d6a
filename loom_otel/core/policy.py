"""Who may read, public face for the readers (audit, live, the viewer, the CLI): the audience sealed with a
blob, the reading policy (file or environment) and the one check, ``may_read``; text a reader must treat as
untrusted."""

from __future__ import annotations

from loom_otel.core._guard._untrusted import Untrusted
from loom_otel.core._reading._policy import (
    Audience,
    ReadingPolicy,
    TenantPolicy,
    load_policy,
    may_read,
    policy_from_env,
)

__all__ = [
    "Audience",
    "ReadingPolicy",
    "TenantPolicy",
    "Untrusted",
    "load_policy",
    "may_read",
    "policy_from_env",
]
