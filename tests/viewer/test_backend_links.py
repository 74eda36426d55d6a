"""``collector-config/``: the tracing backends' link settings point at the attribute loom-otel writes
(``loom.reasoning.url``), so Jaeger's UI and Grafana's Tempo data source show the link on every span."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from loom_otel.core import _attributes as attr

CONFIG = Path(__file__).resolve().parents[2] / "collector-config"


def test_jaeger_ui_link_pattern_uses_the_attribute():
    (pattern,) = json.loads((CONFIG / "jaeger-ui.json").read_text())["linkPatterns"]
    assert pattern["type"] == "tags" and pattern["key"] == attr.REASONING_URL
    assert pattern["url"] == f"#{{{attr.REASONING_URL}}}"


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
