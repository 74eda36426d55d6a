"""One encoding of a text for sealing, digesting and reading back: lone surrogates kept."""

from __future__ import annotations

import hashlib
import json

import pytest

from loom_otel.core import MemoryReasoningStore
from loom_otel.core._evidence._canonical import canonical_json, text_bytes, text_digest, text_of
from loom_otel.core._evidence._store._protocol import Envelope

LONE = "a\ud83db\udc00c"


def test_valid_text_encodes_as_utf8_and_lone_surrogates_round_trip() -> None:
    assert text_bytes("déjà vu 🌧") == "déjà vu 🌧".encode()
    assert text_digest("déjà vu") == hashlib.sha256("déjà vu".encode()).hexdigest()
    assert text_of(text_bytes(LONE)) == LONE and len(text_bytes(LONE)) == 9
    assert text_of(b"\xff ok") == "\ufffd ok"  # not an encoding of a text: read, not raised


def test_a_sealed_lone_surrogate_reads_back_equal() -> None:
    store = MemoryReasoningStore()
    envelope = Envelope.seal(LONE, execution_id="e", tenant="t")
    assert envelope.digest == text_digest(LONE) and envelope.size == 9
    body = store.get(store.put(envelope), tenant="t", execution_id="e")
    assert body is not None and text_of(body) == LONE


def test_canonical_json_keeps_a_lone_surrogate_that_json_reads_back() -> None:
    assert json.loads(canonical_json({"x": LONE})) == {"x": LONE}


def test_canonical_json_is_the_json_encoders_output() -> None:
    """The encoder built once gives the bytes ``json.dumps`` gives with the same options."""
    values: list[object] = [
        None,
        "plain",
        'é \u2028 "quoted" \\ \n',
        LONE,
        {"b": [1, 2.5, 1e300, -0.0, True, False, None], "a": {"z": "", "y": {"x": []}}, "é": "ü"},
        [{"text": "x" * 10000}, {"thought": True}],
        ("tuple", 1),
        float("nan"),
    ]
    for value in values:
        expected = text_bytes(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
        assert canonical_json(value) == expected


def test_canonical_json_refuses_what_the_json_encoder_refuses() -> None:
    circular: list[object] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(circular)
    with pytest.raises(TypeError):
        canonical_json({"set": {1}})
