"""``loom-otel erase``: delete one execution's reasoning blobs (and digest key) from a store.

Idempotent: erasing again reports nothing removed and still exits 0. The journal is left as it is
(records keep refs and digests; later reads say ``erased``). Exit codes: 0 done, 1 the store failed,
2 a usage or configuration error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from loom_otel.audit._erase import erase_execution
from loom_otel.cli._audit import open_store
from loom_otel.cli._terminal import clean
from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import LoomOtelError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``erase``."""
    parser = subparsers.add_parser(
        "erase",
        help="erase one execution's reasoning from the store",
        description="Delete every reasoning blob (and the digest key) of one execution. The journal keeps "
        "its records, so the chain still verifies and reads report 'erased'. Running it again is harmless.",
    )
    parser.add_argument("--execution", required=True, help="execution id")
    parser.add_argument("--tenant", default=None, help="tenant the execution ran under (default: none)")
    parser.add_argument("--store", default=None, help=f"store URL (default: ${env.LOOM_OTEL_REASONING_STORE})")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        store = open_store(args.store)
    except LoomOtelError as exc:
        print(f"loom-otel erase: {exc}", file=err)
        return 2
    try:
        result = erase_execution(store, args.tenant, args.execution)
    except (LoomOtelError, OSError) as exc:
        print(f"loom-otel erase: the store failed ({type(exc).__name__}: {exc})", file=err)
        return 1
    if args.json:
        payload = {
            "execution_id": result.execution_id,
            "tenant": result.tenant,
            "blobs_removed": result.blobs_removed,
            "digest_key_removed": result.digest_key_removed,
        }
        print(json.dumps(payload), file=out)
        return 0
    who = f"execution {clean(result.execution_id)!r}" + (
        f" (tenant {clean(result.tenant)!r})" if result.tenant is not None else ""
    )
    if result.blobs_removed or result.digest_key_removed:
        key = "; digest key destroyed" if result.digest_key_removed else ""
        print(f"erased {result.blobs_removed} blob(s) of {who} from {store!r}{key}", file=out)
    else:
        print(f"nothing to erase for {who} in {store!r} (already erased, or nothing was captured)", file=out)
    return 0
