#!/usr/bin/env bash
# The Anthropic tests on the anthropic 0.x lines frameworks install (.ci/anthropic-0x.txt), beside the
# floor venv (.ci/run). `build`: one small venv per release, .ci/.cache/venv-anthropic-VERSION, with
# constraints-floor.txt's pins but its anthropic line. `test`: the tests whose subject is the Anthropic
# adapter, not marked slow, in each; a test of an SDK feature the release lacks skips naming the release
# that has it (tests/support/anthropic_sdk.py).
set -uo pipefail
cd "$(dirname "$0")/.."
. .ci/venvs.sh
TESTS=(tests/anthropic tests/continuation/anthropic tests/continuation/test_attacks.py tests/continuation/test_execution_identity.py
  tests/calls/test_conventions.py)
RELEASES=$(grep -o '^anthropic==[0-9.]*' .ci/anthropic-0x.txt | cut -d= -f3)
code=0
for release in $RELEASES; do
  venv=".ci/.cache/venv-anthropic-$release"
  case "${1:-}" in
    build)
      new_venv "$venv" \
        && venv_install "$venv/bin/python" -c <(grep -v '^anthropic==' .ci/constraints-floor.txt) -e '.[test]' \
          "anthropic==$release" || code=1
      ;;
    test)
      echo "-- anthropic $release"
      "$venv/bin/python" -m pytest -q -p no:randomly -rs -m "not slow and not peers" "${TESTS[@]}" || code=$?
      ;;
    *) echo "usage: $0 build|test"; exit 2 ;;
  esac
done
exit "$code"
