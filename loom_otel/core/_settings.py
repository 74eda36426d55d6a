"""Reading one ``LOOM_OTEL_*`` value, one function per kind of value (boolean, choice, path, URL).

Each returns ``None`` when the variable is unset or blank (the caller then takes the default) and
raises ``ReasoningConfigError`` naming the variable, the value and what is allowed when it is set to
something else (DESIGN "Environment": never a silent fallback). A new variable is read through the
function of its kind, at ``instrument()`` or construction time, never at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlparse

from loom_otel.core.exceptions import ReasoningConfigError

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

__all__ = ["env_bool", "env_choice", "env_path", "env_url", "invalid_setting", "url_problem"]

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
