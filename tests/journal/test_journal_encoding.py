"""The journal builds a record's bytes without a dict (issue 15): they must stay exactly the canonical
JSON the chain hash is defined over (``record_body``), whatever the attributes hold."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loom_otel.core._evidence._canonical import chain_hash
from loom_otel.core._evidence._journal._writer import Journal, record_body

_SCALARS = st.one_of(st.text(), st.integers(-(2**63), 2**63 - 1), st.booleans(), st.floats(allow_nan=False))
_VALUES = st.one_of(_SCALARS, st.lists(st.text()), st.lists(st.integers(0, 10**9)), st.lists(st.booleans()))


@settings(max_examples=60, deadline=None)
@given(attributes=st.dictionaries(st.text(min_size=1), _VALUES, max_size=8), type_=st.text(min_size=1))
def test_each_line_is_its_hash_and_the_canonical_record(tmp_path_factory, attributes, type_) -> None:
    directory: Path = tmp_path_factory.mktemp("journal")
    journal = Journal(directory, durability="os", checkpoint_key=None, checkpoint_interval=0)
    entries = [journal.append(type_, attributes) for _ in range(2)]
    journal.close()
    (segment,) = (directory / journal.origin).glob("*.jsonl")
    lines = segment.read_bytes().splitlines()
    for entry, line in zip(entries, lines, strict=False):
        record = json.loads(line)
        assert record["attributes"] == json.loads(json.dumps(attributes))
        assert (record["seq"], record["prev"], record["type"], record["hash"]) == (
            entry.seq,
            entry.prev,
            type_,
            entry.hash,
        )
        assert chain_hash(entry.prev, record_body(record)) == entry.hash
        assert line == b'{"hash":"' + entry.hash.encode() + b'",' + record_body(record)[1:]
