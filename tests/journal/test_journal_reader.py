"""Reading journal lines back: bounded memory, linear time, over-long lines reported as malformed,
the forwarder's scan stopping at its deadline; one place lists origins and segments."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.audit import verify
from loom_otel.audit._captures import iter_captures
from loom_otel.cli.__main__ import main
from loom_otel.core._evidence._journal._reader import (
    MAX_LINE_BYTES,
    Line,
    Position,
    all_segments,
    iter_records,
    list_origins,
    read_lines,
)
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter
from loom_otel.exporters.chain._outbox import Outbox


def dead_chain(journal_dir: Path, records: int = 6) -> Path:
    """A chain no live writer holds (written, closed, moved aside as a crashed process leaves it)."""
    j = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_every=1000, checkpoint_interval=0)
    for i in range(records):
        j.append("capture", {"loom.step.id": f"s{i}"})
    j.close()
    dead = journal_dir / f"{j.origin}-dead"
    (journal_dir / j.origin).rename(dead)
    return dead


def insert_line(chain: Path, index: int, line: bytes) -> None:
    ((_, segment),) = [(o, p) for o, p in all_segments(chain.parent) if o == chain.name]
    lines = segment.read_bytes().splitlines(keepends=True)
    lines.insert(index, line)
    segment.write_bytes(b"".join(lines))


def test_lines_longer_than_the_cap_are_skipped_without_their_data(tmp_path: Path) -> None:
    chain = tmp_path / "origin"
    chain.mkdir()
    long = b"x" * 5000 + b"\n"
    (chain / "00000001.jsonl").write_bytes(b"a\n" + long + b"bb\n" + b"y" * 3000)
    lines = list(read_lines(chain, max_line=1000))
    assert [(line.data, line.too_long, line.torn, line.size) for line in lines] == [
        (b"a\n", False, False, 2),
        (b"", True, False, 5001),
        (b"bb\n", False, False, 3),
        (b"", True, True, 3000),  # a torn tail that is also too long: its size still counts
    ]
    assert [line.start.offset for line in lines] == [0, 2, 5003, 5006]
    resumed = list(read_lines(chain, Position(1, 5003), max_line=1000))
    assert resumed[0].data == b"bb\n"


def test_a_line_spanning_many_chunks_is_read_whole_under_the_cap(tmp_path: Path) -> None:
    chain = tmp_path / "origin"
    chain.mkdir()
    line = b"z" * (3 << 20) + b"\n"  # three read chunks
    (chain / "00000001.jsonl").write_bytes(line + b"end\n")
    assert [x.data for x in read_lines(chain)] == [line, b"end\n"]


def test_a_64_mib_line_is_malformed_for_verify_and_every_reader(journal_dir: Path) -> None:
    chain = dead_chain(journal_dir)
    insert_line(chain, 3, b'{"seq": 4, "pad": "' + b"p" * (64 << 20) + b'"}\n')
    assert MAX_LINE_BYTES < 64 << 20
    report = verify(journal_dir)
    assert report.malformed == 1 and not report.ok
    (origin,) = report.origins
    assert origin.records == 7 and origin.modified == () and origin.gaps == ()
    assert [r["seq"] for r in iter_records(journal_dir)] == [1, 2, 3, 4, 5, 6, 7]
    assert len(list(iter_captures(journal_dir))) == 0  # no capture attributes, but read through


def test_forward_skips_an_over_long_line_and_delivers_the_rest(journal_dir: Path, caplog) -> None:
    chain = dead_chain(journal_dir)
    insert_line(chain, 2, b"[" + b"1," * (10 << 20) + b"1]\n")
    inner = InMemorySpanExporter()
    exporter = ChainedSpanExporter(inner, journal=journal_dir)
    with caplog.at_level(logging.WARNING):
        assert exporter.forward(timeout_millis=30_000)
    exporter.shutdown()
    assert "malformed line (over" in caplog.text
    assert sum(len(s.events) for s in inner.get_finished_spans()) == 7


def test_the_outbox_scan_stops_at_its_deadline(journal_dir: Path) -> None:
    chain = dead_chain(journal_dir, records=50)
    outbox = Outbox(chain)
    owed = outbox.owed(time.time_ns(), 0, everything=True, live=False, deadline=time.monotonic() + 3600)
    assert len(list(owed)) == 51
    with pytest.raises(TimeoutError):
        list(outbox.owed(time.time_ns(), 0, everything=True, live=False, deadline=time.monotonic()))


def _lines_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of the lines the outbox reads one by one (and a small chunk, so a chain is many)."""
    from loom_otel.exporters.chain import _outbox

    monkeypatch.setattr(_outbox, "_SKIP_CHUNK", 4096)
    count = [0]
    real = _outbox.read_lines

    def counted(*args: Any, **kwargs: Any) -> Iterator[Line]:
        for line in real(*args, **kwargs):
            count[0] += 1
            yield line

    monkeypatch.setattr(_outbox, "read_lines", counted)
    return count


def test_a_sweep_passes_over_acknowledged_records_a_chunk_at_a_time(
    journal_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records up to the cursor are not read line by line; what follows them is, from the first
    record not yet acknowledged (a small chunk makes the chain many chunks long)."""
    chain = dead_chain(journal_dir, records=300)
    outbox = Outbox(chain)
    outbox.cursor = 250
    lines = _lines_read(monkeypatch)
    owed = [r["seq"] for r in outbox.owed(time.time_ns(), 0, everything=True, live=False)]
    assert owed == list(range(251, 302))  # the 300 captures and the closing checkpoint
    assert lines[0] < 51 + 20, f"{lines[0]} lines read one by one"
    assert outbox.position > Position(1, 0)


@pytest.mark.parametrize("where", ["malformed", "unacknowledged"])
def test_a_sweep_reads_line_by_line_where_a_chunk_is_not_plain_acknowledged_records(
    journal_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    from loom_otel.exporters.chain import _outbox

    chain = dead_chain(journal_dir, records=200)
    outbox = Outbox(chain)
    outbox.cursor = 150
    if where == "malformed":  # among the acknowledged records: still reported
        insert_line(chain, 40, b"not a record\n")
    else:  # acknowledged out of order around two records no span carried (checkpoints, say)
        outbox.cursor, outbox.above = 19, set(range(21, 151)) - {120}
    lines = _lines_read(monkeypatch)
    with caplog.at_level(logging.WARNING):
        owed = [r["seq"] for r in outbox.owed(time.time_ns(), 0, everything=True, live=False)]
    if where == "malformed":
        assert "malformed line" in caplog.text
        assert owed == list(range(151, 202))
    else:  # each owed record is reached over the acknowledged ones before it, not line by line
        assert owed == [20, 120, *range(151, 202)]
        assert lines[0] < 51 + 2 * (_outbox._RUN + 1) + 10, f"{lines[0]} lines read one by one"


def test_cli_forward_returns_at_its_timeout_with_records_still_owed(journal_dir: Path, monkeypatch, capsys) -> None:
    from loom_otel.exporters.chain import _inner

    class Down(InMemorySpanExporter):
        def export(self, spans):  # the collector is unreachable
            from opentelemetry.sdk.trace.export import SpanExportResult

            return SpanExportResult.FAILURE

    dead_chain(journal_dir)
    monkeypatch.setattr(_inner, "inner_from_environment", lambda name: Down())
    assert main(["forward", str(journal_dir), "--timeout", "0.2"]) == 1
    assert "still owed" in capsys.readouterr().err


def test_one_lister_of_origins_and_segments(journal_dir: Path) -> None:
    chain = dead_chain(journal_dir)
    (journal_dir / ".hidden").mkdir()  # not a chain
    (chain / "notes.jsonl").write_text('{"seq": 99}\n')  # not a segment
    (chain / ".delivered").write_text("3")
    assert list_origins(journal_dir) == [chain.name]
    assert [p.name for _, p in all_segments(journal_dir)] == ["00000001.jsonl"]
    assert [r["seq"] for r in iter_records(journal_dir)] == [1, 2, 3, 4, 5, 6, 7]
