#!/usr/bin/env bash
# The TypeScript client's checks: install the dev dependencies (npm ci, from
# package-lock.json), build (tsc --strict), then its tests against a real
# `podium serve` ($PODIUM_BIN, default target/release/podium).
# Needs Node >= 18 with npm and access to the npm registry. Arguments go to node --test.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PODIUM_BIN="${PODIUM_BIN:-$root/target/release/podium}"

if [ ! -x "$PODIUM_BIN" ]; then
    echo "run-tests.sh: no podium binary at $PODIUM_BIN (cargo build --release, or set PODIUM_BIN)" >&2
    exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "run-tests.sh: npm not found: install Node >= 18 (Debian: apt-get install nodejs npm)" >&2
    exit 1
fi
cd "$here"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
if [ -f package-lock.json ]; then npm ci --no-progress; else npm install --no-progress; fi
echo "== npm test (PODIUM_BIN=$PODIUM_BIN)"
if [ "$#" -gt 0 ]; then
    npm run build
    exec node --test --test-concurrency=1 "$@"
fi
exec npm test
