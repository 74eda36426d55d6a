"""Issue 46: one click from Arize Phoenix to the text. A call captured with ``LOOM_OTEL_VIEWER_URL`` and
content capture on goes to a real Phoenix; in a real browser (Chromium, Selenium) a person opens the
trace in Phoenix, switches the answer's message to Markdown and clicks the Reasoning block's link:
the viewer opens in a new tab at the call's page; signed in, the reader sees the text. Screenshots of
both are saved (``VIEWER_SCREENSHOTS=dir`` keeps them, for the README: docs/screenshots)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request
from tests.e2e_trail.receiver import free_port
from tests.support.phoenix import PhoenixServer, get_json, wait_until
from tests.viewer.conftest import CANARY, TOKENS, capture_evidence
from tests.viewer.test_browser import _browser, serving

pytestmark = pytest.mark.slow
CONTENT = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}


def test_one_click_from_a_phoenix_span_to_the_reasoning_text(tmp_path: Path, phoenix: PhoenixServer) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from selenium.webdriver.common.by import By

    port = free_port()
    viewer = f"http://127.0.0.1:{port}"
    captured = capture_evidence(tmp_path, viewer_url=viewer)  # tokens, policy, store and journal
    config = ReasoningConfig(store=captured.store_url, journal=captured.journal, viewer_url=viewer)
    with instrumented(AnthropicInstrumentor(), config=config, environ=CONTENT) as telemetry:
        with execution("run-click", tenant="acme", principal="alice", owner=None), step("s0"):
            MODES["sync"](Simulator(reasoning_text=CANARY), request())
    (call,) = [s for s in telemetry.spans if any(e.name == "loom.reasoning.captured" for e in s.events)]
    trace_id, url = f"{call.context.trace_id:032x}", call.attributes["loom.reasoning.url"]
    assert url.startswith(f"{viewer}/executions/run-click?tenant=acme&step=s0")
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{phoenix.grpc_port}", insecure=True)
    exporter.export(list(telemetry.spans))
    exporter.shutdown()
    assert find_leaks([CANARY], spans=telemetry.spans) == []

    def project_id() -> str | None:
        spans = get_json(f"{phoenix.base}/v1/projects/default/spans?limit=1000")["data"]
        if not any(s["context"]["trace_id"] == trace_id for s in spans):
            return None
        (default,) = [p for p in get_json(f"{phoenix.base}/v1/projects")["data"] if p["name"] == "default"]
        return str(default["id"])

    trace_page = f"{phoenix.base}/projects/{wait_until(project_id, 120, 'the call in Phoenix')}/traces/{trace_id}"
    shots = Path(os.environ.get("VIEWER_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    with serving(captured, port, workers=1, log=tmp_path / "serve.log"):
        browser = _browser()
        try:
            browser.set_window_size(1400, 1000)
            browser.get(trace_page)
            markdown = wait_until(
                lambda: browser.find_elements(By.XPATH, "//*[normalize-space(text())='Markdown']"),
                120,
                "the message views in Phoenix",
            )
            markdown[-1].click()  # the answer's message, as Markdown (Phoenix keeps the choice)
            (link,) = wait_until(
                lambda: browser.find_elements(By.CSS_SELECTOR, f"a[href^='{viewer}/executions/']"),
                30,
                "the Reasoning block's link",
            )
            assert link.get_attribute("href") == url and link.text.startswith("loom-otel reasoning text ref=")
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
            browser.save_screenshot(str(shots / "phoenix-reasoning-link.png"))
            phoenix_tab = browser.current_window_handle
            link.click()  # the one click
            new = wait_until(lambda: [h for h in browser.window_handles if h != phoenix_tab], 30, "the viewer's tab")
            browser.switch_to.window(new[0])
            wait_until(lambda: browser.current_url.startswith(f"{viewer}/executions/run-click"), 30, "the viewer")
            assert browser.title.startswith("Not found")  # not signed in yet: the same 404 as anything else
            browser.find_element(By.LINK_TEXT, "Sign in").click()
            browser.find_element(By.NAME, "token").send_keys(TOKENS["alice"])
            browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            wait_until(lambda: browser.title.startswith("Execution run-click"), 30, "the execution page")
            (text,) = browser.find_elements(By.CSS_SELECTOR, "pre.untrusted")
            assert CANARY in text.text
            browser.save_screenshot(str(shots / "phoenix-link-opens.png"))
        finally:
            browser.quit()
