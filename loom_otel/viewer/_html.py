"""The viewer's pages, rendered on the server. Every value that came from a record or the store is
escaped (``html.escape``), and model text is shown in a ``<pre>`` labelled as untrusted model output:
text, never markup. The Content-Security-Policy (``app``) forbids inline script besides."""

from __future__ import annotations

import functools
import html
import time
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import quote, urlencode

from loom_otel.audit._index import ListedExecution
from loom_otel.audit._read import PartReading
from loom_otel.core.runtime import execution_path
from loom_otel.core.stores import describe
from loom_otel.viewer._gone import Gone
from loom_otel.viewer._reading import ExecutionPage
from loom_otel.viewer._who_read import ListedRead, PartReads

__all__ = [
    "FILTERS",
    "NO_TRUSTED_KEY",
    "READS_FILTERS",
    "UNTRUSTED_LABEL",
    "execution_html",
    "index_html",
    "not_found_html",
    "reads_html",
    "signin_html",
]

UNTRUSTED_LABEL: Final = "Untrusted model output: shown as text, never follow it as instructions"
NO_TRUSTED_KEY: Final = (
    "No checkpoint key is trusted (serve --trust KEYFILE): every record here is unproven, and a part whose "
    "text was erased reads missing, as its tombstone is not proven either."
)
_STYLE: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222;padding:0 1em}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left}
pre.untrusted{white-space:pre-wrap;background:#fff8e6;border:1px solid #e0b050;padding:.6em;margin:.2em 0 1em}
.label{font-size:12px;color:#8a5a00;font-weight:600}.muted{color:#777}code{font-size:12px}
.error{color:#a00;font-weight:600}.erasure{color:#8a2a00;font-size:12px}.layout{font-style:italic}
form label{display:inline-block;white-space:nowrap;margin:0 .4em .3em 0}
nav a{margin-right:1em}.step{margin-top:1.5em}.live{border-left:3px solid #48a;padding-left:.6em}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(ns: int) -> str:
    return _second(ns // 1_000_000_000)


@functools.lru_cache(maxsize=1024)
def _second(seconds: int) -> str:
    """A second as pages show it, UTC (the calls of a page share few: each made once)."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(seconds))


def _page(title: str, body: str, *, reader: str | None, here: str, scripts: Sequence[str] = ()) -> str:
    """A page; ``here``: its own path and query, where the top bar's sign-in link returns."""
    who = (
        f'signed in as <b>{_e(reader)}</b> · <a href="/signout">sign out</a>'
        if reader
        else f'<a href="/signin?{_e(urlencode({"next": here}))}">sign in</a>'
    )
    tags = "".join(f'<script src="{_e(s)}" defer></script>' for s in scripts)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)} · loom-otel</title>'
        f'<style>{_STYLE}</style>{tags}</head><body><nav><a href="/">executions</a><a href="/reads">reads</a>'
        f'<span class="muted">{who}</span></nav><h1>{_e(title)}</h1>{body}</body></html>'
    )


def _execution_href(execution_id: str, tenant: str | None, **query: str) -> str:
    params = {**({"tenant": tenant} if tenant is not None else {}), **query}
    return execution_path(execution_id) + (f"?{urlencode(params)}" if params else "")


FILTERS: Final = ("q", "tenant", "since", "until")
"""The listing's filters (query parameters), kept by its paging links and shown back escaped."""


def _names(values: Sequence[str]) -> str:
    return _e(", ".join(values)) if values else '<span class="muted">-</span>'


def index_html(
    rows: Sequence[ListedExecution],
    *,
    reader: str,
    total: int,
    offset: int = 0,
    limit: int = 0,
    filters: Mapping[str, str] | None = None,
    error: str | None = None,
    gone: Mapping[tuple[str, str | None], Gone] | None = None,
) -> str:
    """The executions the reader may read, with the filters that chose them and where the page is;
    ``gone``: per (execution, tenant), its erased and missing parts."""
    gone = gone or {}
    kept = {k: v for k, v in (filters or {}).items() if k in FILTERS and v}
    labels = {"q": "search", "tenant": "tenant", "since": "from (UTC)", "until": "to (UTC)"}
    hints = {"q": "execution, trace, principal or model", "since": "2026-12-01T09:00", "until": "2026-12-08"}
    form = _filter_form("/", FILTERS, kept, labels=labels, hints=hints, error=error)
    if not rows:
        body = '<p class="muted">No execution holds reasoning you may read.</p>'
    else:
        lines = "".join(
            f"<tr><td>{_e(_when(r.first))}</td><td>{_e(_when(r.last))}</td>"
            f'<td><a href="{_e(_execution_href(r.execution_id, r.tenant))}"><code>{_e(r.execution_id)}</code></a></td>'
            f"<td>{_names(r.principals)}</td><td>{_names(r.owners)}</td><td>{_e(r.tenant or '-')}</td>"
            f"<td>{_names(r.providers)}</td><td>{_names(r.models)}</td><td>{r.calls}</td><td>{r.parts}</td>"
            f"{_gone_cells(gone.get((r.execution_id, r.tenant)))}</tr>"
            for r in rows
        )
        body = (
            "<table><thead><tr><th>first capture</th><th>last capture</th><th>execution</th><th>principal</th>"
            "<th>owner</th><th>tenant</th><th>provider</th><th>model</th><th>calls</th><th>parts</th>"
            f"<th>erased</th><th>missing</th></tr></thead><tbody>{lines}</tbody></table>"
        )
    nav = _paging("executions", "/", kept, offset=offset, limit=limit, shown=len(rows), total=total)
    return _page("Executions", form + body + nav, reader=reader, here="/")


def _gone_cells(gone: Gone | None) -> str:
    if gone is None:
        return '<td class="erased muted">-</td><td class="missing muted">-</td>'
    missing = f'<b class="error">{gone.missing}</b>' if gone.missing else "0"
    return f'<td class="erased">{gone.erased}</td><td class="missing">{missing}</td>'


def _paging(noun: str, path: str, kept: Mapping[str, str], *, offset: int, limit: int, shown: int, total: int) -> str:
    """Where a listing's page is, of how many, and the links to the pages beside it (its filters kept)."""
    window = f"{offset + 1}-{offset + shown}" if shown else "0"
    nav = [f'<span class="paging">{noun} {window} of {total}</span>']
    if offset > 0:
        back = urlencode({**kept, "offset": max(0, offset - limit)})
        nav.append(f'<a rel="prev" href="{path}?{_e(back)}">previous</a>')
    if limit and offset + shown < total:
        nav.append(f'<a rel="next" href="{path}?{_e(urlencode({**kept, "offset": offset + limit}))}">next</a>')
    return f"<p>{' · '.join(nav)}</p>"


def _filter_form(
    path: str,
    names: Sequence[str],
    kept: Mapping[str, str],
    *,
    labels: Mapping[str, str],
    hints: Mapping[str, str],
    error: str | None,
) -> str:
    """A listing's filters as a GET form, each shown back escaped, and the error a bad one made."""
    fields = " ".join(
        f'<label>{labels[name]} <input name="{name}" value="{_e(kept.get(name, ""))}" '
        f'placeholder="{_e(hints.get(name, ""))}"></label>'
        for name in names
    )
    form = f'<form method="get" action="{path}">{fields} <button type="submit">filter</button></form>'
    if error:
        form += f'<p class="error" role="alert">{_e(error)}</p>'
    return form


READS_FILTERS: Final = ("reader", "principal", "execution", "part", "outcome", "tenant", "since", "until")
"""The reads page's filters (query parameters), kept by its paging links and shown back escaped."""


def _part_name(read: ListedRead) -> str:
    """Where the part read is (each place of a text several parts share), else its ref, else ``-``."""
    if not read.parts:
        return '<span class="muted">-</span>' if not read.ref else f"<code>{_e(read.ref[:24])}</code>"
    return "<br>".join(
        f"step <code>{_e(p.step_id)}</code> #{p.attempt} part {p.index} ({_e(p.kind)})" for p in read.parts
    )


def reads_html(
    rows: Sequence[ListedRead],
    *,
    reader: str,
    total: int,
    offset: int = 0,
    limit: int = 0,
    filters: Mapping[str, str] | None = None,
    error: str | None = None,
) -> str:
    """Who read what, of the reads the reader may see: reader, part, outcome and time, newest first."""
    kept = {k: v for k, v in (filters or {}).items() if k in READS_FILTERS and v}
    labels = {name: name for name in READS_FILTERS} | {"principal": "captures of"}
    labels |= {"since": "from (UTC)", "until": "to (UTC)"}
    hints = {
        "principal": "whose captures",
        "part": "ref or digest",
        "outcome": "ok, erased, not-found",
        "since": "2026-12-01T09:00",
    }
    form = _filter_form("/reads", READS_FILTERS, kept, labels=labels, hints=hints, error=error)
    if not rows:
        body = '<p class="muted">No read you may see.</p>'
    else:
        lines = "".join(
            f"<tr><td>{_e(_when(r.time))}</td><td>{_e(r.reader)}</td>"
            f'<td><a href="{_e(_execution_href(r.execution_id, r.tenant))}"><code>{_e(r.execution_id)}</code></a></td>'
            f'<td>{_part_name(r)}</td><td class="outcome">{_e(r.outcome)}</td><td>{_e(r.tenant or "-")}</td></tr>'
            for r in rows
        )
        body = (
            "<table><thead><tr><th>time</th><th>reader</th><th>execution</th><th>part</th><th>outcome</th>"
            f"<th>tenant</th></tr></thead><tbody>{lines}</tbody></table>"
        )
    nav = _paging("reads", "/reads", kept, offset=offset, limit=limit, shown=len(rows), total=total)
    here = "/reads" + (f"?{urlencode(kept)}" if kept else "")
    return _page("Reads", form + body + nav, reader=reader, here=here)


def _reads_cell(reads: PartReads | None) -> str:
    if reads is None:
        return '<td class="reads muted">-</td>'
    times = "once" if reads.count == 1 else f"{reads.count} times"
    return f'<td class="reads">{times} by {_e(", ".join(reads.readers))}</td>'


def _erasure(part: PartReading) -> str:
    """When, by whom and why an erased part was erased, and how far its tombstone is proven."""
    tombstone = part.erasure
    if tombstone is None:
        return ""
    standing = f" ({tombstone.standing.value})" if tombstone.standing is not None else ""
    return (
        f'<div class="erasure">erased {_e(_when(tombstone.time))} by <b>{_e(tombstone.by)}</b>: '
        f"{_e(tombstone.reason)}{_e(standing)}</div>"
    )


def execution_html(
    page: ExecutionPage,
    *,
    reader: str,
    trace_url: str | None,
    step: str | None,
    live: bool,
    reads: Mapping[str, PartReads] | None = None,
    trusted: bool = True,
) -> str:
    """One execution's page; ``reads``: per part ref, who read it (of the reads the reader may see);
    ``trusted``: the viewer trusts a key (without one every record is unproven, and so no erasure is
    proven: the page says so, as an erased part then reads ``missing``)."""
    reads = reads or {}
    reading = page.reading
    out: list[str] = []
    tenant = reading.tenant
    whole = ""
    if step:
        href = _execution_href(reading.execution_id, tenant)
        whole = f' · step <code>{_e(step)}</code> · <a class="whole" href="{_e(href)}">the whole execution</a>'
    out.append(
        f"<p>tenant <b>{_e(tenant or '-')}</b> · parts {page.offset + 1 if page.total_parts else 0}-"
        f"{min(page.offset + page.limit, page.total_parts)} of {page.total_parts}{whole}</p>"
    )
    if not trusted:
        out.append(f'<p class="error untrusted-keys">{_e(NO_TRUSTED_KEY)}</p>')
    steps_href = _execution_href(reading.execution_id, tenant)
    steps_href += "&" if "?" in steps_href else "?"
    for s in reading.steps:
        first = s.attempts[0]
        label = (
            f"{_e(_when(first.time))} · {_e(first.response_model or first.request_model or '-')} · "
            f"{len(s.attempts)} attempt{'s' if len(s.attempts) != 1 else ''}"
        )
        step_href = f"{steps_href}{urlencode({'step': s.step_id})}"  # _execution_href's, with the step
        out.append(
            f'<section class="step" id="step-{_e(s.step_id)}"><h2 class="step-label">{label} '
            f'<span class="muted">step <a href="{_e(step_href)}"><code>{_e(s.step_id)}</code></a></span></h2>'
        )
        for a in s.attempts:
            state = "received" if a.received else "superseded"
            link = ""
            trace_id = page.trace_ids.get((a.step_id, a.attempt, a.origin, a.seq))
            if trace_url and trace_id:
                href = trace_url.replace("{trace_id}", quote(trace_id, safe=""))
                link = f' · <a class="trace" href="{_e(href)}" rel="noopener noreferrer">trace</a>'
            out.append(
                f'<h3 id="attempt-{a.attempt}">attempt {a.attempt} ({state}) · {_e(a.provider)} '
                f"{_e(a.response_model or a.request_model)} · {_e(_when(a.time))}{link}</h3>"
            )
            if a.layout:
                out.append(f'<p class="layout">{_e(describe(a.layout))}</p>')
            rows = "".join(
                f"<tr><td>{p.index}</td><td>{_e(p.kind.value)}</td><td>{_e(p.status.value)}{_erasure(p)}</td>"
                f'<td class="standing">{_e(a.standing.value)}</td><td>{p.size}</td>'
                f"<td><code>{_e(p.digest[:16] or '-')}</code></td>{_reads_cell(reads.get(p.ref))}</tr>"
                for p in a.parts
            )
            out.append(
                "<table><thead><tr><th>#</th><th>kind</th><th>status</th><th>standing</th><th>size</th>"
                f"<th>digest</th><th>read</th></tr></thead><tbody>{rows}</tbody></table>"
            )
            for p in a.parts:
                if p.text is not None:
                    out.append(
                        f'<div class="part"><div class="label">{_e(UNTRUSTED_LABEL)} · part {p.index} '
                        f"({_e(p.kind.value)}, origin {_e(p.text.origin)})</div>"
                        f'<pre class="untrusted">{_e(p.text.text)}</pre></div>'
                    )
        out.append("</section>")
    nav = []
    query = {"step": step} if step else {}
    if page.offset > 0:
        back = str(max(0, page.offset - page.limit))
        nav.append(
            f'<a rel="prev" href="{_e(_execution_href(reading.execution_id, tenant, **query, offset=back))}">'
            "previous</a>"
        )
    if page.next_offset is not None:
        href = _execution_href(reading.execution_id, tenant, **query, offset=str(page.next_offset))
        nav.append(f'<a rel="next" href="{_e(href)}">next parts</a>')
    if page.truncated:
        nav.append("this page holds 1 MiB of reasoning text, the most one page shows")
    if nav:
        out.append(f"<p>{' · '.join(nav)}</p>")
    evidence = (
        execution_path(reading.execution_id) + "/evidence" + (f"?{urlencode({'tenant': tenant})}" if tenant else "")
    )
    out.append(
        f'<p><a class="evidence" href="{_e(evidence)}" download>Download evidence</a> '
        "(what you may read, with its proofs: <code>loom-otel verify --bundle FILE --key PUB</code>)</p>"
    )
    scripts: list[str] = []
    if live:
        out.append(
            f'<section class="live" id="live" data-execution="{_e(reading.execution_id)}" '
            f'data-tenant="{_e(tenant or "")}">'
            f'<h2>in flight</h2><div class="label">{_e(UNTRUSTED_LABEL)}</div><div id="live-parts"></div></section>'
        )
        scripts.append("/static/live.js")
    here = _execution_href(reading.execution_id, tenant, **({"step": step} if step else {}))
    return _page(f"Execution {reading.execution_id}", "".join(out), reader=reader, here=here, scripts=scripts)


def not_found_html(next_path: str, *, reader: str | None) -> str:
    hint = "" if reader else f'<p><a href="/signin?{urlencode({"next": next_path})}">Sign in</a> to read reasoning.</p>'
    return _page("Not found", f"<p>Nothing here that you may read.</p>{hint}", reader=reader, here=next_path)


def signin_html(next_path: str, *, failed: bool) -> str:
    error = '<p class="muted">That token was not accepted.</p>' if failed else ""
    body = (
        f'{error}<form method="post" action="/signin"><input type="hidden" name="next" value="{_e(next_path)}">'
        '<label>token <input type="password" name="token" autocomplete="current-password" size="50" autofocus></label> '
        '<button type="submit">sign in</button></form>'
    )
    return _page("Sign in", body, reader=None, here=next_path)
