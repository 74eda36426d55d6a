"""Run by .ci/frameworks.sh in each framework venv: the framework imports, and the versions pip chose."""

from __future__ import annotations

import contextlib
import importlib
import sys
from importlib.metadata import PackageNotFoundError, version

IMPORTS = {
    "langchain": ["langchain.agents", "langchain_anthropic", "langgraph"],
    "pydantic-ai": ["pydantic_ai", "pydantic_ai.models.anthropic", "pydantic_ai.models.google"],
    "adk": ["google.adk.agents", "google.adk.runners", "google.adk.models.anthropic_llm"],
    "llamaindex": ["llama_index.core.agent.workflow", "llama_index.llms.anthropic"],
    "openai-agents": ["agents"],
    "autogen": ["autogen_agentchat.agents", "autogen_ext.models.anthropic", "autogen_ext.models.openai"],
    "strands": ["strands", "strands.models.anthropic", "strands.models.bedrock"],
    "crewai": ["crewai", "crewai.llms.providers.anthropic.completion", "crewai.llms.providers.gemini.completion"],
}
MAJOR = {"adk": ("google-adk", 2)}
"""A framework pip must not backtrack below: asked for ``google-adk`` and ``opentelemetry-distro`` unpinned,
pip keeps the newest OpenTelemetry instrumentation (which needs opentelemetry-api 1.45) and backtracks
google-adk (which pins <= 1.44) to 1.x; .ci/frameworks.sh asks for ``google-adk>=2``."""
PACKAGES = [
    "langchain",
    "langchain-anthropic",
    "langgraph",
    "pydantic-ai-slim",
    "google-adk",
    "llama-index-core",
    "llama-index-llms-anthropic",
    "openai-agents",
    "autogen-agentchat",
    "autogen-ext",
    "anthropic",
    "openai",
    "strands-agents",
    "crewai",
    "boto3",
    "botocore",
    "google-genai",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-instrumentation",
]


def main(name: str) -> None:
    for module in IMPORTS[name]:
        importlib.import_module(module)
    if name in MAJOR:
        package, major = MAJOR[name]
        if int(version(package).split(".")[0]) < major:
            sys.exit(f"fw-{name}: pip chose {package} {version(package)}, older than {major}.x")
    found = []
    for package in PACKAGES:
        with contextlib.suppress(PackageNotFoundError):
            found.append(f"{package} {version(package)}")
    print(f"fw-{name}: " + ", ".join(found))


if __name__ == "__main__":
    main(sys.argv[1])
