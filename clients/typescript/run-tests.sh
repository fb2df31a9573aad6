#!/usr/bin/env bash
# The TypeScript client's checks: install the dev dependencies (npm ci, from
# package-lock.json), build (tsc --strict), then its tests against a real
# `podium serve` ($PODIUM_BIN, default target/release/podium); the API and
# event suites also on the Redis backend.
# Needs Node >= 18 with npm and access to the npm registry. npm ci runs
# when node_modules is older than the lock file; `--prepare` runs only that
# (no podium binary needed: CI runs it while the binary builds). Arguments
# go to node --test.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PODIUM_BIN="${PODIUM_BIN:-$root/target/release/podium}"

install() {
    if ! command -v npm >/dev/null 2>&1; then
        echo "run-tests.sh: npm not found: install Node >= 18 (Debian: apt-get install nodejs npm)" >&2
        exit 1
    fi
    cd "$here"
    export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
    # npm writes node_modules/.package-lock.json on every install.
    if [ node_modules/.package-lock.json -nt package-lock.json ]; then return; fi
    if [ -f package-lock.json ]; then npm ci --no-progress; else npm install --no-progress; fi
}
if [ "${1:-}" = --prepare ]; then
    install
    exit 0
fi
if [ ! -x "$PODIUM_BIN" ]; then
    echo "run-tests.sh: no podium binary at $PODIUM_BIN (cargo build --release, or set PODIUM_BIN)" >&2
    exit 1
fi
install
echo "== npm test (PODIUM_BIN=$PODIUM_BIN)"
if [ "$#" -gt 0 ]; then
    npm run build
    exec node --test --test-concurrency=1 "$@"
fi
npm test

# The API and event suites again on the Redis backend, against a
# redis-server of their own (skipped without one, unless
# PODIUM_TEST_REDIS=require).
if ! command -v redis-server >/dev/null 2>&1; then
    if [ "${PODIUM_TEST_REDIS:-}" = require ]; then
        echo "run-tests.sh: redis-server not found (apt-get install redis-server)" >&2
        exit 1
    fi
    echo "== Redis backend: skipped (no redis-server)"
    exit 0
fi
rdir="$(mktemp -d)"
rport=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$rdir" > "$rdir/redis.log" 2>&1 &
rpid=$!
trap 'kill "$rpid" 2>/dev/null || true; rm -rf "$rdir"' EXIT
for _ in $(seq 100); do
    redis-cli -p "$rport" ping >/dev/null 2>&1 && break
    sleep 0.1
done
echo "== node --test on the Redis backend (redis://127.0.0.1:$rport)"
PODIUM_TEST_BACKEND="redis://127.0.0.1:$rport" node --test --test-concurrency=1 test/api.test.mjs test/events.test.mjs
