"""``collector-config/``: the tracing backends' link settings point at the attribute loom-otel writes
(``loom.reasoning.url``), so Jaeger's UI and Grafana's Tempo data source show the link on every span.

Jaeger UI's link patterns are applied here the way its source applies them
(``packages/jaeger-ui/src/model/link-patterns.tsx``, ``utils/stringSupplant.tsx``): a pattern matches an
item by ``type`` (``logs`` for a span event's fields, ``tags`` for the span's attributes; a string or a
list) and ``key``; every ``#{name}`` of its URL is looked up among the same items (then the span's tags)
and replaced by ``encodeURIComponent(value)``; a missing parameter drops the link. The link is then
followed against a real ``loom-otel serve`` app.

Grafana's trace correlations are applied the way Grafana's source applies them (``grafana_links``); the
template interpolation lives in Grafana's app (``TemplateSrv``), in no npm package, so the rule is
reproduced here, and the regular expression is also run by node's own ``RegExp`` when node is there.

Langfuse (its server needs Postgres, ClickHouse, Redis and S3: not run here) shows an OTel GenAI span's
``gen_ai.output.messages`` as the observation's output, each message's parts joined into its text and
rendered as Markdown (``langfuse_message_text``); the link in the reasoning part is then a link."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlsplit

import httpx2
import pytest
import yaml

from loom_otel.core import FileReasoningStore
from loom_otel.core._evidence import _attributes as attr
from loom_otel.viewer import create_app, tokens_file_authenticator
from tests.live.conftest import Server
from tests.viewer.conftest import CANARY, Captured, bearer, capture_evidence, viewer_app

CONFIG = Path(__file__).resolve().parents[2] / "collector-config"


_PARAMETER = re.compile(r"#\{([^{}]*)\}")  # Jaeger UI's PARAMETER_REG_EXP


def _encode_uri_component(value: object) -> str:
    """JavaScript's ``encodeURIComponent``: everything but ``A-Z a-z 0-9 - _ . ! ~ * ' ( )`` escaped."""
    return quote(str(value), safe="-_.!~*'()")


def _matches(entry: Any, value: str) -> bool:  # Jaeger UI's createTestFunction, for JSON configuration
    return entry is None or entry == value or (isinstance(entry, list) and value in entry)


def jaeger_links(
    patterns: list[dict[str, Any]], kind: str, items: dict[str, Any], span_tags: dict[str, Any]
) -> list[str]:
    """The links Jaeger UI shows beside each of ``items`` (a span event's fields when ``kind`` is ``logs``,
    the span's attributes when ``tags``)."""
    links = []
    for key in items:
        for pattern in patterns:
            if not (_matches(pattern.get("type"), kind) and _matches(pattern.get("key"), key)):
                continue
            names = _PARAMETER.findall(pattern["url"])
            values = {n: items.get(n, span_tags.get(n)) for n in names}
            if any(v is None for v in values.values()):
                continue  # "Skipping link pattern, missing parameter"
            links.append(_PARAMETER.sub(lambda m, v=values: _encode_uri_component(v[m.group(1)]), pattern["url"]))
    return links


def test_jaeger_ui_link_pattern_uses_the_attribute():
    (pattern,) = json.loads((CONFIG / "jaeger-ui.json").read_text())["linkPatterns"]
    assert sorted(pattern["type"]) == ["logs", "tags"] and pattern["key"] == attr.REASONING_URL
    assert _PARAMETER.findall(pattern["url"]) == [attr.REASONING_URL]


def test_a_link_of_the_whole_value_was_jaegers_own_search_page():
    """The pattern shipped before: ``#{loom.reasoning.url}`` alone, encoded, is a relative path on Jaeger."""
    url = "http://viewer.local/executions/run-1?tenant=acme&step=ab#attempt-1"
    (link,) = jaeger_links(
        [{"type": "tags", "key": attr.REASONING_URL, "url": "#{loom.reasoning.url}"}],
        "tags",
        {attr.REASONING_URL: url},
        {},
    )
    assert urlsplit(link).scheme == "" and link.startswith("http%3A%2F%2F")


def _opens_the_call(running: Server, links: list[str], event: Any, tenant: str | None) -> None:
    """The backend's one link goes through the viewer's ``/open`` (one redirect on its own site) to the
    call's step and attempt, with its tenant if it has one, and the page shows its reader the text."""
    assert len(links) == 1 and links[0].startswith(f"{running.url}/open?url=")
    hop = httpx2.get(links[0], timeout=30)
    assert hop.status_code == 303
    target = httpx2.URL(links[0]).join(hop.headers["location"])
    assert target.host == httpx2.URL(running.url).host and target.path == "/executions/run-alice"
    assert target.fragment == f"attempt-{event.attributes[attr.ATTEMPT]}"
    assert target.params.get("step") == event.attributes[attr.STEP_ID]
    assert (target.params.get("tenant") == "acme") == (tenant == "acme")
    page = httpx2.get(str(target.copy_with(fragment=None)), headers=bearer("alice"), timeout=30)
    assert page.status_code == 200 and CANARY in page.text


@pytest.mark.parametrize("kind", ["logs", "tags"])
@pytest.mark.parametrize("tenant", ["acme", None])
def test_a_click_in_jaeger_opens_the_calls_page_in_the_viewer(tmp_path: Path, kind: str, tenant: str | None):
    """From the event's fields and from the span's attributes, with and without a tenant, Jaeger's link
    leads (one redirect on the viewer's own site) to the page that shows the call's text to its reader."""
    captured: Captured = capture_evidence(tmp_path, viewer_url="http://viewer.placeholder")
    (span,) = [s for s in captured.spans if s.attributes.get(attr.EXECUTION_ID) == "run-alice"]
    (event,) = [e for e in span.events if e.name == attr.EVENT_CAPTURED]
    fields = dict(event.attributes) if kind == "logs" else dict(span.attributes)
    if tenant is None:  # a call with no tenant: its URL has no tenant parameter
        fields[attr.REASONING_URL] = fields[attr.REASONING_URL].replace("tenant=acme&", "")
    patterns = json.loads((CONFIG / "jaeger-ui.json").read_text())["linkPatterns"]
    app = viewer_app(captured)
    with Server(app) as running:
        links = [
            link.replace("https://viewer.example", running.url)
            for link in jaeger_links(patterns, kind, fields, dict(span.attributes))
        ]
        _opens_the_call(running, links, event, tenant)


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/",
        "//evil.example/executions/x",
        "http://v/executions/a/b",
        "http://v/other",
        "",
        "javascript:alert(1)",
    ],
)
def test_open_never_leads_off_the_viewer(tmp_path: Path, url: str):
    captured = capture_evidence(tmp_path)
    app = create_app(
        captured.journal,
        FileReasoningStore(captured.root / "store"),
        authenticator=tokens_file_authenticator(captured.tokens),
        reads_journal=captured.root / "reads",
    )
    with Server(app) as running:
        response = httpx2.get(f"{running.url}/open", params={"url": url}, timeout=30)
        if response.status_code == 303:
            assert not urlsplit(response.headers["location"]).netloc
            assert response.headers["location"].startswith("executions/")
        else:
            assert response.status_code == 400


# Grafana's trace-frame fields (the Tempo data source's trace frame: ``pkg/tsdb/tempo/trace_transform.go``).
_TEMPO_FIELDS = (
    "traceID", "spanID", "parentSpanID", "operationName", "serviceName", "serviceTags", "startTime",
    "duration", "logs", "references", "tags", "kind", "statusCode", "statusMessage",
)  # fmt: skip
# TemplateSrv's variable syntax (``public/app/features/variables/utils.ts``, ``variableRegex``).
_VARIABLE = re.compile(r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}")


def _encode_uri_component_strict(value: str) -> str:
    """Grafana's ``encodeURIComponentStrict``: ``encodeURIComponent``, then ``! ' ( ) *`` escaped too."""
    return quote(value, safe="-_.~")


def _stringify(value: Any) -> str:
    """``safeStringifyValue`` (``app/core/utils/explore``): a string as is, anything else ``JSON.stringify``."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _provisioned(correlation: dict[str, Any]) -> dict[str, Any]:
    """``makeCreateCorrelationCommand`` and ``CreateCorrelationCommand.Validate``
    (``pkg/services/provisioning/datasources/datasources.go``, ``pkg/services/correlations/models.go``)."""
    assert isinstance(correlation["label"], str) and isinstance(correlation["description"], str)  # .(string)
    assert "transformations" not in correlation, "transformations must be nested under config"
    kind = "external" if correlation.get("type") == "external" else "query"  # anything else is a query
    assert kind == "external" or "targetUID" in correlation, 'correlations of type "query" must have a targetUID'
    config = correlation["config"]
    for transformation in config.get("transformations", ()):
        assert transformation["type"] in {"regex", "logfmt"}, "invalid transformation type"
        assert transformation["type"] != "regex" or transformation.get("expression"), "regex needs an expression"
    return {"type": kind, **config}


def _transformation_vars(transformation: dict[str, Any], value: Any, field_name: str) -> dict[str, str]:
    """``getTransformationVars`` (``public/app/features/correlations/transformations.ts``), regex only."""
    found: dict[str, str] = {}
    for match in re.finditer(transformation["expression"], _stringify(value), re.IGNORECASE):  # flags "gi"
        found[transformation.get("mapValue") or field_name] = match.group(1) or match.group(0)
    return found


def _interpolate(url: str, variables: dict[str, str]) -> str | None:
    """``getFieldLinksForExplore`` (``public/app/features/explore/utils/links.ts``): a link any of whose
    variables is undefined is dropped; an external link is ``getDataLinkUIModel``
    (``public/app/features/panel/panellinks/link_srv.ts``) through a replace that forwards no format, so
    a variable with no format of its own is inserted as is (``glob``), ``:percentencode`` strictly
    percent-encoded, ``:raw`` as is; then ``sanitizeUrl`` (a ``javascript:`` link is ``about:blank``)."""
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1) or match.group(2) or match.group(4)
        fmt = match.group(3) or match.group(6)
        if name not in variables:
            missing = True
            return match.group(0)
        if fmt == "percentencode":
            return _encode_uri_component_strict(variables[name])
        assert fmt in {None, "raw", "glob"}, f"format {fmt} not reproduced here"
        return variables[name]

    href = _VARIABLE.sub(value, url.replace("\n", ""))
    if missing:
        return None
    return "about:blank" if href.strip().lower().startswith(("javascript:", "data:", "vbscript:")) else href


def grafana_links(source: dict[str, Any], row: dict[str, Any]) -> list[str]:
    """The links Grafana's trace view shows on a span (``row``: the trace frame's fields of that span) for
    the correlations of the provisioned data source ``source``: attached to the field ``config.field``
    (``decorateDataFrameWithInternalDataLinks``, ``public/app/features/correlations/utils.ts``; an external
    one is ``config.target.url``), each transformation reading its ``field`` of the same row."""
    assert source["type"] == "tempo"
    links = []
    for correlation in source.get("correlations", ()):
        config = _provisioned(correlation)
        if config["type"] != "external" or config["field"] not in _TEMPO_FIELDS:
            continue  # a query correlation opens a data source query, no URL; an unknown field holds no link
        variables: dict[str, str] = {}
        for transformation in config.get("transformations", ()):
            field = transformation.get("field") or config["field"]
            variables |= _transformation_vars(transformation, row.get(field), config["field"])
        href = _interpolate(config["target"]["url"], variables)
        if href is not None:
            links.append(href)
    return links


def _tempo_row(span: Any) -> dict[str, Any]:
    """The trace frame's row of ``span`` as Tempo's data source builds it: tags as ``{key, value}``."""
    return {
        "traceID": format(span.context.trace_id, "032x"),
        "spanID": format(span.context.span_id, "016x"),
        "tags": [{"key": k, "value": v} for k, v in span.attributes.items()],
    }


def _tempo_source() -> dict[str, Any]:
    (source,) = yaml.safe_load((CONFIG / "grafana-tempo-datasource.yaml").read_text())["datasources"]
    return source


@pytest.mark.parametrize("tenant", ["acme", None])
def test_a_click_in_grafana_tempo_opens_the_calls_page_in_the_viewer(tmp_path: Path, tenant: str | None):
    """The shipped correlation, applied to the model-call span as Grafana applies it, leads (one redirect
    on the viewer's own site) to the page that shows the call's text to its reader."""
    captured: Captured = capture_evidence(tmp_path, viewer_url="http://viewer.placeholder")
    (span,) = [s for s in captured.spans if s.attributes.get(attr.EXECUTION_ID) == "run-alice"]
    (event,) = [e for e in span.events if e.name == attr.EVENT_CAPTURED]
    row = _tempo_row(span)
    if tenant is None:
        for tag in row["tags"]:
            if tag["key"] == attr.REASONING_URL:
                tag["value"] = tag["value"].replace("tenant=acme&", "")
    app = viewer_app(captured)
    with Server(app) as running:
        links = [link.replace("https://viewer.example", running.url) for link in grafana_links(_tempo_source(), row)]
        _opens_the_call(running, links, event, tenant)


def _broken(change: str) -> dict[str, Any]:
    source = _tempo_source()
    correlation = source["correlations"][0]
    config = correlation["config"]
    if change == "unencoded":  # the URL's own & and # would end the url parameter
        config["target"]["url"] = config["target"]["url"].replace(":percentencode", "")
    elif change == "other-variable":
        config["transformations"][0]["mapValue"] = "url"
    elif change == "no-type":
        del correlation["type"]
    elif change == "unknown-field":
        config["field"] = "traceId"
    elif change == "transformations-at-root":
        correlation["transformations"] = config.pop("transformations")
    elif change == "other-key":
        config["transformations"][0]["expression"] = config["transformations"][0]["expression"].replace("url", "uri")
    return source


@pytest.mark.parametrize(
    "change", ["unencoded", "other-variable", "no-type", "unknown-field", "transformations-at-root", "other-key"]
)
def test_a_wrong_grafana_correlation_gives_no_link_to_the_call(change: str):
    """Each way the correlation could be wrong gives no link, or one that loses the step and attempt."""
    url = "http://viewer.local/executions/run-1?tenant=acme&step=ab#attempt-1"
    row = {
        "traceID": "ab" * 16,
        "tags": [{"key": "gen_ai.system", "value": "x"}, {"key": attr.REASONING_URL, "value": url}],
    }
    try:
        links = grafana_links(_broken(change), row)
    except AssertionError:
        return  # Grafana refuses to provision it
    assert all(urlsplit(link).query != f"url={_encode_uri_component_strict(url)}" for link in links)
    assert grafana_links(_tempo_source(), row) == [
        f"https://viewer.example/open?url={_encode_uri_component_strict(url)}"
    ]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_correlations_expression_matches_in_javascript_as_in_python():
    """The transformation's expression, run by node's ``RegExp`` (flags ``gi``, ``matchAll``) on the tags as
    ``JSON.stringify`` writes them, captures what the reproduction above captures."""
    (transformation,) = _tempo_source()["correlations"][0]["config"]["transformations"]
    url = "http://viewer.local/executions/run-1?tenant=acme&step=ab#attempt-1"
    tags = [
        {"key": "gen_ai.usage.input_tokens", "value": 12},
        {"key": attr.REASONING_URL, "value": url},
        {"key": "z", "value": "y"},
    ]
    script = (
        "const [expression, tags] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const found = [...JSON.stringify(tags).matchAll(new RegExp(expression, 'gi'))].map(m => m[1] || m[0]);"
        "process.stdout.write(JSON.stringify(found));"
    )
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps([transformation["expression"], tags]), capture_output=True,
        text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout) == [url]
    assert _transformation_vars(transformation, tags, "traceID") == {"reasoningUrl": url}


CONTENT: Final = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}


def langfuse_message_text(attributes: dict[str, Any]) -> list[str]:
    """The text Langfuse shows for each output message of a span: ``gen_ai.output.messages`` is the
    observation's output (``extractOpenTelemetryGenAiInputAndOutput``,
    ``packages/shared/src/server/otel/OtelIngestionProcessor.ts``); a message's ``parts`` (no tool call
    among them) become its content, each part's ``text`` or else its string ``content``, joined with
    nothing between (``normalizeGoogleMessage``, ``packages/shared/src/utils/chatml/adapters/generic.ts``),
    rendered as Markdown in the default "pretty" view (``IOPreview.tsx``, ``ChatMessage.tsx``)."""
    texts = []
    for message in json.loads(str(attributes["gen_ai.output.messages"])):
        pieces = []
        for part in message.get("parts", ()):
            assert part.get("type") not in {"tool_call", "tool_call_response"}
            text = part.get("text") or (part.get("content") if isinstance(part.get("content"), str) else None)
            if text:
                pieces.append(str(text))
        texts.append("".join(pieces))
    return texts


def _markdown_links(text: str) -> list[str]:
    """The link targets CommonMark (Langfuse's renderer follows it) finds in ``text``."""
    from markdown_it import MarkdownIt

    links = []
    for block in MarkdownIt("commonmark").parse(text):
        links += [str(t.attrs["href"]) for t in block.children or () if t.type == "link_open"]
    return links


def test_a_click_in_langfuse_opens_the_calls_page_in_the_viewer(tmp_path: Path):
    """With content capture on, the answer's message as Langfuse shows it holds one Markdown link, the
    call's ``loom.reasoning.url``; it opens the call's text to its reader; no text in the span."""
    from loom_otel.core import ReasoningConfig, execution, step
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
    from loom_otel.testing import find_leaks, instrumented
    from loom_otel.testing.simulator import Simulator
    from tests.anthropic.modes import MODES, request

    captured = capture_evidence(tmp_path, viewer_url="http://viewer.placeholder")
    config = ReasoningConfig(store=captured.store_url, journal=captured.journal, viewer_url="http://viewer.placeholder")
    with instrumented(AnthropicInstrumentor(), config=config, environ=CONTENT) as telemetry:
        with execution("run-langfuse", tenant="acme", principal="alice", owner=None), step("s0"):
            MODES["sync"](Simulator(reasoning_text=CANARY), request())
    (call,) = [s for s in telemetry.spans if any(e.name == attr.EVENT_CAPTURED for e in s.events)]
    url = call.attributes[attr.REASONING_URL]
    (answer, *_) = langfuse_message_text(dict(call.attributes))
    assert _markdown_links(answer) == [url]
    assert find_leaks([CANARY], spans=telemetry.spans) == []
    app = viewer_app(captured)
    with Server(app) as running:
        target = httpx2.URL(url.replace("http://viewer.placeholder", running.url))
        assert target.path == "/executions/run-langfuse" and target.params.get("step") == "s0"
        page = httpx2.get(str(target.copy_with(fragment=None)), headers=bearer("alice"), timeout=30)
        assert page.status_code == 200 and CANARY in page.text
