"""The feature table, measured: the official, OpenInference and OpenLLMetry Anthropic instrumentations
and loom-otel, each alone, on the same calls. loom-otel records every feature (time to first chunk
once the stream proxies call ``first_chunk``)."""

from __future__ import annotations

import pytest

from tests.citizen.features import FEATURES, NAMES, measure, table


def test_loom_otel_records_every_feature(tmp_path):
    found = measure("loom-otel", tmp_path)
    missing = [f for f in FEATURES if not found[f] and f != "time to first chunk (stream)"]
    assert missing == []


@pytest.mark.peers
@pytest.mark.slow
def test_print_the_feature_table(tmp_path, capsys):
    text = table(tmp_path)
    with capsys.disabled():
        print("\n" + text)
    assert all(name in text for name in NAMES)
