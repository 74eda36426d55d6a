"""``create_app``: the viewer's ASGI app (Starlette). Stateless: every answer comes from the capture
index, the journal or archive lines and the store, so any number of workers and hosts answer the same.

Routes: ``/`` and ``/executions/{execution_id}`` (HTML), ``/api/executions`` and
``/api/executions/{execution_id}`` (JSON; ``?tenant=``, ``?step=``, ``?offset=``, ``?limit=``),
``/reads`` and ``/api/reads`` (who read what, of the reads the reader may see: ``_who_read``; ``?reader=``,
``?principal=`` (whose captures), ``?execution=``, ``?part=``, ``?outcome=``, ``?tenant=``, ``?since=``,
``?until=``, paged),
``/signin`` / ``/signout`` (a browser's session as an HttpOnly cookie, ``_sessions``: never the token),
``/open?url=`` (a ``loom.reasoning.url`` given whole, as Jaeger UI's link patterns give it, redirected to
its page), ``/executions/{execution_id}/evidence`` (the evidence bundle of what the reader may read,
``_evidence``), and, with a ``hub``, the live view at ``/live`` (parts of calls in flight, streamed into the
execution page). Missing and forbidden answer the same 404; an unauthenticated request too. With
``hosts``, a request for any other host answers 421 (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import string
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from opentelemetry.sdk.trace.export import SpanExporter
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from loom_otel.audit._document import reading_document
from loom_otel.audit._index import ExecutionFilter, ListedExecution
from loom_otel.audit._standing import trusted_keys
from loom_otel.core.policy import ReadingPolicy
from loom_otel.core.runtime import OPEN_PATH, opened_path
from loom_otel.core.stores import FileReasoningStore, MemoryReasoningStore, ReasoningStore, TenantStores
from loom_otel.live._auth import TOKEN_COOKIE, Authenticator, authenticate
from loom_otel.live._feed import Viewer
from loom_otel.live._hub import LiveReasoningHub
from loom_otel.viewer._archive import RemoteArchive, is_remote
from loom_otel.viewer._evidence import evidence_bundle
from loom_otel.viewer._gone import Gone, gone_parts
from loom_otel.viewer._html import (
    FILTERS,
    READS_FILTERS,
    execution_html,
    index_html,
    not_found_html,
    reads_html,
    signin_html,
)
from loom_otel.viewer._reading import PAGE_EXECUTIONS, PAGE_PARTS, Evidence, ExecutionPage, list_page, read_page
from loom_otel.viewer._reads import ReadLog
from loom_otel.viewer._sessions import SESSION_COOKIE, SESSION_SECONDS, Sessions
from loom_otel.viewer._threads import QUICK, SLOW, PriorityThreads
from loom_otel.viewer._who_read import ListedRead, PartReads, ReadsFilter, ReadsJournal, part_reads, reads_page

__all__ = ["create_app"]

_SECURITY_HEADERS: Final = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_MAX_FORM: Final = 16384
_ALL_TENANTS: Final = 1 << 30
"""``list_page``'s limit when looking for every tenant's execution of one id (no cut)."""
_MAX_LIST: Final = 500
_SQLITE_MAX: Final = (1 << 63) - 1
_PUBLIC_HEX: Final = 64
"""Hex digits of a raw Ed25519 public key."""


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _time(query: QueryParams, name: str) -> int | None:
    """A time filter (ISO 8601, UTC unless it says) as Unix ns; ``ValueError`` in words when it is not one."""
    value = (query.get(name) or "").strip()
    if not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name}: {value!r} is not a time; give one as 2026-12-01 or 2026-12-01T09:00") from None
    when = when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
    return max(-_SQLITE_MAX, min(int(when.timestamp() * 1e9), _SQLITE_MAX))  # years past 2262 too


def _listing_query(query: QueryParams) -> tuple[ExecutionFilter, int, int]:
    """The listing's filters and window from a query (``ValueError`` in words: a bad time range)."""
    since, until = _time(query, "since"), _time(query, "until")
    if since is not None and until is not None and until < since:
        raise ValueError("until: the time range ends before it starts")
    tenant = query.get("tenant") or None
    keep = ExecutionFilter(tenant, tenant is None, since, until, (query.get("q") or "").strip())
    offset = max(0, _int(query.get("offset"), 0))
    limit = max(1, min(_int(query.get("limit"), PAGE_EXECUTIONS), _MAX_LIST))
    return keep, offset, limit


def _reads_query(query: QueryParams) -> tuple[ReadsFilter, int, int]:
    """The reads page's filters and window from a query (``ValueError`` in words: a bad time range)."""
    since, until = _time(query, "since"), _time(query, "until")
    if since is not None and until is not None and until < since:
        raise ValueError("until: the time range ends before it starts")
    tenant = query.get("tenant") or None
    text = {name: (query.get(name) or "").strip() for name in ("reader", "execution", "part", "outcome", "principal")}
    keep = ReadsFilter(
        text["reader"],
        text["execution"],
        tenant,
        tenant is None,
        text["part"],
        text["outcome"],
        since,
        until,
        text["principal"],
    )
    offset = max(0, _int(query.get("offset"), 0))
    limit = max(1, min(_int(query.get("limit"), PAGE_EXECUTIONS), _MAX_LIST))
    return keep, offset, limit


def _read_document(read: ListedRead) -> dict[str, object]:
    parts = [{"step_id": p.step_id, "attempt": p.attempt, "index": p.index, "kind": p.kind} for p in read.parts]
    return {
        "time_unix_nano": read.time,
        "reader": read.reader,
        "tenant": read.tenant,
        "execution_id": read.execution_id,
        "ref": read.ref,
        "digest": read.digest,
        "outcome": read.outcome,
        "parts": parts,
        "origin": read.origin,
        "seq": read.seq,
    }


def _cross_site(request: Request) -> bool:
    """A browser sent this from another site (a form or link elsewhere): ``Sec-Fetch-Site`` says so, or,
    where a browser sends none, an ``Origin`` that is not this one. Signing in and out refuse it, so no
    page elsewhere signs a reader in as someone else (login CSRF) or out. Clients that are not browsers
    send neither header and are not affected."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site not in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return False
    return origin != f"{request.url.scheme}://{request.url.netloc}"


def _safe_next(value: str | None) -> str:
    """Only a path on this site (never ``//host`` or a scheme): no open redirect through sign-in."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    if any(c.isspace() or not c.isprintable() for c in value):  # a browser drops tabs: "/\t/host" is "//host"
        return "/"
    return value


class _Viewer:
    def __init__(  # noqa: PLR0917 - one private constructor, called once
        self,
        evidence: Evidence,
        store: ReasoningStore,
        policy: ReadingPolicy,
        authenticator: Authenticator,
        reads: ReadLog,
        trace_url: str | None,
        live: bool,
        secure_cookie: bool,
        sessions: Sessions,
        threads: int | None,
    ) -> None:
        self.evidence = evidence
        self.store = store
        self.policy = policy
        self.authenticator = authenticator
        self.reads = reads
        self.journal = ReadsJournal(reads.directory)
        self.trace_url = trace_url
        self.live = live
        self.secure_cookie = secure_cookie
        self.sessions = sessions
        self.threads = PriorityThreads(threads or _reading_threads(store, evidence))

    async def identify(self, connection: HTTPConnection) -> Viewer | None:
        """The reader a request proves: by the authenticator (a bearer token), else by a session cookie
        whose token still proves its principal (``TokensFile.holds``, asked on every request)."""
        viewer = await authenticate(self.authenticator, connection)
        if viewer is not None and viewer.principal:
            return viewer
        value = connection.cookies.get(SESSION_COOKIE)
        if not value:
            return None
        holds = getattr(self.authenticator, "holds", None)
        principal = await asyncio.to_thread(self.sessions.principal, value, holds if callable(holds) else None)
        return None if principal is None else Viewer(principal)

    async def reader(self, connection: HTTPConnection) -> str | None:
        viewer = await self.identify(connection)
        return viewer.principal if viewer is not None else None

    def _not_found(self, request: Request, reader: str | None, *, html: bool) -> Response:
        if html:
            path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return HTMLResponse(not_found_html(path, reader=reader), status_code=404, headers=_SECURITY_HEADERS)
        return JSONResponse({"error": "not found"}, status_code=404, headers=_SECURITY_HEADERS)

    # -- executions --------------------------------------------------------------------------------
    async def _listing(self, request: Request, reader: str) -> tuple[list[ListedExecution], int, int, int]:
        """A page of the listing the query asks for: (rows, total, offset, limit); ``ValueError``: a
        filter that is not valid, said in words."""
        keep, offset, limit = _listing_query(request.query_params)
        rows, total = await asyncio.to_thread(
            list_page, self.evidence, reader, self.policy, keep, offset=offset, limit=limit
        )
        return rows, total, offset, limit

    async def _gone(self, reader: str, rows: list[ListedExecution]) -> dict[tuple[str, str | None], Gone]:
        """The erased and missing parts of each execution of the page (``_gone``)."""
        return await asyncio.to_thread(gone_parts, self.evidence, self.store, reader, self.policy, rows)

    async def index(self, request: Request) -> Response:
        reader = await self.reader(request)
        if reader is None:
            return self._not_found(request, None, html=True)
        filters = {name: request.query_params.get(name) or "" for name in FILTERS}
        try:
            rows, total, offset, limit = await self._listing(request, reader)
        except ValueError as error:
            body = index_html([], reader=reader, total=0, filters=filters, error=str(error))
            return HTMLResponse(body, status_code=400, headers=_SECURITY_HEADERS)
        gone = await self._gone(reader, rows)
        body = index_html(rows, reader=reader, total=total, offset=offset, limit=limit, filters=filters, gone=gone)
        return HTMLResponse(body, headers=_SECURITY_HEADERS)

    async def api_index(self, request: Request) -> Response:
        reader = await self.reader(request)
        if reader is None:
            return self._not_found(request, None, html=False)
        try:
            rows, total, offset, limit = await self._listing(request, reader)
        except ValueError as error:
            return JSONResponse({"error": str(error)}, status_code=400, headers=_SECURITY_HEADERS)
        gone = await self._gone(reader, rows)
        body = [
            {
                "execution_id": r.execution_id,
                "tenant": r.tenant,
                "calls": r.calls,
                "parts": r.parts,
                "first_unix_nano": r.first,
                "last_unix_nano": r.last,
                "principals": list(r.principals),
                "owners": list(r.owners),
                "providers": list(r.providers),
                "models": list(r.models),
                "erased": gone[(r.execution_id, r.tenant)].erased,
                "missing": gone[(r.execution_id, r.tenant)].missing,
            }
            for r in rows
        ]
        headers = {**_SECURITY_HEADERS, "X-Total-Count": str(total), "X-Offset": str(offset), "X-Limit": str(limit)}
        return JSONResponse(body, headers=headers)

    # -- who read what -----------------------------------------------------------------------------
    async def _reads_listing(self, request: Request, reader: str) -> tuple[list[ListedRead], int, int, int]:
        keep, offset, limit = _reads_query(request.query_params)
        rows, total = await asyncio.to_thread(
            lambda: reads_page(
                self.evidence, self.journal.reads(keep.equal()), reader, self.policy, keep, offset=offset, limit=limit
            )
        )
        return rows, total, offset, limit

    async def reads_index(self, request: Request) -> Response:
        reader = await self.reader(request)
        if reader is None:
            return self._not_found(request, None, html=True)
        filters = {name: request.query_params.get(name) or "" for name in READS_FILTERS}
        try:
            rows, total, offset, limit = await self._reads_listing(request, reader)
        except ValueError as error:
            body = reads_html([], reader=reader, total=0, filters=filters, error=str(error))
            return HTMLResponse(body, status_code=400, headers=_SECURITY_HEADERS)
        body = reads_html(rows, reader=reader, total=total, offset=offset, limit=limit, filters=filters)
        return HTMLResponse(body, headers=_SECURITY_HEADERS)

    async def api_reads(self, request: Request) -> Response:
        reader = await self.reader(request)
        if reader is None:
            return self._not_found(request, None, html=False)
        try:
            rows, total, offset, limit = await self._reads_listing(request, reader)
        except ValueError as error:
            return JSONResponse({"error": str(error)}, status_code=400, headers=_SECURITY_HEADERS)
        headers = {**_SECURITY_HEADERS, "X-Total-Count": str(total), "X-Offset": str(offset), "X-Limit": str(limit)}
        return JSONResponse([_read_document(r) for r in rows], headers=headers)

    def _part_reads(self, reader: str, page: ExecutionPage) -> Mapping[str, PartReads]:
        """Who read each part of the page (this read included: it was recorded before)."""
        execution_id, tenant = page.reading.execution_id, page.reading.tenant
        return part_reads(
            self.evidence,
            self.journal.tallies_of(execution_id, tenant, including=page.recorded),
            reader,
            self.policy,
            execution_id=execution_id,
            tenant=tenant,
        )

    # -- one execution -----------------------------------------------------------------------------
    async def _choices(self, request: Request, reader: str | None) -> list[ListedExecution]:
        """Without ``?tenant=``: the executions of this id the reader may read, under any tenant (one is
        shown as if its tenant had been named; several are listed to choose from)."""
        if reader is None or request.query_params.get("tenant"):
            return []
        execution_id = request.path_params["execution_id"]
        keep = ExecutionFilter(execution_id=execution_id)  # its summary rows alone, by the index on the id
        rows, _ = await asyncio.to_thread(list_page, self.evidence, reader, self.policy, keep, limit=_ALL_TENANTS)
        return rows

    def _page(self, request: Request, reader: str, choices: list[ListedExecution]) -> ExecutionPage | None:
        """The page the request asks for, its reads recorded (evidence before the answer leaves: a
        journal that cannot be written fails the read); ``None``: nothing the reader may read."""
        execution_id = request.path_params["execution_id"]
        query = request.query_params
        tenant = query.get("tenant") or (choices[0].tenant if choices else None)
        page = read_page(
            self.evidence,
            self.store,
            reader,
            self.policy,
            execution_id=execution_id,
            tenant=tenant,
            step_id=query.get("step") or None,
            offset=_int(query.get("offset"), 0),
            limit=_int(query.get("limit"), PAGE_PARTS),
        )
        if page is None:
            self.reads.refused(reader, tenant, execution_id)
            return None
        recorded = self.reads.parts(reader, tenant, execution_id, page.reading.parts)
        return dataclasses.replace(page, recorded=recorded)

    def _execution_html(self, request: Request, reader: str, choices: list[ListedExecution]) -> Response:
        """``/executions/{id}``, read, recorded and rendered on one worker thread (not the event loop's)."""
        page = self._page(request, reader, choices)
        if page is None:
            return self._not_found(request, reader, html=True)
        body = execution_html(
            page,
            reader=reader,
            trace_url=self.trace_url,
            step=request.query_params.get("step") or None,
            live=self.live,
            reads=self._part_reads(reader, page),
            trusted=bool(self.evidence.trust),
        )
        return HTMLResponse(body, headers=_SECURITY_HEADERS)

    def _execution_json(self, request: Request, reader: str, choices: list[ListedExecution]) -> Response:
        """``/api/executions/{id}``, as ``_execution_html``."""
        page = self._page(request, reader, choices)
        if page is None:
            return self._not_found(request, reader, html=False)
        document = reading_document(page.reading, text=True)
        _add_reads(document, self._part_reads(reader, page))
        document["page"] = {
            "offset": page.offset,
            "limit": page.limit,
            "total_parts": page.total_parts,
            "next_offset": page.next_offset,
            "truncated": page.truncated,
        }
        return JSONResponse(document, headers=_SECURITY_HEADERS)

    async def _one_execution(self, request: Request, *, html: bool) -> Response:
        """``/executions/{id}`` (``html``) or ``/api/executions/{id}``: the tenants to choose from when
        several hold the id, else the page, read and rendered on one of the viewer's threads."""
        reader = await self.reader(request)
        if reader is None:
            return self._not_found(request, reader, html=html)
        choices = await self._choices(request, reader)
        if len(choices) > 1:
            if html:
                return HTMLResponse(index_html(choices, reader=reader, total=len(choices)), headers=_SECURITY_HEADERS)
            listed = [{"execution_id": r.execution_id, "tenant": r.tenant} for r in choices]
            body = {"error": "several tenants hold this execution: pass ?tenant=", "executions": listed}
            return JSONResponse(body, status_code=300, headers=_SECURITY_HEADERS)
        render = self._execution_html if html else self._execution_json
        return await self.threads.run(_kind(request), render, request, reader, choices)

    async def execution(self, request: Request) -> Response:
        return await self._one_execution(request, html=True)

    async def api_execution(self, request: Request) -> Response:
        return await self._one_execution(request, html=False)

    async def evidence_download(self, request: Request) -> Response:
        """``/executions/{id}/evidence``: the bundle of what the reader may read (``_evidence``)."""
        reader = await self.reader(request)
        execution_id, tenant = request.path_params["execution_id"], request.query_params.get("tenant") or None
        bundle = None
        if reader is not None:
            bundle = await asyncio.to_thread(
                evidence_bundle, self.evidence, self.reads, self.store, self.policy, reader, execution_id, tenant
            )
            if bundle is None:
                await asyncio.to_thread(self.reads.refused, reader, tenant, execution_id)
        if bundle is None:
            return self._not_found(request, reader, html=False)
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in execution_id)[:80]
        disposition = {"Content-Disposition": f'attachment; filename="evidence-{name}.json"'}
        return JSONResponse(bundle, headers={**_SECURITY_HEADERS, **disposition})

    # -- signing in (browsers) ---------------------------------------------------------------------
    async def signin_form(self, request: Request) -> Response:
        return HTMLResponse(
            signin_html(_safe_next(request.query_params.get("next")), failed=False), headers=_SECURITY_HEADERS
        )

    async def signin(self, request: Request) -> Response:
        if _cross_site(request):
            return _refused_cross_site()
        body = await request.body()
        form = parse_qs(body[:_MAX_FORM].decode("utf-8", "replace"), max_num_fields=4)
        token = (form.get("token") or [""])[0].strip()
        next_path = _safe_next((form.get("next") or ["/"])[0])
        probe = _TokenProbe(request, token)
        viewer = await authenticate(self.authenticator, probe) if token else None
        if viewer is None or not viewer.principal:
            return HTMLResponse(signin_html(next_path, failed=True), status_code=401, headers=_SECURITY_HEADERS)
        response = RedirectResponse(next_path, status_code=303, headers=_SECURITY_HEADERS)
        response.set_cookie(
            SESSION_COOKIE,
            self.sessions.start(viewer.principal, token),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=self.secure_cookie,
        )
        response.delete_cookie(TOKEN_COOKIE)  # a cookie an earlier version set: it held the token itself
        return response

    async def signout(self, request: Request) -> Response:
        if _cross_site(request):
            return _refused_cross_site()
        value = request.cookies.get(SESSION_COOKIE)
        if value:
            await asyncio.to_thread(self.sessions.end, value)  # a replay of the cookie is refused from now on
        response = RedirectResponse("/", status_code=303, headers=_SECURITY_HEADERS)
        response.delete_cookie(SESSION_COOKIE)
        response.delete_cookie(TOKEN_COOKIE)
        return response

    async def script(self, request: Request) -> Response:
        text = resources.files("loom_otel.viewer").joinpath("live.js").read_text(encoding="utf-8")
        return Response(text, media_type="text/javascript", headers=_SECURITY_HEADERS)


def _add_reads(document: dict[str, Any], reads: Mapping[str, PartReads]) -> None:
    """Each part of an execution's document that the reader may see the reads of: ``reads`` (how many
    times, by whom)."""
    for step in document["steps"]:
        for attempt in step["attempts"]:
            for part in attempt["parts"]:
                seen = reads.get(part["ref"]) if part["ref"] else None
                if seen is not None:
                    part["reads"] = {"count": seen.count, "readers": list(seen.readers)}


async def _open(request: Request) -> Response:
    """``/open?url=<loom.reasoning.url>``: the link a backend makes by putting the whole URL into one
    template parameter (Jaeger UI percent-encodes every value it substitutes); it leads to the execution's
    page on this site, never elsewhere, and reads nothing itself."""
    target = opened_path(request.query_params.get("url") or "")
    if target is None:
        return JSONResponse({"error": "not a loom.reasoning.url"}, status_code=400, headers=_SECURITY_HEADERS)
    return RedirectResponse(target, status_code=303, headers=_SECURITY_HEADERS)


def _refused_cross_site() -> Response:
    return HTMLResponse(
        "<!doctype html><title>Refused</title><p>Sign in and out from this site's own pages.</p>",
        status_code=403,
        headers=_SECURITY_HEADERS,
    )


def _host_of(value: str) -> str | None:
    """The host name of a ``Host`` header (no port; IPv6 without brackets; lower case)."""
    try:
        return urlsplit(f"//{value}").hostname
    except ValueError:
        return None


class _OnlyHosts:
    """Answers only requests for ``hosts`` (their ``Host`` header); any other gets 421 (DNS rebinding:
    a page of another site whose name resolves to this server)."""

    def __init__(self, app: ASGIApp, hosts: Collection[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower().strip("[]") for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
            if _host_of(host) not in self.hosts:
                response = Response("misdirected request: not a host this server answers\n", status_code=421)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _TokenProbe(HTTPConnection):
    """The sign-in request as if it presented ``token`` as a bearer token (checked before the cookie)."""

    def __init__(self, request: Request, token: str) -> None:
        scope = dict(request.scope)
        headers = [(k, v) for k, v in scope.get("headers", []) if k not in (b"authorization", b"cookie")]
        scope["headers"] = [*headers, (b"authorization", f"Bearer {token}".encode())]
        super().__init__(scope)


def _kind(request: Request) -> int:
    """A read of one step is due sooner than a page (``_threads``)."""
    return QUICK if request.query_params.get("step") else SLOW


def _reading_threads(store: ReasoningStore, evidence: Evidence) -> int | None:
    """The reading threads a worker keeps by default: one when every read stays on this machine (blobs in a
    file or memory store, evidence in a local journal or archive): a read then takes the processor for all
    of its time, and threads would only share the interpreter, so a step read running beside pages would
    take as long as they do, while one thread takes the quick one first. ``None`` (``PriorityThreads``'
    default) when reads wait on the network (another store, an archive on S3): waited on side by side."""
    stores = store.every() if isinstance(store, TenantStores) else [store]
    local = all(isinstance(s, (FileReasoningStore, MemoryReasoningStore)) for s in stores)
    return 1 if local and evidence.remote is None else None


def _tenant_from_query(authenticator: Authenticator) -> Authenticator:
    """The live view's viewer: the authenticated principal, in the tenant the request asks for."""

    async def asked(connection: HTTPConnection) -> Viewer | None:
        viewer = await authenticate(authenticator, connection)
        if viewer is None:
            return None
        return Viewer(viewer.principal, connection.query_params.get("tenant") or None)

    return asked


def _hex_keys(trust: Iterable[str]) -> frozenset[str]:
    """``create_app(trust=...)``'s keys, each the hex of a raw Ed25519 public key (``load_public_key`` of a
    key file gives it); anything else is refused: a key that matches no signature would silently make
    every record ``unproven``, and every erased part read ``missing``."""
    keys = frozenset(k.strip().lower() for k in trust)
    for n, key in enumerate(sorted(keys), 1):
        if len(key) != _PUBLIC_HEX or any(c not in string.hexdigits for c in key):
            from loom_otel.core.exceptions import ReasoningConfigError

            raise ReasoningConfigError(
                f"trust: key {n} is not the hex of an Ed25519 public key (64 hex digits; load_public_key "
                "gives it from a key file, as serve --trust KEYFILE does)"
            )
    return keys


def create_app(
    source: str | Path,
    store: ReasoningStore,
    *,
    authenticator: Authenticator,
    reads_journal: str | Path,
    policy: ReadingPolicy | None = None,
    trace_url: str | None = None,
    hub: LiveReasoningHub | None = None,
    secure_cookie: bool = False,
    forward_to: SpanExporter | None = None,
    archive_options: dict[str, Any] | None = None,
    session_key: str | Path | None = None,
    hosts: Collection[str] | None = None,
    trust: Iterable[str] | None = None,
    threads: int | None = None,
) -> Starlette:
    """The viewer of the evidence in ``source`` (a journal directory or a collector ``file`` archive)
    and ``store``. ``authenticator`` proves the reader (``tokens_file_authenticator``,
    ``jwt_authenticator``, or ``header_authenticator`` behind a trusted proxy); ``policy`` names the
    auditors (default: principal and owner only); ``trace_url`` is the trace link template
    (``{trace_id}``); every read is recorded in ``reads_journal`` (this process's own origin); ``hub``
    (an in-process ``LiveReasoningHub``) streams the parts of calls in flight into the pages;
    ``forward_to`` (an OTLP exporter, say) receives the read records through a ``ChainedSpanExporter``
    on the reads journal, like captures. ``source`` may be an archive's fsspec URL (``s3://bucket/key``;
    ``archive_options``: the fsspec storage options, default from the environment). ``session_key``: the
    key file of browser sessions, shared by every worker (``None``: a key of this process alone);
    ``hosts``: the only ``Host`` names answered (``None``: any). ``trust``: the hex
    Ed25519 public keys whose signed checkpoints prove records (``None``: the public half of
    ``LOOM_OTEL_CHECKPOINT_KEY``, when set); each part shows its record's standing. ``threads``: the
    reading threads (``None``: one when every read stays on this machine, else CPUs + 4: ``_reading_threads``)."""
    keys = trusted_keys() if trust is None else _hex_keys(trust)
    if isinstance(source, str) and is_remote(source):
        remote = RemoteArchive(source, **(archive_options or {}))
        remote.check()
        evidence = Evidence(remote.sync(), remote, keys)
    else:
        evidence = Evidence(Path(source).expanduser().absolute(), trust=keys)
    if not evidence.source.exists():
        from loom_otel.core.exceptions import ReasoningConfigError

        raise ReasoningConfigError(f"no journal directory or collector archive at {str(evidence.source)!r}")
    reads = ReadLog(reads_journal, forward_to)
    view = _Viewer(
        evidence,
        store,
        policy or ReadingPolicy(),
        authenticator,
        reads,
        trace_url,
        hub is not None,
        secure_cookie,
        Sessions(session_key),
        threads,
    )
    routes: list[Route | Mount] = [
        Route("/", view.index, methods=["GET"]),
        # before the page's route, whose id may hold "/" (so ".../evidence" would be an id)
        Route("/executions/{execution_id:path}/evidence", view.evidence_download, methods=["GET"]),
        Route("/executions/{execution_id:path}", view.execution, methods=["GET"]),  # an id may hold "/"
        Route("/api/executions", view.api_index, methods=["GET"]),
        Route("/reads", view.reads_index, methods=["GET"]),
        Route("/api/reads", view.api_reads, methods=["GET"]),
        Route("/api/executions/{execution_id:path}", view.api_execution, methods=["GET"]),
        Route("/signin", view.signin_form, methods=["GET"]),
        Route("/signin", view.signin, methods=["POST"]),
        Route("/signout", view.signout, methods=["GET", "POST"]),
        Route(OPEN_PATH, _open, methods=["GET"]),
    ]
    if hub is not None:
        from loom_otel.live.asgi import create_app as live_app

        routes.append(Route("/static/live.js", view.script, methods=["GET"]))
        live = live_app(hub, store=store, source=evidence.source, authenticator=_tenant_from_query(view.identify))
        routes.append(Mount("/live", app=live))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            view.threads.close()
            reads.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.reads = reads
    app.state.threads = view.threads
    if hosts is not None:
        app.add_middleware(_OnlyHosts, hosts=hosts)
    return app
