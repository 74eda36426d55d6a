# Sourced by the CI scripts (.ci/run, .ci/frameworks.sh, .ci/install-e2e.sh): how a venv is made and
# filled. With uv (from PyPI, kept in .ci/.cache/uv) when it installs: pip's resolver, run for six venvs
# at once, kept a 2-core machine busy for six minutes of a CI run; uv resolves and installs the same
# requirements in seconds. Where uv cannot be installed, pip does it all (slower, same result).
# Every venv gets pip too (`--seed`): the tests and scripts that run `python -m pip` find it.
VENVS_UV=".ci/.cache/uv/bin/uv"

venvs_uv() {  # installs uv once; false when it cannot be installed (tried once: VENVS_NO_UV, exported)
  [ -x "$VENVS_UV" ] && return 0
  [ -n "${VENVS_NO_UV:-}" ] && return 1
  mkdir -p .ci/.cache
  { python3 -m venv .ci/.cache/uv && .ci/.cache/uv/bin/pip install -q uv; } >/dev/null 2>&1 && [ -x "$VENVS_UV" ] && return 0
  export VENVS_NO_UV=1
  return 1
}

new_venv() {  # DIR: a new, empty venv (what was there is removed)
  rm -rf "$1"
  if venvs_uv; then
    "$VENVS_UV" venv -q --seed --python "$(command -v python3)" "$1"
  else
    python3 -m venv "$1" && "$1/bin/pip" install -q --upgrade pip
  fi
}

venv_install() {  # PYTHON (a venv's), then pip install's arguments (requirements, -e, -c)
  local python="$1"
  shift
  if venvs_uv; then
    "$VENVS_UV" pip install -q --python "$python" "$@"
  else
    "$python" -m pip install -q "$@"
  fi
}
