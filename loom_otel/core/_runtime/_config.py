"""Configuration: ``ReasoningConfig`` (arguments), the environment, defaults, resolved into a
``Runtime`` each time an instrumentor is instrumented (DESIGN "Environment"). What must be one per
process is shared by key, not by the first resolution: the journal chain of a directory
(``open_journal``) and the store of a URL."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from cryptography.exceptions import UnsupportedAlgorithm

from loom_otel.core import environment_variables as env
from loom_otel.core._continuation._discards import DiscardCheck
from loom_otel.core._continuation._rehydrate import Texts
from loom_otel.core._evidence._journal._checkpoint import Signer
from loom_otel.core._evidence._journal._writer import (
    BestEffortJournal,
    Durability,
    Journal,
    best_effort,
    open_journal,
    warn_unwritable,
)
from loom_otel.core._evidence._store._file import FileReasoningStore
from loom_otel.core._evidence._store._protocol import DigestKeyStore, ReasoningStore
from loom_otel.core._evidence._store._uri import STORE_FORMS, store_from_uri
from loom_otel.core._reading._policy import policy_from_env
from loom_otel.core._reading._retention import parse_retention
from loom_otel.core._runtime._context import ExecutionScope
from loom_otel.core._runtime._fork import renew_module_after_fork
from loom_otel.core._runtime._hooks import CapturePredicate, TextResolver
from loom_otel.core._runtime._settings import env_bool, env_choice, env_path, invalid_setting, warn_unknown_names
from loom_otel.core._runtime._warnings import forget_once, warn
from loom_otel.core._runtime._zero_code import forget_refusal
from loom_otel.core.exceptions import ReasoningConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ReasoningConfig",
    "Runtime",
    "configure",
    "current_runtime",
    "default_journal_dir",
    "open_stores",
    "reset_runtime",
    "runtime_for",
]

Transcript = Literal["keep", "redact"]
RequestReadable = Literal["off", "summarized"]
DigestMode = Literal["sha256", "hmac-sha256"]
APP_NAME: Final = "loom-otel"


def default_journal_dir() -> Path:
    """The journal's directory when neither ``LOOM_OTEL_AUDIT_JOURNAL`` nor a file store names one:
    ``journal`` in the user's state directory (``$XDG_STATE_HOME/loom-otel``, else
    ``~/.local/state/loom-otel`` on Linux; the platform's convention elsewhere), never the working
    directory. Nothing is created here."""
    from platformdirs import user_state_path

    return user_state_path(APP_NAME, appauthor=False) / "journal"


def default_session_key() -> Path:
    """The key file of ``loom-otel serve``'s browser sessions when ``--session-key`` names none:
    ``viewer-session.key`` in the user's state directory. Nothing is created here."""
    from platformdirs import user_state_path

    return user_state_path(APP_NAME, appauthor=False) / "viewer-session.key"


class _DeltaSink(Protocol):
    def __call__(self, delta: Any, /) -> object: ...


class _EventObserver(Protocol):
    def observe(self, event: Any, /) -> None: ...


LiveSink = _DeltaSink | _EventObserver
"""The live view's sink (``loom_otel.live.ReasoningSink`` or ``LiveObserver``): core only hands it over."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningConfig:
    """What to do with model reasoning. ``None`` fields come from the environment, then the default.

    ``store`` is a ``ReasoningStore`` or a URL (``file:///dir``, ``memory:``, ``s3://bucket/prefix``).
    ``on_reasoning`` is the live sink (``live=True``); ``delta_guards`` run on each live delta.
    ``live_text`` (with ``live``) also sends the answer's streamed text deltas, as ``TextDelta``.
    ``capture`` is a bool or a predicate asked once per model call (``core._runtime._hooks.CaptureCall``);
    ``resolve`` gives back the texts requests put back (``core._runtime._hooks.TextLookup``; unset: the store's).
    """

    enabled: bool | None = None
    store: ReasoningStore | str | None = None
    capture: bool | CapturePredicate | None = None
    resolve: TextResolver | None = None
    transcript: Transcript | None = None
    live: bool | None = None
    live_text: bool | None = None
    on_reasoning: LiveSink | None = None
    delta_guards: Sequence[Callable[[Any], Any]] = ()
    journal: str | os.PathLike[str] | Journal | None = None
    journal_durability: Durability | None = None
    store_fsync: bool | None = None
    checkpoint_key: str | os.PathLike[str] | None = None
    require_continuation: bool | None = None
    digest: DigestMode | None = None
    request_readable: RequestReadable | None = None
    principal_baggage: str | None = None
    viewer_url: str | None = None


def _pick(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


@dataclass(slots=True, eq=False)
class Runtime:
    """The resolved configuration and the live objects built from it (store, journal)."""

    enabled: bool
    store: ReasoningStore | None
    capture: bool
    transcript: Transcript
    live: bool
    require_continuation: bool
    digest: DigestMode
    journal_dir: Path
    journal_durability: Durability
    checkpoint_key: Path | None
    on_reasoning: LiveSink | None = None
    delta_guards: tuple[Callable[[Any], Any], ...] = ()
    live_text: bool = False
    request_readable: RequestReadable = "off"
    principal_baggage: str | None = None
    """The baggage key naming a call's principal; ``None`` (the default): baggage names none."""
    viewer_url: str | None = None
    capture_when: CapturePredicate | None = None
    """``ReasoningConfig(capture=predicate)``: asked once per model call (``_calls._keep``)."""
    capture_set: bool = False
    """Whether ``capture`` was given (argument or environment), not the default."""
    resolver: TextResolver | None = None
    tenant_stores: Mapping[str, str] = field(default_factory=dict)
    """The policy file's ``[tenants.<name>] store`` URLs: a tenant's texts go only there."""
    store_fsync: bool = True
    _journal: Journal | None = field(default=None, repr=False)
    _writer: Journal | BestEffortJournal | None = field(default=None, repr=False)

    @property
    def keeps_text(self) -> bool:
        return self.enabled and self.capture and self.store is not None

    @property
    def fail_closed(self) -> bool:
        """Whether a store or journal failure fails the model call (DESIGN "Failure policy"): only
        when a store is configured. With none, nothing loom-otel does raises into the application."""
        return self.store is not None

    @property
    def journal(self) -> Journal | BestEffortJournal:
        """The process's chain in ``journal_dir`` (opened on first use: nothing is created at import);
        without a store, wrapped so that a failure to write it warns once and never raises."""
        if self._writer is None:
            if self._journal is None:
                self._journal = open_journal(
                    self.journal_dir, durability=self.journal_durability, checkpoint_key=self.checkpoint_key
                )
            self._writer = self._journal if self.fail_closed else best_effort(self._journal)
        return self._writer

    def store_for(self, scope: ExecutionScope | None) -> ReasoningStore | None:
        """Where a call of ``scope`` keeps and reads its texts: ``execution(store=...)``, else its tenant's
        store (the policy file), else the configured one. A URL is opened once per process; one that
        cannot be is a ``ReasoningConfigError`` (for that call only)."""
        if scope is None or not self.enabled:
            return self.store
        own = scope.store if scope.store is not None else self.tenant_stores.get(scope.tenant or "")
        if own is None:
            return self.store
        if isinstance(own, str):
            return _shared_store(own, self.store_fsync, "execution(store=...)" if scope.store else "policy store")
        return own

    @property
    def texts(self) -> Texts:
        """Where requests get texts back from (``_continuation._rehydrate``): each scope's store, through
        ``resolve`` when one is given."""
        return Texts(self.store, self.store_for, self.resolver)

    @property
    def discards(self) -> DiscardCheck:
        """A new discard check for one continuation rule (``_continuation._discards``)."""
        lost = (
            "no reasoning store is configured"
            if self.store is None
            else (
                "not a tool round, none is put back (a tool round a framework rewrote is put back only inside "
                "its execution())"
            )
        )
        return DiscardCheck(lost=lost, require=self.require_continuation)

    def boot_warning(self, provider: str) -> None:
        """ADR D7: one warning per process, at the first import of an instrumented SDK that can return
        reasoning, when no store keeps it."""
        if not self.enabled or self.keeps_text:
            return
        why = "no reasoning store is configured" if self.store is None else "capture is off"
        message = (
            f"{provider} can return model reasoning, but {why} ({env.LOOM_OTEL_REASONING_STORE}): "
            "reasoning is not kept for audit (only signatures, for continuation)"
        )
        warn(message, once="no reasoning store")

    @classmethod
    def resolve(cls, config: ReasoningConfig | None = None, environ: Mapping[str, str] | None = None) -> Runtime:
        """Argument, then environment, then default; an invalid environment value is a
        ``ReasoningConfigError`` naming the variable, the value and what is allowed (``_settings``)."""
        config = config or ReasoningConfig()
        environ = os.environ if environ is None else environ
        warn_unknown_names(environ)
        enabled = _pick(config.enabled, env_bool(env.LOOM_OTEL_REASONING, environ), True)
        require = _pick(config.require_continuation, env_bool(env.LOOM_OTEL_REQUIRE_CONTINUATION, environ), False)
        store = _store(config, environ, enabled)
        when = config.capture if callable(config.capture) else None
        setting = True if when is not None else config.capture
        capture = _pick(setting, env_bool(env.LOOM_OTEL_REASONING_CAPTURE, environ))
        capture_set = capture is not None
        capture = store is not None if capture is None else capture
        keeps = store is not None and bool(capture)
        transcript = _transcript(config, environ, enabled=enabled, keeps=keeps)
        live = _pick(config.live, env_bool(env.LOOM_OTEL_REASONING_LIVE, environ), False)
        live_text = _pick(config.live_text, env_bool(env.LOOM_OTEL_REASONING_LIVE_TEXT, environ), False)
        readable = _request_readable(config.request_readable, environ)
        if enabled and readable != "off" and not keeps:
            raise ReasoningConfigError(
                f"{env.LOOM_OTEL_REQUEST_READABLE}={readable!r} needs a reasoning store with capture on "
                f"({env.LOOM_OTEL_REASONING_STORE}): the readable reasoning it asks for is kept there and put "
                "back from there on later requests"
            )
        durability = _pick(
            config.journal_durability,
            env_choice(env.LOOM_OTEL_JOURNAL_DURABILITY, ("always", "batch", "os"), environ),
            "batch",
        )
        digest = _digest(config, environ, enabled=enabled, store=store)
        parse_retention(environ.get(env.LOOM_OTEL_RETENTION) or "none")  # used by retain and serve: checked here
        journal, journal_dir = _journal_place(config, environ, enabled=enabled, store=store)
        key_path = _checkpoint_key(config, environ, enabled=enabled)
        runtime = cls(
            enabled=enabled,
            store=store,
            capture=bool(capture),
            transcript=transcript,
            live=live,
            require_continuation=require,
            digest=digest,
            journal_dir=journal_dir,
            journal_durability=durability,
            checkpoint_key=key_path,
            on_reasoning=config.on_reasoning,
            delta_guards=tuple(config.delta_guards),
            live_text=bool(live_text),
            request_readable=readable,
            principal_baggage=_principal_baggage(config, environ),  # and LOOM_OTEL_POLICY, checked below
            viewer_url=_viewer_url(config, environ),
            capture_when=when,
            capture_set=capture_set,
            resolver=config.resolve,
            store_fsync=_pick(config.store_fsync, env_bool(env.LOOM_OTEL_STORE_FSYNC, environ), True),
            _journal=journal,
        )
        if enabled:  # a policy file that cannot be read is reported now, naming the variable
            runtime.tenant_stores = policy_from_env(environ).stores()
        if enabled and require and not runtime.keeps_text:
            raise ReasoningConfigError(
                f"{env.LOOM_OTEL_REQUIRE_CONTINUATION} is set, but no reasoning store with capture is "
                f"configured ({env.LOOM_OTEL_REASONING_STORE}): reasoning could not be carried forward"
            )
        return runtime


# -- the steps of ``Runtime.resolve``, in its order ----------------------------------------------------


def _store(config: ReasoningConfig, environ: Mapping[str, str], enabled: bool) -> ReasoningStore | None:
    """The reasoning store: an instance as given, a URL opened once per process (``_shared_store``), or none
    (none at all when loom-otel is disabled)."""
    fsync = _pick(config.store_fsync, env_bool(env.LOOM_OTEL_STORE_FSYNC, environ), True)
    setting = _pick(config.store, environ.get(env.LOOM_OTEL_REASONING_STORE) or None)
    if setting is None or not enabled:
        return None
    if isinstance(setting, str):
        return _shared_store(setting, fsync, "ReasoningConfig.store" if config.store else None)
    store: ReasoningStore = setting
    return store


def _transcript(config: ReasoningConfig, environ: Mapping[str, str], *, enabled: bool, keeps: bool) -> Transcript:
    """``keep`` or ``redact``; ``redact`` only with a store that captures (``keeps``), which puts it back."""
    transcript: Transcript = _pick(
        config.transcript, env_choice(env.LOOM_OTEL_REASONING_TRANSCRIPT, ("keep", "redact"), environ), "keep"
    )
    if transcript not in ("keep", "redact"):
        raise ReasoningConfigError(f"transcript must be 'keep' or 'redact', got {transcript!r}")
    if enabled and transcript == "redact" and not keeps:
        raise ReasoningConfigError(
            "transcript='redact' needs a reasoning store with capture on: without one, redacted "
            f"reasoning could never be put back ({env.LOOM_OTEL_REASONING_STORE})"
        )
    return transcript


def _digest(
    config: ReasoningConfig, environ: Mapping[str, str], *, enabled: bool, store: ReasoningStore | None
) -> DigestMode:
    """``sha256`` or ``hmac-sha256``; the keyed one only with a store that keeps per-execution keys."""
    digest: DigestMode = _pick(
        config.digest, env_choice(env.LOOM_OTEL_DIGEST, ("sha256", "hmac-sha256"), environ), "sha256"
    )
    if enabled and digest == "hmac-sha256" and store is not None and not isinstance(store, DigestKeyStore):
        raise ReasoningConfigError(
            f"{env.LOOM_OTEL_DIGEST}=hmac-sha256 needs a store that keeps per-execution digest keys; "
            f"{type(store).__name__} does not"
        )
    return digest


def _journal_place(
    config: ReasoningConfig, environ: Mapping[str, str], *, enabled: bool, store: ReasoningStore | None
) -> tuple[Journal | None, Path]:
    """The journal given as an instance (and its directory), else its directory: the setting, the one
    beside a file store, or the user's state directory; checked writable when enabled."""
    setting = _pick(config.journal, env_path(env.LOOM_OTEL_AUDIT_JOURNAL, environ))
    if isinstance(setting, Journal):
        journal, directory = setting, setting.directory
        named_by = "ReasoningConfig.journal"
    elif setting is not None:
        journal, directory = None, Path(setting).expanduser().absolute()
        named_by = "ReasoningConfig.journal" if config.journal is not None else env.LOOM_OTEL_AUDIT_JOURNAL
    elif isinstance(store, FileReasoningStore):
        journal, directory = None, store.root / "journal"
        named_by = f"{env.LOOM_OTEL_REASONING_STORE} (the journal beside a file store)"
    else:
        journal, directory = None, default_journal_dir().absolute()
        named_by = f"{env.LOOM_OTEL_AUDIT_JOURNAL} (default: the user's state directory)"
    if enabled:
        _check_journal_location(directory, named_by, fail_closed=store is not None)
    return journal, directory


def _checkpoint_key(config: ReasoningConfig, environ: Mapping[str, str], *, enabled: bool) -> Path | None:
    """The checkpoint signing key's path, checked readable when enabled."""
    setting = _pick(config.checkpoint_key, env_path(env.LOOM_OTEL_CHECKPOINT_KEY, environ))
    path = Path(setting).expanduser() if setting is not None else None
    if enabled and path is not None:
        named = "ReasoningConfig.checkpoint_key" if config.checkpoint_key is not None else None
        _check_checkpoint_key(path, named or env.LOOM_OTEL_CHECKPOINT_KEY)
    return path


_READABLE: Final = ("off", "summarized")


def _request_readable(setting: str | None, environ: Mapping[str, str]) -> RequestReadable:
    """``LOOM_OTEL_REQUEST_READABLE`` (argument, then environment, default ``off``): anything but
    ``off`` / ``summarized`` is a ``ReasoningConfigError`` naming the setting (a typo must not silently
    leave reasoning unreadable)."""
    if setting is None:
        value = env_choice(env.LOOM_OTEL_REQUEST_READABLE, _READABLE, environ)
    elif isinstance(setting, str) and setting.strip().lower() in _READABLE:
        value = setting.strip().lower()
    else:
        raise invalid_setting("ReasoningConfig.request_readable", str(setting), ", ".join(_READABLE))
    return "summarized" if value == "summarized" else "off"


# -- who may read, and where: the principal's baggage key and the viewer's URL -----------------------


def _principal_baggage(config: ReasoningConfig, environ: Mapping[str, str]) -> str | None:
    """The baggage key naming a call's principal when no ``execution(principal=...)`` does; ``None``
    unless set (opt-in: a caller of the application controls its baggage)."""
    named_by = "ReasoningConfig.principal_baggage" if config.principal_baggage is not None else None
    raw = _pick(config.principal_baggage, environ.get(env.LOOM_OTEL_PRINCIPAL_BAGGAGE) or None)
    if raw is None:
        return None
    if not raw.strip() or any(c.isspace() or c in ",;=" for c in raw):
        raise ReasoningConfigError(
            f"{named_by or env.LOOM_OTEL_PRINCIPAL_BAGGAGE}={raw!r} is not a baggage key: "
            "allowed is a non-empty name without spaces, ',', ';' or '=' (default: none)"
        )
    return str(raw)


def _viewer_url(config: ReasoningConfig, environ: Mapping[str, str]) -> str | None:
    """The base URL of ``loom-otel serve``, without a trailing slash; ``None``: no link on captures."""
    named_by = "ReasoningConfig.viewer_url" if config.viewer_url is not None else env.LOOM_OTEL_VIEWER_URL
    raw = _pick(config.viewer_url, environ.get(env.LOOM_OTEL_VIEWER_URL) or None)
    if raw is None:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(str(raw).strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ReasoningConfigError(
            f"{named_by}={raw!r} is not a viewer URL: allowed is an http:// or https:// base URL "
            "with no query or fragment, such as https://viewer.example/loom"
        )
    return parts.geturl().rstrip("/")


def unusable_directory(directory: Path) -> str | None:
    """Why ``directory`` could not be created and written, or ``None`` when it could (nothing is
    created: the nearest existing ancestor must be a writable directory)."""
    probe = directory
    try:
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        if not probe.is_dir():
            return f"{str(probe)!r} is not a directory"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{str(probe)!r} is not writable"
    return None


def _check_journal_location(directory: Path, named_by: str, *, fail_closed: bool) -> None:
    """DESIGN "Failure policy": a journal location that cannot work is reported when instrumenting:
    an error naming the path and the setting when a store is configured, else one warning."""
    why = unusable_directory(directory)
    if why is None:
        return
    if fail_closed:
        raise ReasoningConfigError(f"audit journal directory {str(directory)!r} cannot be used: {why} ({named_by})")
    warn_unwritable(directory, why)


def _check_checkpoint_key(path: Path, named_by: str) -> None:
    """An unloadable checkpoint key is an error at ``instrument()`` (checkpoints would go unsigned)."""
    try:
        Signer.from_file(path)
    except OSError as exc:
        why = f"{exc.strerror or type(exc).__name__}: checkpoints could not be signed"
        raise invalid_setting(named_by, str(path), "an Ed25519 private key file (loom-otel keygen PATH)", why) from None
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        why = f"not an Ed25519 private key ({exc}): checkpoints could not be signed"
        raise invalid_setting(named_by, str(path), "an Ed25519 private key file (loom-otel keygen PATH)", why) from None


_stores: dict[tuple[str, bool], ReasoningStore] = {}
_stores_lock = threading.Lock()


def _shared_store(url: str, fsync: bool, named_by: str | None) -> ReasoningStore:
    """The process's one store for ``url`` (a second instrumentor, or a re-instrumentation, writes
    through the same store object). A location that cannot work names the setting."""
    with _stores_lock:
        store = _stores.get((url, fsync))
        if store is None:
            try:
                store = store_from_uri(url, fsync=fsync)
            except ReasoningConfigError as exc:
                raise invalid_setting(named_by or env.LOOM_OTEL_REASONING_STORE, url, STORE_FORMS, str(exc)) from None
            _stores[(url, fsync)] = store
        return store


_default: Runtime | None = None
_default_config: ReasoningConfig | None = None
"""What ``configure()`` was given: the fields an instrumentor's own ``config`` leaves unset."""
_default_lock = threading.Lock()
renew_module_after_fork(__name__)


def configure(config: ReasoningConfig | None = None, **fields: Any) -> Runtime:
    """Resolve a configuration and make it the process default for instrumentors given no ``config``."""
    global _default, _default_config
    if fields:
        config = ReasoningConfig(**fields) if config is None else _replace(config, fields)
    runtime = Runtime.resolve(config)
    with _default_lock:
        _default, _default_config = runtime, config
    return runtime


def _replace(config: ReasoningConfig, fields: dict[str, Any]) -> ReasoningConfig:
    import dataclasses

    return dataclasses.replace(config, **fields)


def current_runtime() -> Runtime:
    """The process default: the last ``configure()``, else the environment as it is now (read again
    at each call; the journal and the store it names are the process's shared ones)."""
    with _default_lock:
        configured = _default
    return configured if configured is not None else Runtime.resolve()


def runtime_for(config: ReasoningConfig | None) -> Runtime:
    """What an instrumentor uses at ``instrument()``: its own ``config`` if given, each field it leaves
    unset taken from ``configure()``, then the environment (ADR D7: field by field); else the process
    default (``current_runtime``)."""
    if config is None:
        return current_runtime()
    with _default_lock:
        base = _default_config
    return Runtime.resolve(config if base is None else _over(base, config))


def _over(base: ReasoningConfig, own: ReasoningConfig) -> ReasoningConfig:
    """``base`` with every field ``own`` sets (not ``None``; ``delta_guards``: not empty) replaced."""
    import dataclasses

    given = {f.name: getattr(own, f.name) for f in dataclasses.fields(own)}
    unset = {k for k, v in given.items() if v is None or (k == "delta_guards" and not v)}
    return dataclasses.replace(base, **{k: v for k, v in given.items() if k not in unset})


def open_stores() -> list[ReasoningStore]:
    """The stores opened from a URL so far (shared by the runtimes naming the same one)."""
    with _stores_lock:
        return list(_stores.values())


def reset_runtime() -> None:
    """Forget the process default, the shared stores and which one-time warnings were given (tests)."""
    global _default, _default_config
    with _default_lock:
        _default = _default_config = None
    with _stores_lock:
        _stores.clear()
    forget_once()
    forget_refusal()
