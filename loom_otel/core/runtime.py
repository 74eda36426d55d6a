"""Process plumbing, public face for the parts built on core (the chained exporter, live, the viewer, the CLI):
the runtime and its default directories, renewal after fork, flushing, zero-code detection, the warning and
callback shields, settings parsing, and the viewer's link paths."""

from __future__ import annotations

from loom_otel.core._calls._content import ENV as MESSAGE_CONTENT_ENV
from loom_otel.core._calls._limits import warn_if_truncating
from loom_otel.core._evidence._durability import force_flush
from loom_otel.core._reading._private import private_directory
from loom_otel.core._reading._viewer_link import OPEN_PATH, execution_path, opened_path
from loom_otel.core._runtime._callbacks import logger, shielded
from loom_otel.core._runtime._config import (
    APP_NAME,
    Runtime,
    current_runtime,
    default_journal_dir,
    default_session_key,
    unusable_directory,
)
from loom_otel.core._runtime._fork import renew_after_fork, renew_module_after_fork
from loom_otel.core._runtime._memo import BoundedMemo
from loom_otel.core._runtime._providers import span_providers
from loom_otel.core._runtime._settings import env_bool, url_problem
from loom_otel.core._runtime._warnings import warn
from loom_otel.core._runtime._zero_code import refuse, under_zero_code

__all__ = [
    "APP_NAME",
    "BoundedMemo",
    "MESSAGE_CONTENT_ENV",
    "OPEN_PATH",
    "Runtime",
    "current_runtime",
    "default_journal_dir",
    "default_session_key",
    "env_bool",
    "execution_path",
    "force_flush",
    "logger",
    "opened_path",
    "private_directory",
    "refuse",
    "renew_after_fork",
    "renew_module_after_fork",
    "shielded",
    "span_providers",
    "under_zero_code",
    "unusable_directory",
    "url_problem",
    "warn",
    "warn_if_truncating",
]
