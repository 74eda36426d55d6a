"""``loom-otel serve``: the governed reasoning viewer (DESIGN "Who may read (live view and viewer)").

Reads a journal directory or a collector ``file`` archive and the store, and serves the pages and the
JSON API to readers proved by static tokens, JWTs, or a declared trusted proxy, each read recorded in
the viewer's own journal origin. ``--workers N`` starts N uvicorn workers; all answer the same;
``--threads N`` sets each one's reading threads (``viewer._threads``).
With a retention (``--retention``, else ``LOOM_OTEL_RETENTION``; a tenant's ``retention`` in the policy
file wins) and a journal directory, the command applies it as ``loom-otel retain`` does, at start and then
every ``--retain-every`` seconds, in its own process (not in each worker). It says where it serves once
the socket is listening. Exit codes: 1 the address cannot be listened on, 2 a usage or configuration
error (among them: the ``live`` extra is not installed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from loom_otel.cli._store_args import at_least_one
from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import LoomOtelError, ReasoningConfigError
from loom_otel.core.runtime import default_journal_dir, default_session_key

if TYPE_CHECKING:
    import uvicorn

__all__ = ["register", "run"]

EXIT_USAGE: Final = 2
EXIT_LISTEN: Final = 1
APP: Final = "loom_otel.viewer._settings:app_from_environment"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve recorded reasoning to the readers the policy admits (pages and JSON API)",
        description="A viewer of captured reasoning: / lists the executions the reader may see, "
        "/executions/ID shows steps, attempts and the text of each part as untrusted model output. "
        "Missing and forbidden answer the same 404; every read is a chained loom.reasoning.read record.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--journal", help="journal directory to serve")
    where.add_argument(
        "--archive", help="collector file exporter output (OTLP JSON lines) to serve: a path or s3://bucket/key"
    )
    parser.add_argument("--store", default=None, help=f"store URL (default: ${env.LOOM_OTEL_REASONING_STORE})")
    parser.add_argument("--policy", default=None, help=f"reading policy TOML (default: ${env.LOOM_OTEL_POLICY})")
    auth = parser.add_argument_group("authentication (exactly one)")
    auth.add_argument("--tokens", default=None, metavar="FILE", help="static tokens, TOML [tokens] principal = token")
    auth.add_argument("--jwks", default=None, metavar="FILE|URL", help="JWT signing keys (JWKS) of the issuer")
    auth.add_argument("--issuer", default=None, help="required JWT issuer (iss)")
    auth.add_argument("--audience", default=None, help="required JWT audience (aud)")
    auth.add_argument("--principal-claim", default="sub", help="JWT claim naming the principal (default: sub)")
    auth.add_argument(
        "--trusted-proxy",
        action="store_true",
        help="take X-Loom-Principal from a proxy that authenticates every request (warned at startup)",
    )
    parser.add_argument(
        "--trace-url",
        default=None,
        metavar="TEMPLATE",
        help="link to a trace in the tracing backend, e.g. http://localhost:16686/trace/{trace_id}",
    )
    parser.add_argument(
        "--reads-journal",
        default=None,
        metavar="DIR",
        help="journal that records every read (default: the served journal; with --archive, the user's state "
        "directory)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8377, help="port (default: 8377)")
    parser.add_argument("--workers", type=at_least_one, default=1, help="uvicorn worker processes (default: 1)")
    parser.add_argument(
        "--threads",
        type=at_least_one,
        default=None,
        metavar="N",
        help="reading threads per worker (default: 1 when every read stays on this machine, a file store and a "
        "local journal or archive: reads then take the processor, and one thread serves the quick ones first; "
        "else CPUs + 4, to wait on the network side by side)",
    )
    parser.add_argument(
        "--forward",
        action="store_true",
        help="forward the read records like captures, through the chained exporter "
        f"(to ${env.LOOM_OTEL_CHAIN_INNER}, default OTLP over HTTP)",
    )
    parser.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="KEYFILE",
        help="a public (or private) key file whose signed checkpoints prove records (repeatable; one per origin "
        f"or a deployment key from `loom-otel keygen`); ${env.LOOM_OTEL_CHECKPOINT_KEY}'s key is trusted too. "
        "Each part shows its standing: signed, chained or unproven; an unproven tombstone never reads erased",
    )
    parser.add_argument("--secure-cookie", action="store_true", help="mark the sign-in cookie Secure (HTTPS)")
    parser.add_argument(
        "--public-url",
        default=None,
        metavar="URL",
        help=f"where readers reach the viewer (default: ${env.LOOM_OTEL_VIEWER_URL}); only its host is answered "
        "(and loopback names when bound to loopback); required with --trusted-proxy on other addresses",
    )
    parser.add_argument(
        "--session-key",
        default=None,
        metavar="FILE",
        help="key file of browser sessions, shared by the workers (default: viewer-session.key in the user's "
        "state directory; made when absent)",
    )
    parser.add_argument(
        "--retention",
        default=None,
        help=f"erase what is older (30d, 12h, none; default: ${env.LOOM_OTEL_RETENTION}); needs --journal",
    )
    parser.add_argument(
        "--retain-every", type=float, default=3600.0, metavar="SECONDS", help="how often (default: 3600)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    from loom_otel.viewer._settings import SETTINGS_VARIABLE, ServeSettings

    store = args.store or os.environ.get(env.LOOM_OTEL_REASONING_STORE)
    if not store:
        print(f"loom-otel serve: name the store (--store or ${env.LOOM_OTEL_REASONING_STORE})", file=err)
        return EXIT_USAGE
    from loom_otel.viewer._archive import is_remote

    given = args.journal or args.archive
    source = given if is_remote(given) else str(Path(given).expanduser().absolute())
    reads = args.reads_journal or (source if args.journal else str(default_journal_dir()))
    settings = ServeSettings(
        source=source,
        store=store,
        reads_journal=str(Path(reads).expanduser().absolute()),
        policy=args.policy or os.environ.get(env.LOOM_OTEL_POLICY) or None,
        tokens=args.tokens,
        jwks=args.jwks,
        issuer=args.issuer,
        audience=args.audience,
        principal_claim=args.principal_claim,
        trusted_proxy=args.trusted_proxy,
        trace_url=args.trace_url,
        secure_cookie=args.secure_cookie,
        forward=args.forward,
        session_key=str(Path(args.session_key or default_session_key()).expanduser().absolute()),
        public_url=args.public_url or os.environ.get(env.LOOM_OTEL_VIEWER_URL) or None,
        bind=args.host,
        trust=tuple(str(Path(k).expanduser().absolute()) for k in args.trust),
        threads=args.threads,
    )
    try:
        settings.check()
        settings.authenticator()  # a trusted proxy warns here, once, at startup
    except (LoomOtelError, OSError) as exc:
        print(f"loom-otel serve: {exc}", file=err)
        return EXIT_USAGE
    try:
        retaining = _retention(args, source, store, err)
    except LoomOtelError as exc:
        print(f"loom-otel serve: {exc}", file=err)
        return EXIT_USAGE
    if retaining is not None:
        retaining.start()
    os.environ[SETTINGS_VARIABLE] = settings.to_environment()
    try:
        import starlette  # noqa: F401 - the viewer's web framework, with uvicorn the 'live' extra
        import uvicorn
    except ImportError as exc:
        print(f"loom-otel serve: {exc.name} is not installed: pip install 'loom-otel[live]'", file=err)
        return EXIT_USAGE
    server_settings = {"app": APP, "factory": True, "log_level": "warning", "access_log": False}
    from loom_otel.cli._serve_workers import bound_port, serve_workers

    try:  # the port held from here on (``--port 0``: the one chosen is announced)
        held, port = bound_port(args.host, args.port)
    except OSError as exc:
        print(f"loom-otel serve: cannot listen on http://{args.host}:{args.port}/: {exc.strerror or exc}", file=err)
        return EXIT_LISTEN
    where = f"http://{args.host}:{port}/"
    announcement = f"loom-otel serve: {where} ({source})"
    with held:
        if args.workers > 1:  # each worker listens on a socket of its own on the port (_serve_workers)
            failed = serve_workers(
                server_settings, args.host, port, args.workers, lambda: print(announcement, file=out, flush=True)
            )
        else:
            server = uvicorn.Server(uvicorn.Config(**server_settings))  # type: ignore[arg-type]
            failed = asyncio.run(_serve_announced(server, held, announcement, out)) is not None
    if failed:  # the app did not start (uvicorn logged why)
        print(f"loom-otel serve: could not start on {where} (see above)", file=err)
        return EXIT_LISTEN
    return 0


async def _serve_announced(
    server: uvicorn.Server, sock: socket.socket, announcement: str, out: TextIO
) -> SystemExit | None:
    """Serve on ``sock``; ``announcement`` is printed once it is listening. The exit uvicorn took when it
    could not start (it logs why), else ``None``."""

    async def serve() -> SystemExit | None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit as exc:
            return exc if exc.code not in {0, None} else None
        return None

    serving = asyncio.ensure_future(serve())
    while not server.started and not serving.done():
        await asyncio.sleep(0.05)
    if server.started:
        print(announcement, file=out, flush=True)
    return await serving


def _retention(args: argparse.Namespace, source: str, store: str, err: TextIO) -> threading.Thread | None:
    """The thread applying the retention while the viewer runs (``None``: no retention is set)."""
    from loom_otel.audit._retention import apply_retention
    from loom_otel.cli._retain import retention_settings
    from loom_otel.cli._store_args import open_store, with_tenant_stores

    default, tenants = retention_settings(args.retention, args.policy)
    if default is None and not tenants:
        return None
    if not args.journal:
        raise ReasoningConfigError("a retention is applied to a journal directory: serve --journal DIR")
    if args.retain_every <= 0:
        raise ReasoningConfigError(f"--retain-every={args.retain_every} is not a positive number of seconds")
    opened = with_tenant_stores(open_store(store), args.policy)

    def retain() -> None:
        while True:
            try:
                done = apply_retention(
                    source, opened, default=default, tenants=tenants, journal=source, local=not args.forward
                )
                if done:
                    print(f"loom-otel serve: retention erased {len(done)} execution(s)", file=err, flush=True)
            except Exception as exc:  # the viewer keeps serving; the next round tries again
                print(f"loom-otel serve: retention failed ({type(exc).__name__}: {exc})", file=err, flush=True)
            time.sleep(args.retain_every)

    return threading.Thread(target=retain, name="loom-otel-retention", daemon=True)
