"""The settings of ``loom-otel serve``, checked once in the command and handed to each uvicorn worker
(a worker is a new process that builds the same app from them: stateless, so all answer the same)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from starlette.applications import Starlette

from loom_otel.audit._standing import trusted_keys
from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.core.policy import ReadingPolicy, load_policy
from loom_otel.core.runtime import unusable_directory
from loom_otel.core.stores import store_from_uri, with_tenant_stores
from loom_otel.live._auth import Authenticator, header_authenticator, jwt_authenticator, tokens_file_authenticator
from loom_otel.viewer._archive import RemoteArchive, is_remote
from loom_otel.viewer._sessions import load_session_key

__all__ = ["SETTINGS_VARIABLE", "ServeSettings", "app_from_environment"]

SETTINGS_VARIABLE: Final = "_LOOM_OTEL_SERVE_SETTINGS"
"""Where the command leaves the settings for its workers (internal; not a configuration variable)."""
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})
"""The names of the loopback interface: answered when the server is bound there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    source: str
    store: str
    reads_journal: str
    policy: str | None = None
    tokens: str | None = None
    jwks: str | None = None
    issuer: str | None = None
    audience: str | None = None
    principal_claim: str = "sub"
    trusted_proxy: bool = False
    trace_url: str | None = None
    secure_cookie: bool = False
    forward: bool = False
    """Forward the read records through a chained exporter (inner: ``LOOM_OTEL_CHAIN_INNER``)."""
    session_key: str | None = None
    """The key file of browser sessions, shared by the workers (made at ``check`` when absent)."""
    public_url: str | None = None
    """Where readers reach the viewer (``--public-url``, else ``LOOM_OTEL_VIEWER_URL``): its host is answered."""
    bind: str = "127.0.0.1"
    """The address the server listens on: loopback names are answered when it is a loopback address."""
    threads: int | None = None
    """Reading threads per worker (``--threads``; ``None``: ``create_app``'s rule)."""

    def hosts(self) -> frozenset[str] | None:
        """The ``Host`` names answered: the public URL's, and the loopback names when bound to loopback;
        ``None`` (any) when neither applies and no trusted proxy is declared (tokens prove each reader)."""
        names: set[str] = set()
        if self.public_url:
            host = urlsplit(self.public_url).hostname
            if not host:
                raise ReasoningConfigError(f"--public-url {self.public_url!r} names no host")
            names.add(host)
        if self.bind in LOOPBACK_HOSTS or self.bind.startswith("127."):
            names |= LOOPBACK_HOSTS
        if not names and self.trusted_proxy:
            raise ReasoningConfigError(
                "--trusted-proxy needs --public-url (or LOOM_OTEL_VIEWER_URL) when the server is not bound to "
                "loopback: only the hosts of the public URL are answered"
            )
        return frozenset(names) or None

    trust: tuple[str, ...] = ()
    """Key files (PEM, ``loom-otel keygen``) whose signed checkpoints prove records (``--trust``); the
    public half of ``LOOM_OTEL_CHECKPOINT_KEY`` is trusted too (``_standing.trusted_keys``)."""

    def trusted(self) -> frozenset[str]:
        try:
            return trusted_keys(self.trust)
        except (OSError, ValueError) as exc:
            raise ReasoningConfigError(f"--trust: not an Ed25519 key file ({exc})") from None

    def authenticator(self) -> Authenticator:
        """Exactly one way to prove a reader: tokens, JWTs, or a declared trusted proxy (warned)."""
        ways = [self.tokens is not None, self.jwks is not None, self.trusted_proxy]
        if sum(ways) != 1:
            raise ReasoningConfigError(
                "loom-otel serve needs exactly one authenticator: --tokens FILE, --jwks FILE|URL with --issuer "
                "and --audience, or --trusted-proxy (header identity set by an authenticating proxy)"
            )
        if self.tokens is not None:
            return tokens_file_authenticator(self.tokens)
        if self.jwks is not None:
            return jwt_authenticator(
                self.jwks, issuer=self.issuer or "", audience=self.audience or "", principal_claim=self.principal_claim
            )
        return header_authenticator()

    def reading_policy(self) -> ReadingPolicy:
        return load_policy(self.policy) if self.policy else ReadingPolicy()

    def check(self) -> None:
        """Everything a worker will build, built once now, so a bad setting stops the command early."""
        if is_remote(self.source):
            RemoteArchive(self.source).check()
        elif not Path(self.source).exists():
            raise ReasoningConfigError(f"no journal directory or collector archive at {self.source!r}")
        if self.trace_url is not None and "{trace_id}" not in self.trace_url:
            raise ReasoningConfigError(f"--trace-url {self.trace_url!r} must contain {{trace_id}}")
        store_from_uri(self.store)
        self.reading_policy()
        self.hosts()
        if self.session_key is not None:
            load_session_key(self.session_key)  # made once here, before the workers read it
        self.trusted()
        problem = unusable_directory(Path(self.reads_journal))
        if problem is not None:  # every read is recorded there first: a viewer that cannot would serve nothing
            raise ReasoningConfigError(f"--reads-journal {self.reads_journal!r} cannot be written: {problem}")

    def to_environment(self) -> str:
        return json.dumps(asdict(self))

    def app(self) -> Starlette:
        from loom_otel.exporters.chain._inner import inner_from_environment
        from loom_otel.viewer._app import create_app

        return create_app(
            self.source,
            with_tenant_stores(store_from_uri(self.store), self.reading_policy()),  # a tenant's blobs: its own store
            authenticator=self.authenticator(),
            reads_journal=self.reads_journal,
            policy=self.reading_policy(),
            trace_url=self.trace_url,
            secure_cookie=self.secure_cookie,
            forward_to=inner_from_environment() if self.forward else None,
            session_key=self.session_key,
            hosts=self.hosts(),
            trust=self.trusted(),
            threads=self.threads,
        )


def app_from_environment() -> Starlette:
    """The uvicorn factory of each worker (``loom_otel.viewer._settings:app_from_environment``)."""
    settings = json.loads(os.environ[SETTINGS_VARIABLE])
    settings["trust"] = tuple(settings.get("trust") or ())
    return ServeSettings(**settings).app()
