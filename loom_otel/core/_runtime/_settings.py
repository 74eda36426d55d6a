"""Reading one ``LOOM_OTEL_*`` value, one function per kind of value (boolean, choice, path, URL).

Each returns ``None`` when the variable is unset or blank (the caller then takes the default) and
raises ``ReasoningConfigError`` naming the variable, the value and what is allowed when it is set to
something else (DESIGN "Environment": never a silent fallback). A new variable is read through the
function of its kind, at ``instrument()`` or construction time, never at import.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlparse

from loom_otel.core import environment_variables as env
from loom_otel.core._runtime._warnings import warn
from loom_otel.core.exceptions import ReasoningConfigError

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

__all__ = [
    "closest_known",
    "env_bool",
    "env_choice",
    "env_path",
    "env_url",
    "invalid_setting",
    "url_problem",
    "warn_unknown_names",
]

TRUE: Final = frozenset({"1", "true", "yes", "on"})
FALSE: Final = frozenset({"0", "false", "no", "off"})


def invalid_setting(name: str, raw: str, allowed: str, why: str = "") -> ReasoningConfigError:
    """The one message shape: ``NAME='value' is not valid[: why]; allowed: ...``."""
    reason = f": {why}" if why else ""
    return ReasoningConfigError(f"{name}={raw!r} is not valid{reason}; allowed: {allowed}")


def _raw(name: str, environ: Mapping[str, str]) -> str | None:
    raw = environ.get(name)
    return None if raw is None or raw.strip() == "" else raw


def env_bool(name: str, environ: Mapping[str, str]) -> bool | None:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``, any case)."""
    raw = _raw(name, environ)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise invalid_setting(name, raw, "true or false (also 1/0, yes/no, on/off)")


def env_choice(name: str, choices: Collection[str], environ: Mapping[str, str]) -> str | None:
    """One of ``choices`` (any case, surrounding blanks ignored)."""
    raw = _raw(name, environ)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in choices:
        return value
    raise invalid_setting(name, raw, ", ".join(choices))


def env_path(name: str, environ: Mapping[str, str]) -> Path | None:
    """An absolute path (``~`` expanded): a relative one would depend on the working directory."""
    raw = _raw(name, environ)
    if raw is None:
        return None
    if "\x00" in raw:
        raise invalid_setting(name, raw, "an absolute path", "it holds a NUL character")
    path = Path(raw.strip()).expanduser()
    if not path.is_absolute():
        raise invalid_setting(name, raw, "an absolute path", "a relative path depends on the working directory")
    return path


def url_problem(value: str, schemes: Collection[str]) -> str | None:
    """Why ``value`` is not a URL with one of ``schemes`` and a host, or ``None`` when it is one (also
    for command-line options that take a URL)."""
    allowed = "a URL with a host, scheme " + " or ".join(schemes)
    text = value.strip()
    try:
        parsed = urlparse(text)
        host = parsed.hostname
        parsed.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        return f"{allowed} ({exc})"
    if parsed.scheme.lower() not in schemes or not host or any(c.isspace() or c == "\x00" for c in text):
        return allowed
    return None


def env_url(name: str, schemes: Collection[str], environ: Mapping[str, str]) -> str | None:
    """A URL with one of ``schemes`` and a host (``http://host:port/path``)."""
    raw = _raw(name, environ)
    if raw is None:
        return None
    problem = url_problem(raw, schemes)
    if problem is not None:
        raise invalid_setting(name, raw, problem)
    return raw.strip()


PREFIX: Final = "LOOM_OTEL_"
KNOWN: Final = frozenset(name for name in vars(env) if name.startswith(PREFIX))
"""Every ``LOOM_OTEL_*`` name loom-otel reads (``environment_variables``)."""
_HINTS: Final = {
    "REDACT": env.LOOM_OTEL_REASONING_TRANSCRIPT,
    "REDACTED": env.LOOM_OTEL_REASONING_TRANSCRIPT,
    "KEEP": env.LOOM_OTEL_REASONING_TRANSCRIPT,
    "STORE": env.LOOM_OTEL_REASONING_STORE,
    "JOURNAL": env.LOOM_OTEL_AUDIT_JOURNAL,
    "KEY": env.LOOM_OTEL_CHECKPOINT_KEY,
    "SUMMARIZED": env.LOOM_OTEL_REQUEST_READABLE,
    "HMAC": env.LOOM_OTEL_DIGEST,
}
"""Words of a misremembered name that say which variable was meant better than its spelling does
(``LOOM_OTEL_REDACT`` is spelled closest to ``LOOM_OTEL_DIGEST``)."""


def closest_known(name: str) -> str:
    """The known ``LOOM_OTEL_*`` name ``name`` most likely meant: one spelt nearly alike, else one a
    word of it hints at, else the one spelt closest."""
    known, upper = sorted(KNOWN), name.upper()
    typo = difflib.get_close_matches(upper, known, n=1, cutoff=0.9)
    hinted = [_HINTS[word] for word in upper.removeprefix(PREFIX).split("_") if word in _HINTS]
    return (typo or hinted or difflib.get_close_matches(upper, known, n=1, cutoff=0.0))[0]


def warn_unknown_names(environ: Mapping[str, str]) -> None:
    """One warning per process for each ``LOOM_OTEL_*`` variable set that loom-otel does not know (a
    misspelt name would otherwise be ignored in silence), naming the closest known one."""
    for name in environ:
        if name.startswith(PREFIX) and name not in KNOWN:
            warn(
                f"{name} is not a loom-otel variable and is ignored; did you mean {closest_known(name)}?",
                once=("unknown variable", name),
            )
