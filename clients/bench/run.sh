#!/usr/bin/env bash
# The clients' benchmark (docs/BENCHMARKS.md, "clients"): one podium serve
# (release, --fsync everysec as `podium bench` runs its servers), then in turn the Python client,
# the TypeScript client and `podium import` of the same N entries; then
# `podium bench http-updates` for the raw HTTP rate of the same machine.
# Needs the clients' test environments (clients/*/run-tests.sh make them).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
podium="${PODIUM_BIN:-$root/target/release/podium}"
n="${N:-1000000}"
tmp="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$podium" serve --data-dir "$tmp/data" --http "127.0.0.1:$port" --rpc "127.0.0.1:$rport" --resp off \
    --fsync everysec --log-level warn > "$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port"

echo "== python"
"$root/target/py-client/bin/python" "$root/clients/bench/bench_python.py" "$url" "$n" "127.0.0.1:$rport"
echo "== typescript"
node "$root/clients/bench/bench_typescript.mjs" "$url" "$n"
echo "== podium import (MessagePack-RPC) and podium import --http of the same $n entries"
python3 -c "
import sys
with open('$tmp/rows.ndjson', 'w') as f:
    for i in range($n):
        f.write('{\"member\":\"player-%07d\",\"score\":%d}\n' % (i, (i * 7919) % 1000003))
"
for how in rpc http; do
    args=(--rpc "127.0.0.1:$rport"); [ "$how" = http ] && args=(--http "$url")
    t0=$(date +%s.%N)
    "$podium" import "${args[@]}" --quiet "cli-$how" "$tmp/rows.ndjson" > /dev/null
    t1=$(date +%s.%N)
    python3 -c "print('{\"podium_import_$how\": %.0f}' % ($n / ($t1 - $t0)))"
done
echo "== podium bench http-updates (raw HTTP, its own server)"
"$podium" bench http-updates --quiet --no-redis --seconds 5 2>&1 | tail -8
