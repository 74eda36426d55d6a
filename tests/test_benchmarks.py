"""Every benchmark script still runs: each is started as a user starts it (``python bench_x.py`` from
``benchmarks/``), with tiny sizes, and must exit cleanly and print the rows its report promises. The
figures themselves are not checked (they are measurements, not results); a script the product's changes
broke is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

pytestmark = pytest.mark.slow


def _run(tmp_path: Path, *args: str, codes: tuple[int, ...] = (0,)) -> str:
    environment = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "LOOM_OTEL_CHECKPOINT_KEY": ""}
    done = subprocess.run(
        [sys.executable, *args],
        check=False,
        cwd=BENCHMARKS,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in codes, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize(
    ("script", "rows"),
    [
        ("bench_anthropic.py", ["create    default ", "stream    default ", "helper    default "]),
        ("bench_gemini.py", ["generate  default ", "stream    default "]),
        ("bench_floor.py", ["create    floor: ", "create    default "]),
        ("bench_phases.py", ["bare ", "floor: ", "loom-otel default ", "    store put ", "    binding record "]),
    ],
)
def test_an_sdk_benchmark_reports_its_variants(tmp_path: Path, script: str, rows: list[str]) -> None:
    out = _run(tmp_path, script, "--rounds", "1", "--calls", "3", "--root", str(tmp_path / "stores"))
    for row in rows:
        assert any(line.startswith(row) for line in out.splitlines()), (row, out)
    assert not any((tmp_path / "stores").iterdir())  # the run's stores and journals are removed


@pytest.mark.parametrize("call", ["anthropic-stream", "gemini-generate", "gemini-stream"])
def test_the_phases_benchmark_times_each_workload(tmp_path: Path, call: str) -> None:
    """Both SDKs, streams and one conversation: the SDK's own work and loom-otel's parts, by variant."""
    out = _run(tmp_path, "bench_phases.py", "--call", call, "--rounds", "1", "--calls", "3", "--root", str(tmp_path))
    rows = ["bare ", "loom-otel default ", "loom-otel, one execution() ", "    journal record ", "    binding record "]
    for row in rows:
        assert any(line.startswith(row) for line in out.splitlines()), (row, out)
    assert not any(tmp_path.glob("loom-bench-*"))


def test_the_peers_benchmark_measures_the_four_workloads(tmp_path: Path) -> None:
    out = _run(tmp_path, "bench_peers.py", "--rounds", "1", "--calls", "3", "--root", str(tmp_path))
    for workload in ("anthropic-create", "anthropic-stream", "gemini-generate", "gemini-stream"):
        for variant in ("bare", "loom-otel default", "loom-otel, one execution()"):
            assert any(line.startswith(f"{workload} ") and f" {variant} " in line for line in out.splitlines()), (
                workload,
                variant,
                out,
            )
    assert "scrubber CPU per call" in out
    assert not any(tmp_path.glob("loom-bench-*"))


@pytest.mark.peers
def test_the_peers_benchmark_reports_the_scrubber_beside_each_peer(tmp_path: Path) -> None:
    args = ("--rounds", "1", "--calls", "3", "--only", "anthropic-create,gemini-stream", "--root", str(tmp_path))
    lines = _run(tmp_path, "bench_peers.py", *args).splitlines()
    at = lines.index(next(line for line in lines if line.startswith("scrubber CPU per call")))
    for workload in ("anthropic-create", "gemini-stream"):
        rows = [line for line in lines[at:] if line.startswith(f"{workload} ")]
        assert any(" OpenInference + loom-otel " in row for row in rows), (workload, lines)
        assert any(" OpenLLMetry + loom-otel " in row for row in rows) or not any(
            "OpenLLMetry (text on spans)" in line for line in lines
        )
    # the benchmark's providers batch: the peers' spans are scrubbed on the export thread, measured there
    at = lines.index(next(line for line in lines if line.startswith("scrubber CPU per span on the batch")))
    assert any("openinference" in line for line in lines[at:]), lines


def test_the_concurrency_benchmark_measures_async_calls_and_threads(tmp_path: Path) -> None:
    args = ["--rounds", "1", "--calls", "4", "--tasks", "2", "--threads", "2", "--root", str(tmp_path)]
    out = _run(tmp_path, "bench_concurrency.py", *args)
    only = _run(tmp_path, "bench_concurrency.py", *args, "--only", "threads")
    assert not any(line.startswith("async ") for line in only.splitlines()), only
    assert any(line.startswith("threads create x2") for line in only.splitlines()), only
    for workload in ("async create x2", "async gemini stream x2", "threads create x2", "threads generate x2"):
        assert any(line.startswith(workload) and " loom-otel default " in line for line in out.splitlines()), (
            workload,
            out,
        )
    assert not any(tmp_path.glob("loom-bench-*"))


def test_the_concurrency_benchmark_compares_with_the_official_instrumentation_and_times_each_lock_wait(
    tmp_path: Path,
) -> None:
    """Issue 49: the ratio to the official instrumentation's and to its upload hook's (which also keeps the
    text), and the longest single wait on a lock."""
    args = ["--rounds", "1", "--calls", "4", "--tasks", "2", "--threads", "2", "--root", str(tmp_path)]
    out = _run(tmp_path, "bench_concurrency.py", *args)
    header = next(line for line in out.splitlines() if line.startswith("workload "))
    assert "of official" in header and "of upload" in header and "longest wait ms" in header
    assert "waits > 1 ms" in header and "holds > 1 ms" in header
    for workload in ("async stream x2", "threads create x2", "threads generate x2"):
        rows = [line for line in out.splitlines() if line.startswith(workload) and " loom-otel default " in line]
        assert len(rows) == 1, out
        figures = rows[0].split("loom-otel default")[1].split()
        assert figures[8].isdigit(), rows[0]  # the holds over 1 ms, counted
        if any(" official OTel (no content) " in line for line in out.splitlines()):
            assert figures[2] != "-" and figures[3] != "-", rows[0]  # ratios to the official's and the hook's
            upload = [line for line in out.splitlines() if line.startswith(workload) and " upload hook " in line]
            assert len(upload) == 1, out
    assert "the upload hook dropped" not in out


def test_the_disk_benchmark_measures_latency_beside_another_writer(tmp_path: Path) -> None:
    out = _run(
        tmp_path, "bench_disk.py", *("--calls", "3", "--rounds", "1", "--noise-mib", "4", "--root", str(tmp_path))
    )
    memory = Path("/dev/shm")  # the control (the writer's processor time alone) runs where there is one
    control = memory.is_dir() and os.access(memory, os.W_OK)
    for durability in ("batch", "always"):
        for disk in ("quiet", "writer", "memory") if control else ("quiet", "writer"):
            assert any(line.split()[:2] == [durability, disk] for line in out.splitlines()), (durability, disk, out)
        assert f"p99 moved by the other program, {durability}: " in out
        moved = f"p99 moved by the same program writing to memory (no disk), {durability}: "
        assert (moved in out) == control, out
    assert control or "the control (the writer's processor time alone) was not run" in out
    assert not list(memory.glob("loom-bench-other-program-*"))  # the control's file is removed
    assert not any(tmp_path.glob("loom-bench-*"))  # the run's stores, journals and the writer's file are removed


@pytest.mark.parametrize("call", ["create", "stream", "gemini-generate", "gemini-stream"])
def test_the_instruction_count_benchmark_runs_every_variant(call: str, tmp_path: Path) -> None:
    """Without valgrind (``--counter none``): every variant, each part taken out included, instruments
    and calls (a part's replacement names an attribute that must still exist, or the run fails)."""
    out = _run(
        tmp_path,
        "bench_instructions.py",
        *("--counter", "none", "--calls", "2", "--warm", "1", "--call", call, "--root", str(tmp_path)),
    )
    rows = ["bare ", "default ", "  the request guard ", "  the binding record ", "  the journal record "]
    rows += ["floor: "] if call == "create" else []
    for row in rows:
        assert any(line.startswith(row) for line in out.splitlines()), (row, out)
    assert not any(tmp_path.glob("loom-bench-*"))  # the run's stores and journals are removed


@pytest.mark.peers
def test_the_citizenship_benchmark_reports_every_peer(tmp_path: Path) -> None:
    out = _run(tmp_path, "bench_citizen.py", "--calls", "3", "--rounds", "1")
    for name in ("loom", "+scrub", "+metrics", "openllmetry+scrub", "openinference+scrub"):
        assert any(line.split()[:1] == [name] for line in out.splitlines()), (name, out)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["bench_continuation.py", "--calls", "8", "--rounds", "1"], "pass / bare strict"),
        (["bench_chain.py", "--events", "300", "--threads", "2"], "ratio to plain OTLP"),
        (["bench_read.py", "--records", "2000", "--queries", "5", "--dir", "{tmp}/read"], "bounded query"),
        (["bench_store_scope.py", "--calls", "20", "--rounds", "1", "--dir", "{tmp}"], "us"),
        (["bench_live.py", "--rounds", "2", "--calls", "2", "--transport", "inprocess"], "worst overhead"),
        (["bench_tree.py", "--records", "2000", "--every", "100", "--rounds", "1"], "tree per capture"),
    ],
    ids=["continuation", "chain", "read", "store-scope", "live", "tree"],
)
def test_a_benchmark_runs(tmp_path: Path, args: list[str], expected: str) -> None:
    codes = (0, 1) if args[0] == "bench_live.py" else (0,)  # it exits 1 when its target is missed
    out = _run(tmp_path, *[arg.replace("{tmp}", str(tmp_path)) for arg in args], codes=codes)
    assert expected in out, out


def test_the_viewer_benchmark_reads_parts_and_pages(tmp_path: Path) -> None:
    out = _run(tmp_path, "bench_serve.py", "--captures", "300", "--readers", "4", "--seconds", "2", "--workers", "2")
    assert "reads/s" in out and "2 workers" in out
    for row in ("part ", "page "):
        assert any(line.startswith(row) and " p99 " in line for line in out.splitlines()), (row, out)
    for row in ("first start (the capture index built): list page in ", "restart over 300 captures: list page in "):
        assert any(line.startswith(row) for line in out.splitlines()), (row, out)
    (resident,) = [line for line in out.splitlines() if line.startswith("resident memory per worker: ")]
    assert resident.count(" MiB") == 2, out  # one figure per worker
