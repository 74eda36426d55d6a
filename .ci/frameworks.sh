#!/usr/bin/env bash
# Builds one venv per agent framework for the framework matrix (tests/frameworks), idempotently:
# .ci/.cache/fw-<name>, each with loom-otel installed editable (instruments-any, otlp), the OpenTelemetry
# distro (`opentelemetry-instrument`) and the framework, resolved together (by uv, or pip: .ci/venvs.sh), the way a user
# installs loom-otel into an existing agent app. The frameworks pin what they pin (pydantic-ai and
# google-adk: google-genai < 3; google-adk: opentelemetry <= 1.44), which is why each has its own venv.
# The tests find them there, or skip naming this script.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
. .ci/venvs.sh
declare -A FRAMEWORKS=(
  [langchain]="langchain langchain-anthropic langgraph"
  [pydantic-ai]="pydantic-ai-slim[anthropic,google]"
  [adk]="google-adk>=2 anthropic"
  [llamaindex]="llama-index-core>=0.14 llama-index-llms-anthropic anthropic<2"
  [openai-agents]="openai-agents"
  [autogen]="autogen-agentchat>=0.7 autogen-ext[anthropic,openai]>=0.7 anthropic<1"
  [strands]="strands-agents[anthropic]>=1.62,<2"
  [crewai]="crewai[anthropic]>=1.15,<2"
)
# loom-otel's extras where instruments-any cannot be installed beside the framework (crewai 1.15 pins
# openai < 3, below loom-otel's openai floor; its native Anthropic and Gemini providers are what it runs)
declare -A EXTRAS=([crewai]="anthropic,google-genai,otlp")
build() {
  local name="$1" venv=".ci/.cache/fw-$1"
  if [ -x "$venv/bin/opentelemetry-instrument" ] && [ -f "$venv/.ready" ]; then return; fi
  new_venv "$venv"
  # shellcheck disable=SC2086
  venv_install "$venv/bin/python" -e ".[${EXTRAS[$name]:-instruments-any,otlp}]" opentelemetry-distro ${FRAMEWORKS[$name]}
  "$venv/bin/python" "tests/frameworks/apps/check_install.py" "$name"
  touch "$venv/.ready"
}
for name in "${@:-langchain pydantic-ai adk llamaindex openai-agents autogen strands crewai}"; do
  for n in $name; do build "$n"; done
done
