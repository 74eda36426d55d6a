"""verify over OTLP JSON (collector file export): normalization, duplicates, reordering; and a fuzz
of the parser: arbitrary bytes never crash it and never verify as ok."""

from __future__ import annotations

import json
import random
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from loom_otel.audit import verify
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain._spans import RecordSpans


def otlp_lines(records: list[dict], *, snake: bool = False) -> list[str]:
    spans = RecordSpans().build(records)
    lines = []
    for i in range(0, len(spans), 7):
        request = encode_spans(spans[i : i + 7])
        lines.append(json.dumps(MessageToDict(request, preserving_proto_field_name=snake)))
    return lines


def test_otlp_json_reverifies_exactly_with_duplicates_and_reordering(journal_dir: Path, tmp_path: Path) -> None:
    j = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_every=10, checkpoint_interval=0)
    for i in range(40):
        j.append(
            "capture",
            {
                "loom.attempt": i,
                "loom.reasoning.part.size": [i, 2**40],
                "loom.reasoning.part.omitted": [False, True],
                "loom.reasoning.part.kind": ["text", "summary"],
                "loom.reasoning.part.ref": [],
                "ratio": 0.5,
            },
        )
    j.close()
    records = list(iter_records(journal_dir))
    lines = otlp_lines(records) + otlp_lines(records[5:12], snake=True)  # duplicates, snake_case names
    random.Random(7).shuffle(lines)  # a collector may reorder
    out = tmp_path / "spans.jsonl"
    out.write_text("\n".join(lines) + "\n")
    assert '"intValue": "' in out.read_text()  # int64 as strings, as OTLP JSON does
    report = verify(out)
    assert report.ok, report.problems
    (origin,) = report.origins
    assert origin.records == len(records) and origin.duplicates_identical == 7 and origin.reordered == ()
    # the same archive with one event attribute changed
    text = out.read_text().replace('"doubleValue": 0.5', '"doubleValue": 0.25', 1)
    out.write_text(text)
    (bad,) = verify(out).origins
    assert bad.modified or bad.duplicates_conflicting


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2048))
def test_fuzz_arbitrary_bytes_as_collector_output(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.json"
    path.write_bytes(data)
    assert not verify(path).ok


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2048))
def test_fuzz_arbitrary_bytes_as_a_journal_segment(tmp_path: Path, data: bytes) -> None:
    segment = tmp_path / "j" / "origin" / "00000001.jsonl"
    segment.parent.mkdir(parents=True, exist_ok=True)
    segment.write_bytes(data)
    assert not verify(tmp_path / "j").ok


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "resourceSpans",
        "scopeSpans",
        "spans",
        "events",
        "attributes",
        "key",
        "value",
        "intValue",
        "arrayValue",
        "loom.audit.seq",
        "loom.audit.origin",
        "origin",
        "seq",
        "prev",
        "hash",
        "type",
        "timeUnixNano",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.recursive(_json, lambda inner: st.dictionaries(_keys, inner, max_size=5), max_leaves=30))
def test_fuzz_structured_json_lines(tmp_path: Path, value: object) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(value) + "\n")
    assert not verify(path).ok
