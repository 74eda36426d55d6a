"""A person reads reasoning from a trace: spans captured through the real SDK go to a real Phoenix; the
``loom.reasoning.url`` of a span there is opened in a real browser (system Chromium, Selenium) against
``loom-otel serve`` (a uvicorn subprocess, two workers); the reader signs in with a token and sees the
text, rendered inert (HTML and script in it are text in the DOM). Another principal and an anonymous
client get 404; two workers and a restart answer the same; the reads appear in ``audit reads`` and
verify. Screenshots of the pages are saved (``VIEWER_SCREENSHOTS=dir`` keeps them, for the README)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.e2e_trail.receiver import free_port
from tests.support.phoenix import PhoenixServer, get_json, wait_until
from tests.viewer.conftest import CANARY, TOKENS, bearer, capture_evidence, read_count, without_reads

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def serving(captured, port: int, *, workers: int, log: Path) -> Iterator[str]:
    """``loom-otel serve`` as a person starts it, in a subprocess; its base URL once it answers."""
    command = [
        sys.executable, "-m", "loom_otel.cli", "serve", "--journal", str(captured.journal),
        "--store", captured.store_url, "--tokens", str(captured.tokens), "--policy", str(captured.policy),
        "--reads-journal", str(captured.root / "reads"), "--port", str(port), "--workers", str(workers),
        "--trace-url", "http://127.0.0.1:6006/projects/default/traces/{trace_id}",
    ]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    with log.open("ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            wait_until(lambda: httpx2.get(f"{base}/signin", timeout=2).status_code == 200, 60, "loom-otel serve")
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip("Chromium and chromedriver are not installed (.ci/install-e2e.sh)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,800"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(driver), options=options)


def _reasoning_url_in_phoenix(base: str, port: int) -> str:
    def find() -> str | None:
        for span in get_json(f"{base}/v1/projects/default/spans?limit=100")["data"]:
            url = (span.get("attributes") or {}).get("loom.reasoning.url")
            if url and url.startswith(f"http://127.0.0.1:{port}/executions/run-alice"):  # this session's
                return str(url)
        return None

    return str(wait_until(find, 120, "a span with loom.reasoning.url in Phoenix"))


def test_a_person_follows_the_link_from_phoenix_and_reads_the_reasoning(tmp_path, phoenix: PhoenixServer):
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from selenium.webdriver.common.by import By

    port = free_port()
    captured = capture_evidence(tmp_path, viewer_url=f"http://127.0.0.1:{port}")
    shots = Path(os.environ.get("VIEWER_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "serve.log"
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{phoenix.grpc_port}", insecure=True)
    exporter.export(list(captured.spans))
    exporter.shutdown()
    url = _reasoning_url_in_phoenix(phoenix.base, port)
    assert url.startswith(f"http://127.0.0.1:{port}/executions/run-alice?tenant=acme&step=s0")

    with serving(captured, port, workers=2, log=log) as base:
        browser = _browser()
        try:
            browser.get(url)
            assert browser.title.startswith("Not found")  # not signed in: the same 404 as anything else
            browser.find_element(By.LINK_TEXT, "Sign in").click()
            browser.find_element(By.NAME, "token").send_keys(TOKENS["alice"])
            browser.save_screenshot(str(shots / "viewer-signin.png"))
            browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            wait_until(lambda: browser.title.startswith("Execution run-alice"), 20, "the execution page")
            (text,) = browser.find_elements(By.CSS_SELECTOR, "pre.untrusted")
            assert CANARY in text.text and "<script>window.pwned = 1;</script>" in text.text
            assert browser.find_elements(By.ID, "bold") == []  # the model's HTML is text, not elements
            assert browser.execute_script("return typeof window.pwned") == "undefined"
            assert "Untrusted model output" in browser.find_element(By.CSS_SELECTOR, ".label").text
            browser.save_screenshot(str(shots / "viewer-execution.png"))
            browser.get(f"{base}/")
            assert "run-alice" in browser.page_source and "run-bob" not in browser.page_source
            browser.save_screenshot(str(shots / "viewer-executions.png"))
        finally:
            browser.quit()

        api = f"{base}/api/executions/run-alice?tenant=acme"
        assert httpx2.get(api, headers=bearer("bob"), timeout=10).status_code == 404
        assert httpx2.get(api, timeout=10).status_code == 404
        documents = [httpx2.get(api, headers=bearer("alice"), timeout=10).json() for _ in range(12)]
        answers = {without_reads(d) for d in documents}
        assert len(answers) == 1  # two workers, one answer (but for the read counts, which each read raises)
        counts = [read_count(d) for d in documents]
        assert counts == sorted(counts) and counts[-1] > counts[0]

    with serving(captured, port, workers=1, log=log):  # restarted (one worker now): the same answer
        assert {without_reads(httpx2.get(api, headers=bearer("alice"), timeout=10).json())} == answers

    reads = subprocess.run(
        [sys.executable, "-m", "loom_otel.cli", "audit", "reads", "--journal", str(captured.root / "reads"), "--json"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    listed = json.loads(reads.stdout)
    assert sum(1 for r in listed if r["reader"] == "alice" and r["outcome"] == "ok") >= 14  # browser + 13 API reads
    assert any(r["reader"] == "bob" and r["outcome"] == "not-found" for r in listed)
    assert len({r["origin"] for r in listed}) >= 2  # each worker process writes its own chain
    verified = subprocess.run(
        [sys.executable, "-m", "loom_otel.cli", "verify", str(captured.root / "reads")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
