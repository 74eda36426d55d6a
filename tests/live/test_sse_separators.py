"""Every Unicode line separator in an event's text stays inside its ``data:`` line: a client that splits
lines as ``str.splitlines`` does (httpx's ``iter_lines``) sees no injected event."""

from __future__ import annotations

import json

import httpx2

from loom_otel.cli._tail import sse_events
from loom_otel.live._sse import frame

SEPARATORS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def test_no_line_separator_splits_an_event():
    text = "".join(f"part{i}{c}event: injected{c}data: {{}}{c}{c}" for i, c in enumerate(SEPARATORS))
    body = frame("delta", {"text": text, SEPARATORS: 1}) + frame("done", {"outcome": "ok"})
    lines = list(httpx2.Response(200, content=body).iter_lines())
    assert lines == [lines[0], lines[1], "", "event: done", 'data: {"outcome":"ok"}', ""]
    assert all(c not in lines[1] for c in SEPARATORS)
    events = list(sse_events(line.encode() for line in lines))
    assert [name for name, _ in events] == ["delta", "done"]
    assert events[0][1] == {"text": text, SEPARATORS: 1}
    assert json.loads(lines[1].removeprefix("data: "))["text"] == text
