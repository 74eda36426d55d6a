"""Configuration: ``ReasoningConfig`` (arguments), the environment, defaults, resolved once into a
``Runtime`` that every instrumentor of the process shares (one store, one journal chain)."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from loom_otel.core import environment_variables as env
from loom_otel.core._file_store import FileReasoningStore
from loom_otel.core._fork import renew_module_after_fork
from loom_otel.core._journal import Durability, Journal, open_journal
from loom_otel.core._store import DigestKeyStore, ReasoningStore, store_from_uri
from loom_otel.core.exceptions import LoomOtelWarning, ReasoningConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ReasoningConfig", "Runtime", "configure", "current_runtime", "reset_runtime", "runtime_for"]

Transcript = Literal["keep", "redact"]
DigestMode = Literal["sha256", "hmac-sha256"]
DEFAULT_JOURNAL: Final = Path(".loom") / "journal"

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningConfig:
    """What to do with model reasoning. ``None`` fields come from the environment, then the default.

    ``store`` is a ``ReasoningStore`` or a URL (``file:///dir``, ``memory:``, ``s3://bucket/prefix``).
    ``on_reasoning`` is the live sink (``live=True``); ``delta_guards`` run on each live delta.
    ``live_text`` (with ``live``) also sends the answer's streamed text deltas, as ``TextDelta``.
    """

    enabled: bool | None = None
    store: ReasoningStore | str | None = None
    capture: bool | None = None
    transcript: Transcript | None = None
    live: bool | None = None
    live_text: bool | None = None
    on_reasoning: Callable[[Any], None] | None = None
    delta_guards: Sequence[Callable[[Any], Any]] = ()
    journal: str | os.PathLike[str] | Journal | None = None
    journal_durability: Durability | None = None
    store_fsync: bool | None = None
    checkpoint_key: str | os.PathLike[str] | None = None
    require_continuation: bool | None = None
    digest: DigestMode | None = None


def _env_bool(name: str, environ: Mapping[str, str]) -> bool | None:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    warnings.warn(f"{name}={raw!r} is not a boolean (true/false); using the default", LoomOtelWarning, stacklevel=4)
    return None


def _env_choice(name: str, choices: Sequence[str], environ: Mapping[str, str]) -> str | None:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    value = raw.strip().lower()
    if value in choices:
        return value
    warnings.warn(
        f"{name}={raw!r} is not one of {', '.join(choices)}; using the default", LoomOtelWarning, stacklevel=4
    )
    return None


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
    on_reasoning: Callable[[Any], None] | None = None
    delta_guards: tuple[Callable[[Any], Any], ...] = ()
    live_text: bool = False
    _journal: Journal | None = field(default=None, repr=False)
    _warned: set[str] = field(default_factory=set, repr=False)

    @property
    def keeps_text(self) -> bool:
        return self.enabled and self.capture and self.store is not None

    @property
    def journal(self) -> Journal:
        """The process's chain in ``journal_dir`` (opened on first use: nothing is created at import)."""
        if self._journal is None:
            self._journal = open_journal(
                self.journal_dir, durability=self.journal_durability, checkpoint_key=self.checkpoint_key
            )
        return self._journal

    def boot_warning(self, provider: str) -> None:
        """ADR D7: one warning per instrumented provider that can return reasoning and has no store."""
        if not self.enabled or self.keeps_text or provider in self._warned:
            return
        self._warned.add(provider)
        why = "no reasoning store is configured" if self.store is None else "capture is off"
        message = (
            f"{provider} can return model reasoning, but {why} ({env.LOOM_OTEL_REASONING_STORE}): "
            "reasoning is not kept for audit (only signatures, for continuation)"
        )
        warnings.warn(message, LoomOtelWarning, stacklevel=3)

    @classmethod
    def resolve(cls, config: ReasoningConfig | None = None, environ: Mapping[str, str] | None = None) -> Runtime:
        """Argument, then environment, then default; a bad environment value warns and falls back."""
        config = config or ReasoningConfig()
        environ = os.environ if environ is None else environ
        enabled = _pick(config.enabled, _env_bool(env.LOOM_OTEL_REASONING, environ), True)
        require = _pick(config.require_continuation, _env_bool(env.LOOM_OTEL_REQUIRE_CONTINUATION, environ), False)
        fsync = _pick(config.store_fsync, _env_bool(env.LOOM_OTEL_STORE_FSYNC, environ), True)
        store_setting = _pick(config.store, environ.get(env.LOOM_OTEL_REASONING_STORE) or None)
        store: ReasoningStore | None
        if store_setting is None or not enabled:
            store = None
        elif isinstance(store_setting, str):
            store = store_from_uri(store_setting, fsync=fsync)
        else:
            store = store_setting
        capture = _pick(config.capture, _env_bool(env.LOOM_OTEL_REASONING_CAPTURE, environ), store is not None)
        transcript = _pick(
            config.transcript, _env_choice(env.LOOM_OTEL_REASONING_TRANSCRIPT, ("keep", "redact"), environ), "keep"
        )
        if transcript not in ("keep", "redact"):
            raise ReasoningConfigError(f"transcript must be 'keep' or 'redact', got {transcript!r}")
        if enabled and transcript == "redact" and (store is None or not capture):
            raise ReasoningConfigError(
                "transcript='redact' needs a reasoning store with capture on: without one, redacted "
                f"reasoning could never be put back ({env.LOOM_OTEL_REASONING_STORE})"
            )
        live = _pick(config.live, _env_bool(env.LOOM_OTEL_REASONING_LIVE, environ), False)
        live_text = _pick(config.live_text, _env_bool(env.LOOM_OTEL_REASONING_LIVE_TEXT, environ), False)
        durability = _pick(
            config.journal_durability,
            _env_choice(env.LOOM_OTEL_JOURNAL_DURABILITY, ("always", "batch", "os"), environ),
            "batch",
        )
        digest = _pick(config.digest, _env_choice(env.LOOM_OTEL_DIGEST, ("sha256", "hmac-sha256"), environ), "sha256")
        if enabled and digest == "hmac-sha256" and store is not None and not isinstance(store, DigestKeyStore):
            raise ReasoningConfigError(
                f"{env.LOOM_OTEL_DIGEST}=hmac-sha256 needs a store that keeps per-execution digest keys; "
                f"{type(store).__name__} does not"
            )
        journal_setting = _pick(config.journal, environ.get(env.LOOM_OTEL_AUDIT_JOURNAL) or None)
        journal: Journal | None = None
        if isinstance(journal_setting, Journal):
            journal, journal_dir = journal_setting, journal_setting.directory
        elif journal_setting is not None:
            journal_dir = Path(journal_setting).expanduser().absolute()
        elif isinstance(store, FileReasoningStore):
            journal_dir = store.root / "journal"
        else:
            journal_dir = DEFAULT_JOURNAL.absolute()
        if enabled and journal_dir.exists() and not journal_dir.is_dir():
            raise ReasoningConfigError(f"audit journal path {str(journal_dir)!r} is not a directory")
        key_setting = _pick(config.checkpoint_key, environ.get(env.LOOM_OTEL_CHECKPOINT_KEY) or None)
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
            checkpoint_key=Path(key_setting).expanduser() if key_setting is not None else None,
            on_reasoning=config.on_reasoning,
            delta_guards=tuple(config.delta_guards),
            live_text=bool(live_text),
            _journal=journal,
        )
        if enabled and require and not runtime.keeps_text:
            raise ReasoningConfigError(
                f"{env.LOOM_OTEL_REQUIRE_CONTINUATION} is set, but no reasoning store with capture is "
                f"configured ({env.LOOM_OTEL_REASONING_STORE}): reasoning could not be carried forward"
            )
        return runtime


_default: Runtime | None = None
_default_lock = threading.Lock()
renew_module_after_fork(__name__)


def configure(config: ReasoningConfig | None = None, **fields: Any) -> Runtime:
    """Resolve a configuration and make it the process default for instrumentors given no ``config``."""
    global _default
    if fields:
        config = ReasoningConfig(**fields) if config is None else _replace(config, fields)
    runtime = Runtime.resolve(config)
    with _default_lock:
        _default = runtime
    return runtime


def _replace(config: ReasoningConfig, fields: dict[str, Any]) -> ReasoningConfig:
    import dataclasses

    return dataclasses.replace(config, **fields)


def current_runtime() -> Runtime:
    """The process default: the last ``configure()``, else built from the environment once."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runtime.resolve()
        return _default


def runtime_for(config: ReasoningConfig | None) -> Runtime:
    """What an instrumentor uses: its own ``config`` if given, else the process default."""
    return Runtime.resolve(config) if config is not None else current_runtime()


def reset_runtime() -> None:
    """Forget the process default (tests)."""
    global _default
    with _default_lock:
        _default = None
