"""Who read what: ``/reads`` and ``GET /api/reads`` list the viewer's read records (read back from the reads
journal) with their filters and paging, to the tenant's auditors whole and to a principal only the reads of
the parts whose capture is theirs; each part of an execution says how many times and by whom it was read.
No reasoning text is on these pages."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from loom_otel.audit import PartReading
from loom_otel.audit._index import index_directory
from loom_otel.core import ReasoningConfig
from loom_otel.testing import find_leaks
from loom_otel.viewer import ReadRecord
from loom_otel.viewer import read_records as all_read_records
from loom_otel.viewer._reads import ReadLog
from loom_otel.viewer._who_read import PartReads, ReadsJournal
from tests.live.conftest import Server
from tests.viewer.conftest import CANARY, TOKENS, Captured, capture_run, viewer_app

READERS = {**TOKENS, "gus": "gus-token-0123456789abcdef0000"}
"""The viewer's tokens: gus audits another tenant."""
POLICY = '[tenants.acme]\nauditors = ["ada"]\n[tenants.globex]\nauditors = ["gus"]\n'


@dataclass(frozen=True)
class Reads:
    server: Server
    middle: str
    """A time (ISO 8601) between the first reads and the later ones."""


def _get(server: Server, path: str, principal: str | None = None) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {READERS[principal]}"} if principal else {}
    return httpx2.get(f"{server.url}{path}", headers=headers, timeout=30)


def _read(server: Server, principal: str, execution_id: str) -> int:
    return _get(server, f"/api/executions/{execution_id}?tenant=acme", principal).status_code


@pytest.fixture
def reads(tmp_path: Path):
    """Tenant acme: alice's run, bob's run, and a run with a step of each (alice's, then bob's attempt);
    then reads: alice and ada read alice's run, bob is refused it; later ada reads bob's run and the
    shared one, and alice the shared one (her part only)."""
    store_dir, journal = tmp_path / "store", tmp_path / "journal"
    config = ReasoningConfig(store=f"file://{store_dir}", journal=journal)
    capture_run(config, f"{CANARY} alice thinks", "run-alice", principal="alice")
    capture_run(config, f"{CANARY} bob thinks", "run-bob", principal="bob")
    capture_run(config, f"{CANARY} shared, alice's", "run-shared", principal="alice")
    capture_run(config, f"{CANARY} shared, bob's", "run-shared", principal="bob")
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("[tokens]\n" + "".join(f'{p} = "{t}"\n' for p, t in READERS.items()))
    (tmp_path / "policy.toml").write_text(POLICY)
    app = viewer_app(Captured(tmp_path, f"file://{store_dir}", journal, tokens, tmp_path / "policy.toml", trace_id=""))
    with Server(app) as server:
        assert [_read(server, p, "run-alice") for p in ("alice", "ada", "bob")] == [200, 200, 404]
        time.sleep(0.05)
        middle = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
        time.sleep(0.05)
        assert [_read(server, p, e) for p, e in (("ada", "run-bob"), ("ada", "run-shared"))] == [200, 200]
        assert _read(server, "alice", "run-shared") == 200
        yield Reads(server, middle)


def _listed(server: Server, query: str, principal: str) -> list[tuple[str, str, str]]:
    """(reader, execution, outcome) of each read listed, newest first."""
    response = _get(server, f"/api/reads{query}", principal)
    assert response.status_code == 200, response.text
    assert response.headers["X-Total-Count"] == str(len(response.json())) or "limit=" in query
    return [(r["reader"], r["execution_id"], r["outcome"]) for r in response.json()]


def test_the_tenants_auditor_sees_every_read_newest_first_with_its_part(reads: Reads) -> None:
    listed = _listed(reads.server, "", "ada")
    assert listed == [
        ("alice", "run-shared", "ok"),
        ("ada", "run-shared", "ok"),
        ("ada", "run-shared", "ok"),
        ("ada", "run-bob", "ok"),
        ("bob", "run-alice", "not-found"),
        ("ada", "run-alice", "ok"),
        ("alice", "run-alice", "ok"),
    ]
    first = _get(reads.server, "/api/reads", "ada").json()[-1]
    (part,) = first["parts"]
    assert (part["step_id"], part["index"], part["kind"]) == ("s0", 0, "summary") and part["attempt"] >= 1
    assert first["ref"] and first["digest"] and first["tenant"] == "acme"
    refused = _get(reads.server, "/api/reads?outcome=not-found", "ada").json()
    assert [(r["reader"], r["parts"], r["ref"]) for r in refused] == [("bob", [], "")]
    page = _get(reads.server, "/reads", "ada").text
    assert "<th>reader</th>" in page and '<td class="outcome">not-found</td>' in page
    assert 'href="/executions/run-shared?tenant=acme"' in page and "reads 1-7 of 7" in page


def test_each_filter(reads: Reads) -> None:
    server = reads.server
    assert {r[0] for r in _listed(server, "?reader=alice", "ada")} == {"alice"}
    assert len(_listed(server, "?reader=alice", "ada")) == 2
    assert _listed(server, "?execution=run-bob", "ada") == [("ada", "run-bob", "ok")]
    assert _listed(server, "?outcome=not-found", "ada") == [("bob", "run-alice", "not-found")]
    # whose captures were read: bob's part of the shared run and his run; never a refused read
    assert _listed(server, "?principal=bob", "ada") == [("ada", "run-shared", "ok"), ("ada", "run-bob", "ok")]
    assert len(_listed(server, "?principal=alice", "ada")) == 4
    ref = _get(server, "/api/executions/run-bob?tenant=acme", "bob").json()["steps"][0]["attempts"][0]["parts"][0]
    by_part = _listed(server, f"?part={ref['ref']}", "ada")
    assert by_part == [("bob", "run-bob", "ok"), ("ada", "run-bob", "ok")]
    assert _listed(server, f"?part={ref['digest'][:20]}", "ada") == by_part
    assert len(_listed(server, "?tenant=acme", "ada")) == 8  # bob's own read of run-bob just now
    assert _listed(server, "?tenant=globex", "ada") == []
    later = _listed(server, f"?since={reads.middle}&reader=ada", "ada")
    assert [e for _, e, _ in later] == ["run-shared", "run-shared", "run-bob"]
    earlier = _listed(server, f"?until={reads.middle}", "ada")
    assert [(r, e) for r, e, _ in earlier] == [("bob", "run-alice"), ("ada", "run-alice"), ("alice", "run-alice")]
    bad = _get(server, "/api/reads?since=yesterday", "ada")
    assert bad.status_code == 400 and "not a time" in bad.json()["error"]
    page = _get(server, "/reads?reader=alice&limit=1", "ada").text
    assert 'value="alice"' in page and "reads 1-1 of 2" in page
    assert 'rel="next" href="/reads?reader=alice&amp;offset=1"' in page


def test_paging(reads: Reads) -> None:
    first = _get(reads.server, "/api/reads?limit=3", "ada")
    assert first.headers["X-Total-Count"] == "7" and len(first.json()) == 3
    rest = _get(reads.server, "/api/reads?limit=5&offset=3", "ada")
    assert len(rest.json()) == 4
    both = [(r["origin"], r["seq"]) for r in first.json() + rest.json()]
    assert len(set(both)) == 7


def test_a_principal_sees_only_the_reads_of_their_own_captures(reads: Reads) -> None:
    # alice: the reads of her run and of her part of the shared run; not bob's refusal, not ada's read of
    # bob's part of the shared run
    assert _listed(reads.server, "", "alice") == [
        ("alice", "run-shared", "ok"),
        ("ada", "run-shared", "ok"),
        ("ada", "run-alice", "ok"),
        ("alice", "run-alice", "ok"),
    ]
    assert _listed(reads.server, "?execution=run-shared", "bob") == [("ada", "run-shared", "ok")]
    assert ("alice", "run-shared", "ok") not in _listed(reads.server, "", "bob")
    assert _listed(reads.server, "", "gus") == []  # the auditor of another tenant
    assert _listed(reads.server, "", "mallory") == []
    assert "No read you may see" in _get(reads.server, "/reads", "gus").text
    assert _get(reads.server, "/api/reads").status_code == 404  # anonymous
    assert _get(reads.server, "/reads").status_code == 404


def test_each_part_says_how_many_times_and_by_whom_it_was_read(reads: Reads) -> None:
    document = _get(reads.server, "/api/executions/run-alice?tenant=acme", "alice").json()
    (part,) = document["steps"][0]["attempts"][0]["parts"]
    assert part["reads"] == {"count": 3, "readers": ["alice", "ada"]}  # this read included
    shared = _get(reads.server, "/api/executions/run-shared?tenant=acme", "ada").json()
    counts = [p["reads"] for a in shared["steps"][0]["attempts"] for p in a["parts"]]
    assert counts == [{"count": 3, "readers": ["ada", "alice"]}, {"count": 2, "readers": ["ada"]}]
    page = _get(reads.server, "/executions/run-alice?tenant=acme", "ada").text
    assert "<th>read</th>" in page and '<td class="reads">4 times by alice, ada</td>' in page
    # bob sees his part's readers, never alice's part's
    mine = _get(reads.server, "/api/executions/run-shared?tenant=acme", "bob").json()
    (bobs,) = [p for a in mine["steps"][0]["attempts"] for p in a["parts"]]
    assert bobs["reads"] == {"count": 3, "readers": ["ada", "bob"]}


def test_no_reasoning_text_on_the_reads_pages(reads: Reads) -> None:
    texts = [
        _get(reads.server, path, who).text
        for path in ("/reads", "/api/reads", "/reads?outcome=ok", "/api/reads?execution=run-shared")
        for who in ("ada", "alice")
    ]
    assert all("run-alice" in t for t in texts[:2])
    indexes = index_directory()  # the capture and reads indexes (their write-ahead logs included)
    assert any(indexes.glob("*.sqlite"))
    assert not find_leaks([CANARY, "alice thinks", "shared, bob's"], texts=texts, directories=[indexes])


def _every(journal: ReadsJournal) -> list[ReadRecord]:
    """Every read record the journal's index holds, in chain order per origin."""
    return list(journal.reads({}, newest_first=False))


def test_the_reads_journal_is_followed_as_it_grows(tmp_path: Path) -> None:
    """Each call indexes what was appended since: a torn last line waits until it is whole, and a journal
    that shrank is indexed again from its start; always the same records as a full read (less the chain
    hash, which the index does not keep)."""
    directory = tmp_path / "reads"
    journal, log = ReadsJournal(directory), ReadLog(directory)

    def read_records(directory: Path) -> list[ReadRecord]:
        return [dataclasses.replace(r, record_hash="") for r in all_read_records(directory)]

    assert _every(journal) == []
    log.refused("bob", "acme", "run-x")
    log.flush()
    assert [r.reader for r in _every(journal)] == ["bob"]
    log.refused("eve", "acme", "run-y")
    log.flush()
    assert _every(journal) == list(read_records(directory)) and len(_every(journal)) == 2
    log.refused("cal", "acme", "run-y")
    log.flush()
    (segment,) = directory.glob("*/*.jsonl")
    written = segment.read_bytes()
    line = written.splitlines(keepends=True)[-1]
    segment.write_bytes(written[: -len(line)] + line[:40])  # the last line still being written
    assert len(_every(journal)) == 2
    with segment.open("ab") as fh:
        fh.write(line[40:])
    assert _every(journal) == list(read_records(directory)) and len(_every(journal)) == 3
    segment.write_bytes(b"")
    assert _every(journal) == []


def test_the_reads_of_one_execution_are_tallied_not_scanned(tmp_path: Path) -> None:
    """``tallies_of``: how many times each part of one execution and tenant was read and by whom (what a
    page's who-read shows, from the reads index): the same as counting ``records`` with that execution,
    tenant and a ref, readers in order of first read, as the journal grows; refused reads name no part."""
    directory = tmp_path / "reads"
    journal, log = ReadsJournal(directory), ReadLog(directory)

    def part(ref: str) -> PartReading:
        return PartReading("s1", 1, True, 0, "text", "ok", 4, "sha256:" + "0" * 64, ref)

    log.parts("bob", "acme", "run-x", [part("r1"), part("r2")])
    log.parts("eve", "globex", "run-x", [part("r1")])
    log.parts("ann", "acme", "run-y", [part("r1")])
    log.parts("cal", "acme", "run-x", [part("r1")])
    log.parts("bob", "acme", "run-x", [part("r1")])
    log.refused("dan", "acme", "run-x")
    log.flush()

    def counted(execution_id: str, tenant: str | None) -> dict[str, PartReads]:
        counts: dict[str, list[str]] = {}
        for r in _every(journal):
            if (r.execution_id, r.tenant) == (execution_id, tenant) and r.ref:
                counts.setdefault(r.ref, []).append(r.reader)
        return {ref: PartReads(len(readers), tuple(dict.fromkeys(readers))) for ref, readers in counts.items()}

    assert (
        journal.tallies_of("run-x", "acme")
        == {"r1": PartReads(3, ("bob", "cal")), "r2": PartReads(1, ("bob",))}
        == counted("run-x", "acme")
    )
    assert journal.tallies_of("run-x", "globex") == {"r1": PartReads(1, ("eve",))}
    assert journal.tallies_of("run-x", None) == {} and journal.tallies_of("run-z", "acme") == {}
    log.parts("dan", "acme", "run-x", [part("r2")])
    log.flush()
    assert journal.tallies_of("run-x", "acme") == counted("run-x", "acme")
    assert journal.tallies_of("run-x", "acme")["r2"] == PartReads(2, ("bob", "dan"))


def test_concurrent_readers_are_each_recorded_in_one_valid_chain(captured: Captured) -> None:
    """Twenty readers at once through the real app: every read answered holds its own read in the
    counts (recorded before the answer), the reads journal holds one record per read, none lost, in one
    valid chain, and the text is in none of it."""
    from concurrent.futures import ThreadPoolExecutor

    from starlette.testclient import TestClient

    from loom_otel.audit import verify
    from tests.viewer.conftest import bearer, read_count, viewer_app

    app = viewer_app(captured)
    with TestClient(app) as client:

        def one(_: int) -> tuple[int, int]:
            response = client.get("/api/executions/run-alice?tenant=acme", headers=bearer("alice"))
            return response.status_code, read_count(response.json())

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(one, range(20)))
    assert all(status == 200 for status, _ in answers)
    assert sorted(count for _, count in answers)[-1] == 20 and all(count >= 1 for _, count in answers)
    app.state.reads.close()
    reads = list(all_read_records(captured.root / "reads"))
    assert len(reads) == 20 and {(r.reader, r.outcome, r.execution_id) for r in reads} == {("alice", "ok", "run-alice")}
    assert [r.seq for r in reads] == sorted(r.seq for r in reads)
    report = verify(captured.root / "reads")
    assert report.ok, report
    assert not find_leaks([CANARY], directories=[captured.root / "reads"])


def test_a_worker_started_again_reads_no_read_record_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reads index is persisted: a new worker (a new ``ReadsJournal``, connections of its own) answers
    who read what without parsing a line another worker indexed, and parses only what was appended since."""
    import threading

    from loom_otel.audit import _index

    directory = tmp_path / "reads"
    log = ReadLog(directory)
    part = PartReading("s1", 1, True, 0, "text", "ok", 4, "sha256:" + "0" * 64, "r1")
    for reader in ("ann", "bob", "ann"):
        log.parts(reader, "acme", "run-x", [part])
    log.flush()
    assert ReadsJournal(directory).tallies_of("run-x", "acme") == {"r1": PartReads(3, ("ann", "bob"))}
    parsed: list[bytes] = []
    real = _index.parse_read_line

    def counting(line: bytes) -> object:
        parsed.append(line)
        return real(line)

    monkeypatch.setattr(_index, "parse_read_line", counting)
    answers: list[object] = []

    def restarted() -> None:  # another thread: a connection of its own, as a worker started again has
        answers.append(ReadsJournal(directory).tallies_of("run-x", "acme"))
        log.parts("cal", "acme", "run-x", [part])
        log.flush()
        answers.append(ReadsJournal(directory).tallies_of("run-x", "acme"))

    thread = threading.Thread(target=restarted)
    thread.start()
    thread.join()
    assert answers == [{"r1": PartReads(3, ("ann", "bob"))}, {"r1": PartReads(4, ("ann", "bob", "cal"))}]
    assert len(parsed) == 1 and b'"cal"' in parsed[0]  # the one line appended since


def test_who_read_never_waits_for_another_writer_and_counts_the_asking_read(tmp_path: Path) -> None:
    """``tallies_of(including=...)``: while another writer holds the reads index, a read answers at once,
    with its own records counted though they are not indexed yet (and never twice once they are)."""
    import fcntl
    import os
    import threading

    from loom_otel.audit._index import index_path_for

    directory = tmp_path / "reads"
    journal, log = ReadsJournal(directory), ReadLog(directory)
    part = PartReading("s1", 1, True, 0, "text", "ok", 4, "sha256:" + "0" * 64, "r1")
    other = PartReading("s2", 1, True, 0, "text", "ok", 4, "sha256:" + "1" * 64, "r2")
    first = log.parts("ann", "acme", "run-x", [part])
    log.flush()
    assert journal.tallies_of("run-x", "acme", including=first) == {"r1": PartReads(1, ("ann",))}
    index = index_path_for(directory.absolute())
    holder = os.open(index.with_name(f".{index.name}.write"), os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)  # another writer, indexing
    try:
        log.parts("cal", "acme", "run-x", [part])  # another read meanwhile: counted once indexed
        second = log.parts("bob", "acme", "run-x", [part, other])
        log.flush()
        answers: list[object] = []
        asking = threading.Thread(target=lambda: answers.append(journal.tallies_of("run-x", "acme", including=second)))
        asking.start()
        asking.join(60)  # were it to wait for the writer, it would wait until the lock is let go below
        assert not asking.is_alive()
        assert answers == [{"r1": PartReads(2, ("ann", "bob")), "r2": PartReads(1, ("bob",))}]
    finally:
        os.close(holder)
    expected = {"r1": PartReads(3, ("ann", "cal", "bob")), "r2": PartReads(1, ("bob",))}
    assert journal.tallies_of("run-x", "acme", including=second) == expected  # indexed now: not twice
    assert journal.tallies_of("run-x", "acme") == expected
