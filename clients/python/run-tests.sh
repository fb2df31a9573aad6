#!/usr/bin/env bash
# The Python client's checks: mypy --strict, then its tests against a real
# `podium serve` ($PODIUM_BIN, default target/release/podium), some of them
# also on the Redis backend (a redis-server they start; skipped without one
# unless PODIUM_TEST_REDIS=require).
# Needs python3 with the venv module (Debian: apt-get install python3-venv);
# the virtualenv lives in target/py-client, (re)installed when
# pyproject.toml changed. `--prepare` only makes the virtualenv (no podium
# binary needed: CI runs it while the binary builds). Arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/target/py-client"
export PODIUM_BIN="${PODIUM_BIN:-$root/target/release/podium}"

prepare() {
    if [ ! -x "$venv/bin/python" ]; then
        mkdir -p "$(dirname "$venv")"
        if ! python3 -m venv "$venv"; then
            rm -rf "$venv"
            echo "run-tests.sh: python3 -m venv failed; on Debian/Ubuntu: apt-get install python3-venv" >&2
            exit 1
        fi
    fi
    local stamp="$venv/.installed-from" want
    want="$(cat "$here/pyproject.toml")"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet -e "$here[test]" 'mypy>=1.5'
        printf '%s' "$want" > "$stamp"
    fi
}
if [ "${1:-}" = --prepare ]; then
    prepare
    exit 0
fi
if [ ! -x "$PODIUM_BIN" ]; then
    echo "run-tests.sh: no podium binary at $PODIUM_BIN (cargo build --release, or set PODIUM_BIN)" >&2
    exit 1
fi
prepare
py="$venv/bin/python"

cd "$here"
echo "== mypy --strict (podium_client, examples, tests)"
"$py" -m mypy --strict --cache-dir "$venv/mypy-cache" podium_client examples tests
echo "== pytest (PODIUM_BIN=$PODIUM_BIN)"
exec "$py" -m pytest -q -p no:cacheprovider "$@"
