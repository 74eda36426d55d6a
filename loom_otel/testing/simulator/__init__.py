"""A deterministic vendor simulator: Anthropic, Gemini, OpenAI-compatible and Bedrock Converse APIs, no network.

The simulator is "the vendor": it imports nothing from the rest of loom-otel. Use it in-process
(``Simulator().transport()`` or the client factories) or over HTTP (``serve(sim)``)::

    sim = Simulator(reasoning_text="canary")
    client = sim.anthropic_client()
    with serve(sim) as server:
        anthropic.Anthropic(api_key="x", base_url=server.url)
        boto3.client("bedrock-runtime", endpoint_url=server.url, region_name="us-east-1",
                     aws_access_key_id="x", aws_secret_access_key="x")  # botocore signs with any
"""

from __future__ import annotations

from ._exchange import RecordedRequest, Reply
from ._server import SimulatorServer, serve
from ._simulator import Simulator

__all__ = ["RecordedRequest", "Reply", "Simulator", "SimulatorServer", "serve"]
