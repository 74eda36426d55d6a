#!/usr/bin/env bash
# Installs what the end-to-end tests (tests/e2e_trail, tests/viewer) need, idempotently:
#  - project: rotel (a Rust OTLP collector shipped as a PyPI wheel) and PyYAML into the project venv,
#    and Chromium with its WebDriver from the system packages (apt-get), for the viewer's browser test;
#  - phoenix: Arize Phoenix into its OWN venv at .ci/.cache/phoenix-venv (it pins its own OpenTelemetry
#    versions, which must not replace the project's). The tests find it there, or via
#    LOOM_OTEL_TEST_PHOENIX=/path/to/phoenix (the `phoenix` executable).
# `bash .ci/install-e2e.sh [project|phoenix]` does one part (.ci/run builds Phoenix while the project
# venv installs); with no argument, both.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
PART="${1:-all}"
PHX=".ci/.cache/phoenix-venv"
. .ci/venvs.sh
if [ "$PART" != phoenix ]; then
  venv_install "$PY" 'rotel>=0.0.1a15' 'pyyaml>=6'
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
fi
if [ "$PART" != project ]; then
  if [ ! -x "$PHX/bin/phoenix" ]; then
    new_venv "$PHX"
    venv_install "$PHX/bin/python" arize-phoenix
  fi
  "$PHX/bin/phoenix" --help >/dev/null
  echo "phoenix $("$PHX/bin/python" -c 'import importlib.metadata as m; print(m.version("arize-phoenix"))') ready"
fi
if [ "$PART" != phoenix ]; then
  echo "rotel $("$PY" -c 'import importlib.metadata as m; print(m.version("rotel"))') ready, $(chromium --version 2>/dev/null | head -1)"
fi
