"""``loom-otel serve``: a governed viewer of recorded (and, in process, live) reasoning (extra ``live``).

``create_app(source, store, authenticator=..., reads_journal=...)`` is the ASGI app the command serves:
pages ``/`` and ``/executions/{id}``, JSON ``/api/executions`` and ``/api/executions/{id}`` (the
document of ``loom-otel audit show --json --text``, holding only what the reader may read). Who may read
is the one rule of DESIGN "Who may read" (principal, owner, the policy's auditors); missing and
forbidden answer the same 404; every read appends a chained ``loom.reasoning.read`` record.
"""

from __future__ import annotations

from loom_otel.core.policy import Audience, ReadingPolicy, TenantPolicy, load_policy, may_read
from loom_otel.live._auth import header_authenticator, jwt_authenticator, tokens_file_authenticator
from loom_otel.viewer._app import create_app
from loom_otel.viewer._reads import ReadRecord, read_records

__all__ = [
    "Audience",
    "ReadRecord",
    "ReadingPolicy",
    "TenantPolicy",
    "create_app",
    "header_authenticator",
    "jwt_authenticator",
    "load_policy",
    "may_read",
    "read_records",
    "tokens_file_authenticator",
]
