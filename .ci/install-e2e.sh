#!/usr/bin/env bash
# Installs what the audit-trail end-to-end tests (tests/e2e_trail) need, idempotently:
#  - rotel (a Rust OTLP collector shipped as a PyPI wheel) and PyYAML into the project venv;
#  - Arize Phoenix into its OWN venv at .ci/.cache/phoenix-venv (it pins its own OpenTelemetry
#    versions, which must not replace the project's). The tests find it there, or via
#    LOOM_OTEL_TEST_PHOENIX=/path/to/phoenix (the `phoenix` executable);
#  - Chromium and its WebDriver from the system packages, for the viewer's browser test (tests/viewer).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
"$PY" -m pip install --quiet --disable-pip-version-check 'rotel>=0.0.1a15' 'pyyaml>=6'
PHX=".ci/.cache/phoenix-venv"
if [ ! -x "$PHX/bin/phoenix" ]; then
  mkdir -p .ci/.cache
  python3 -m venv "$PHX" 2>/dev/null || "$PY" -m venv --without-pip "$PHX"
  if [ ! -x "$PHX/bin/pip" ]; then "$PHX/bin/python" -m ensurepip --upgrade >/dev/null; fi
  "$PHX/bin/python" -m pip install --quiet --disable-pip-version-check arize-phoenix
fi
"$PHX/bin/phoenix" --help >/dev/null
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
echo "e2e installs ready: rotel $("$PY" -c 'import importlib.metadata as m; print(m.version("rotel"))'), phoenix $("$PHX/bin/python" -c 'import importlib.metadata as m; print(m.version("arize-phoenix"))')"
