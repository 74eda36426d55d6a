"""``collector-config/``: the tracing backends' link settings point at the attribute loom-otel writes
(``loom.reasoning.url``), so Jaeger's UI and Grafana's Tempo data source show the link on every span.

Jaeger UI's link patterns are applied here the way its source applies them
(``packages/jaeger-ui/src/model/link-patterns.tsx``, ``utils/stringSupplant.tsx``): a pattern matches an
item by ``type`` (``logs`` for a span event's fields, ``tags`` for the span's attributes; a string or a
list) and ``key``; every ``#{name}`` of its URL is looked up among the same items (then the span's tags)
and replaced by ``encodeURIComponent(value)``; a missing parameter drops the link. The link is then
followed against a real ``loom-otel serve`` app."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2
import pytest
import yaml

from loom_otel.core import FileReasoningStore
from loom_otel.core import _attributes as attr
from loom_otel.core._policy import load_policy
from loom_otel.viewer import create_app, tokens_file_authenticator
from tests.live.conftest import Server
from tests.viewer.conftest import CANARY, Captured, bearer, capture_evidence

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
    app = create_app(
        captured.journal,
        FileReasoningStore(captured.root / "store"),
        authenticator=tokens_file_authenticator(captured.tokens),
        reads_journal=captured.root / "reads",
        policy=load_policy(captured.policy),
    )
    with Server(app) as running:
        links = [
            link.replace("https://viewer.example", running.url)
            for link in jaeger_links(patterns, kind, fields, dict(span.attributes))
        ]
        assert len(links) == 1 and links[0].startswith(f"{running.url}/open?url=")
        hop = httpx2.get(links[0], timeout=30)
        assert hop.status_code == 303
        target = httpx2.URL(links[0]).join(hop.headers["location"])
        assert target.host == httpx2.URL(running.url).host and target.path == "/executions/run-alice"
        assert target.fragment == f"attempt-{event.attributes[attr.ATTEMPT]}"
        assert target.params.get("step") == event.attributes[attr.STEP_ID]
        page = httpx2.get(str(target.copy_with(fragment=None)), headers=bearer("alice"), timeout=30)
        assert page.status_code == 200 and CANARY in page.text


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


def test_grafana_tempo_correlation_extracts_the_attribute():
    (source,) = yaml.safe_load((CONFIG / "grafana-tempo-datasource.yaml").read_text())["datasources"]
    assert source["type"] == "tempo"
    (link,) = source["correlations"]
    assert link["type"] == "external"
    (transformation,) = link["config"]["transformations"]
    assert link["config"]["target"]["url"] == f"${{{transformation['mapValue']}}}"
    # the regex Grafana applies to the span's tags (a JSON list of {key, value}) yields the URL
    tags = json.dumps([{"key": "gen_ai.system", "value": "anthropic"}, {"key": attr.REASONING_URL, "value": "u"}])
    match = re.search(transformation["expression"], tags.replace(" ", ""))
    assert match is not None and match.group(1) == "u"
