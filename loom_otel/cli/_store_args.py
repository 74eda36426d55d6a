"""What several commands read from their arguments alike: the store (``--store`` or the environment), a
time (``--since``) and a count (``--limit``, ``--workers``, ``--threads``)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import time
from typing import Final

from loom_otel.core import environment_variables as env
from loom_otel.core.stores import ReasoningStore, store_from_uri

__all__ = ["at_least_one", "open_store", "parse_since", "store_url", "with_tenant_stores"]

_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d|w)")
_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def at_least_one(value: str) -> int:
    """A count argument: a whole number of at least 1 (anything else is a usage error)."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return number


def parse_since(value: str, *, now: float | None = None) -> int:
    """``--since``: an ISO 8601 time (UTC unless it carries an offset) or a duration ago (``90s``, ``15m``,
    ``1h``, ``2d``, ``1w``), as Unix ns. ``ArgumentTypeError`` (a usage error) for anything else."""
    duration = _DURATION.fullmatch(value.strip())
    if duration is not None:
        seconds = float(duration[1]) * _SECONDS[duration[2]]
        return int(((time.time() if now is None else now) - seconds) * 1e9)
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither an ISO 8601 time (2026-11-30T09:00Z) nor a duration (90s, 15m, 1h, 2d, 1w)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def store_url(url: str | None) -> str | None:
    """The store URL from the command line (a plain path there is taken from the working directory),
    else the environment (``None``: no store named)."""
    if url and "://" not in url and url not in ("memory:",):
        return os.path.abspath(os.path.expanduser(url))
    return url or os.environ.get(env.LOOM_OTEL_REASONING_STORE) or None


def open_store(url: str | None) -> ReasoningStore:
    """The store named on the command line or in the environment (``ReasoningConfigError`` if none)."""
    from loom_otel.core.exceptions import ReasoningConfigError

    url = store_url(url)
    if url is None:
        raise ReasoningConfigError(f"no reasoning store: pass --store URL or set {env.LOOM_OTEL_REASONING_STORE}")
    return store_from_uri(url, fsync=False)


def with_tenant_stores(store: ReasoningStore, policy: str | None = None) -> ReasoningStore:
    """``store`` with the tenants' own stores the policy file names (``policy``, else ``LOOM_OTEL_POLICY``;
    ``[tenants.<name>] store``): each tenant's blobs are read, erased and checked there only."""
    from loom_otel.core import stores
    from loom_otel.core.policy import load_policy, policy_from_env

    return stores.with_tenant_stores(store, load_policy(policy) if policy else policy_from_env())
