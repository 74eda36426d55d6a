"""Where the audit journal of a reader or an erasure is, when the caller names none: the rule
``instrument()`` follows (``LOOM_OTEL_AUDIT_JOURNAL``, else beside a file store, else the user's state
directory), so a tombstone lands in the journal the captures went to."""

from __future__ import annotations

import os
from pathlib import Path

from loom_otel.core import environment_variables as env
from loom_otel.core.runtime import default_journal_dir
from loom_otel.core.stores import FileReasoningStore, ReasoningStore

__all__ = ["journal_of"]


def journal_of(setting: str | os.PathLike[str] | None, store: ReasoningStore | None) -> Path:
    """``setting``, else ``LOOM_OTEL_AUDIT_JOURNAL``, else ``<store>/journal`` for a file store, else the
    default journal directory."""
    chosen = setting or os.environ.get(env.LOOM_OTEL_AUDIT_JOURNAL) or None
    if chosen is not None:
        return Path(chosen).expanduser()
    if isinstance(store, FileReasoningStore):
        return store.root / "journal"
    return default_journal_dir()
