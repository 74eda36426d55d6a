"""Issue 46: ``loom-otel demo --phoenix URL`` shows a newcomer the path from a Phoenix span to the text: its
spans reach a real Phoenix with message content on, each call's Reasoning block a link to the viewer page
the demo prints, the printed ``serve`` command links back to Phoenix's trace pages by the project's id,
and Phoenix lists only traces that hold a model call (checkpoints never go there)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.phoenix import PhoenixServer, get_json, wait_until

pytestmark = pytest.mark.slow
VIEWER = "http://127.0.0.1:8377/executions/"


def test_demo_sends_phoenix_spans_whose_reasoning_links_to_the_viewer(tmp_path: Path, phoenix: PhoenixServer) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_OTEL_", "OTEL_"))}
    env.update(HOME=str(tmp_path), PYTHONPATH=os.pathsep.join([str(Path.cwd()), *sys.path]))
    done = subprocess.run(
        [sys.executable, "-m", "loom_otel.cli", "demo", "--dir", str(tmp_path / "demo"), "--phoenix", phoenix.base],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (default,) = [p for p in get_json(f"{phoenix.base}/v1/projects")["data"] if p["name"] == "default"]
    serve = next(line for line in done.stdout.splitlines() if " serve " in line)
    assert f"--trace-url '{phoenix.base}/projects/{default['id']}/traces/{{trace_id}}'" in serve
    assert "switched from Text to Markdown, links its Reasoning block" in done.stdout

    def demo_spans() -> list[dict] | None:
        spans = get_json(f"{phoenix.base}/v1/projects/default/spans?limit=1000")["data"]
        ours = [s for s in spans if str((s.get("attributes") or {}).get("loom.execution.id", "")).startswith("demo-")]
        return spans if len(ours) >= 5 else None  # 3 Anthropic calls and 2 Gemini calls

    spans = wait_until(demo_spans, 120, "the demo's calls in Phoenix")
    linked = []
    for span in spans:
        for message in json.loads((span.get("attributes") or {}).get("gen_ai.output.messages") or "[]"):
            linked += [p["content"] for p in message.get("parts", ()) if p.get("type") == "reasoning" and "url" in p]
    assert linked and all(
        re.fullmatch(rf"\[loom-otel reasoning text ref=.+\]\({re.escape(VIEWER)}demo-.+\)", c) for c in linked
    )
    assert not any(s["name"] == "loom.audit.record" for s in spans)  # checkpoints went to the archive only
    calls = {s["context"]["trace_id"] for s in spans if "gen_ai.operation.name" in (s.get("attributes") or {})}
    assert {s["context"]["trace_id"] for s in spans} == calls  # every listed trace holds a model call
