"""A restarted process (same store, same journal, same execution id) continues a redact-mode
conversation without a drop: the bindings are durable beside the journal, the text is in the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys
from pathlib import Path
from loom_otel.core import ReasoningConfig, execution
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator

root, phase = Path(sys.argv[1]), sys.argv[2]
history_file = root / "history.json"
tool = {"name": "get_weather", "description": "w",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [tool]}
config = ReasoningConfig(store=f"file://{root / 'store'}", journal=root / "journal", transcript="redact")
sim = Simulator(strict=True, reasoning_text="CANARY-restart-0c4e weigh the forecast")
history = json.loads(history_file.read_text()) if phase == "second" else [
    {"role": "user", "content": "Umbrella for Lyon?"}]
with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("run-restart"):
    message = sim.anthropic_client().messages.create(messages=history, **kw)
history.append({"role": message.role, "content": list(message.content)})  # to_param() (anthropic >= 1)
if message.stop_reason == "tool_use":
    call = next(b for b in message.content if b.type == "tool_use")
    history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "rain"}]})
else:
    history.append({"role": "user", "content": "Thanks. And Paris?"})
history_file.write_text(json.dumps(history, default=lambda o: o.model_dump(mode="json")))
sent = sim.requests[-1].body["messages"]
print(json.dumps({
    "stop": message.stop_reason,
    "dropped": len(reasoning_events(telemetry.spans, "loom.reasoning.dropped")),
    "sent_thinking": [b["thinking"] for m in sent if m["role"] == "assistant" for b in m["content"]
                      if b["type"] == "thinking"],
}))
"""


def _run(root: Path, phase: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), phase], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_restarted_process_continues_redacted_conversation(tmp_path: Path) -> None:
    first = _run(tmp_path, "first")
    assert first["stop"] == "tool_use"
    assert "CANARY-restart-0c4e" not in (tmp_path / "history.json").read_text()  # the app's history

    second = _run(tmp_path, "second")  # a new process: continues the in-flight tool round
    assert second["stop"] == "end_turn"
    assert second["dropped"] == 0
    sent = second["sent_thinking"]
    assert isinstance(sent, list) and len(sent) == 1 and "CANARY-restart-0c4e" in sent[0]

    third = _run(tmp_path, "second")  # and a later turn, with both earlier blocks rehydrated
    assert third["dropped"] == 0
    assert isinstance(third["sent_thinking"], list) and len(third["sent_thinking"]) == 2
    assert list((tmp_path / "journal.bindings").glob("*.jsonl"))
