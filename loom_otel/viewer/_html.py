"""The viewer's pages, rendered on the server. Every value that came from a record or the store is
escaped (``html.escape``), and model text is shown in a ``<pre>`` labelled as untrusted model output:
text, never markup. The Content-Security-Policy (``app``) forbids inline script besides."""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from typing import Final
from urllib.parse import quote, urlencode

from loom_otel.core._viewer_link import execution_path
from loom_otel.viewer._reading import ExecutionPage, ExecutionRow

__all__ = ["UNTRUSTED_LABEL", "execution_html", "index_html", "not_found_html", "signin_html"]

UNTRUSTED_LABEL: Final = "Untrusted model output: shown as text, never follow it as instructions"
_STYLE: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222;padding:0 1em}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left}
pre.untrusted{white-space:pre-wrap;background:#fff8e6;border:1px solid #e0b050;padding:.6em;margin:.2em 0 1em}
.label{font-size:12px;color:#8a5a00;font-weight:600}.muted{color:#777}code{font-size:12px}
nav a{margin-right:1em}.step{margin-top:1.5em}.live{border-left:3px solid #48a;padding-left:.6em}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _page(title: str, body: str, *, reader: str | None, scripts: Sequence[str] = ()) -> str:
    who = (
        f'signed in as <b>{_e(reader)}</b> · <a href="/signout">sign out</a>'
        if reader
        else '<a href="/signin">sign in</a>'
    )
    tags = "".join(f'<script src="{_e(s)}" defer></script>' for s in scripts)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)} · loom-otel</title>'
        f'<style>{_STYLE}</style>{tags}</head><body><nav><a href="/">executions</a>'
        f'<span class="muted">{who}</span></nav><h1>{_e(title)}</h1>{body}</body></html>'
    )


def _execution_href(execution_id: str, tenant: str | None, **query: str) -> str:
    params = {**({"tenant": tenant} if tenant is not None else {}), **query}
    return execution_path(execution_id) + (f"?{urlencode(params)}" if params else "")


def index_html(rows: Sequence[ExecutionRow], *, reader: str, tenant: str = "", since: str = "") -> str:
    form = (
        '<form method="get" action="/"><label>tenant <input name="tenant" value="'
        f'{_e(tenant)}"></label> <label>since (UTC) <input name="since" placeholder="2026-12-01T09:00" value="'
        f'{_e(since)}"></label> <button type="submit">filter</button></form>'
    )
    if not rows:
        body = '<p class="muted">No execution holds reasoning you may read.</p>'
    else:
        lines = "".join(
            f'<tr><td>{_e(_when(r.last))}</td><td><a href="{_e(_execution_href(r.execution_id, r.tenant))}">'
            f"<code>{_e(r.execution_id)}</code></a></td><td>{_e(r.tenant or '-')}</td>"
            f"<td>{r.calls}</td><td>{r.parts}</td></tr>"
            for r in rows
        )
        body = (
            "<table><thead><tr><th>last capture</th><th>execution</th><th>tenant</th><th>calls</th><th>parts</th>"
            f"</tr></thead><tbody>{lines}</tbody></table>"
        )
    return _page("Executions", form + body, reader=reader)


def execution_html(page: ExecutionPage, *, reader: str, trace_url: str | None, step: str | None, live: bool) -> str:
    reading = page.reading
    out: list[str] = []
    tenant = reading.tenant
    out.append(
        f"<p>tenant <b>{_e(tenant or '-')}</b> · parts {page.offset + 1 if page.total_parts else 0}-"
        f"{min(page.offset + page.limit, page.total_parts)} of {page.total_parts}"
        + (f" · step <code>{_e(step)}</code>" if step else "")
        + "</p>"
    )
    for s in reading.steps:
        out.append(f'<section class="step" id="step-{_e(s.step_id)}"><h2>step <code>{_e(s.step_id)}</code></h2>')
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
            rows = "".join(
                f"<tr><td>{p.index}</td><td>{_e(p.kind.value)}</td><td>{_e(p.status.value)}</td>"
                f'<td class="standing">{_e(a.standing.value)}</td><td>{p.size}</td>'
                f"<td><code>{_e(p.digest[:16] or '-')}</code></td></tr>"
                for p in a.parts
            )
            out.append(
                "<table><thead><tr><th>#</th><th>kind</th><th>status</th><th>standing</th><th>size</th>"
                f"<th>digest</th></tr></thead><tbody>{rows}</tbody></table>"
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
    return _page(f"Execution {reading.execution_id}", "".join(out), reader=reader, scripts=scripts)


def not_found_html(next_path: str, *, reader: str | None) -> str:
    hint = "" if reader else f'<p><a href="/signin?{urlencode({"next": next_path})}">Sign in</a> to read reasoning.</p>'
    return _page("Not found", f"<p>Nothing here that you may read.</p>{hint}", reader=reader)


def signin_html(next_path: str, *, failed: bool) -> str:
    error = '<p class="muted">That token was not accepted.</p>' if failed else ""
    body = (
        f'{error}<form method="post" action="/signin"><input type="hidden" name="next" value="{_e(next_path)}">'
        '<label>token <input type="password" name="token" autocomplete="current-password" size="50" autofocus></label> '
        '<button type="submit">sign in</button></form>'
    )
    return _page("Sign in", body, reader=None)
