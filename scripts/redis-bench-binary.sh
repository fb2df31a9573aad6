#!/usr/bin/env bash
# One fixed Redis-protocol workload against one podium binary, as a whole
# process to time from outside: start BINARY on an empty data directory
# (`--fsync everysec`), run redis-benchmark `-P 16` on each command of
# COMMANDS (default GET and ZADD on __rand_int__ keys and members), print
# their requests per second, stop the server. Timing two binaries' runs in
# turn (with /usr/bin/time -v or any harness that alternates them)
# compares builds on the same workload; a command one of them does not
# have fails the run (exit 1, with redis-benchmark's error), so pick
# COMMANDS both have.
#
#   scripts/redis-bench-binary.sh BINARY
#   COMMANDS='ZADD lb __rand_int__ m:__rand_int__;ZSCORE lb m:__rand_int__' scripts/redis-bench-binary.sh BINARY
#
# Environment: COMMANDS (`;`-separated), REQUESTS (per command, 1000000),
# CLIENTS (50), KEYSPACE (100000).
set -euo pipefail

BIN=${1:?usage: redis-bench-binary.sh PODIUM_BINARY}
REQUESTS=${REQUESTS:-1000000}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-100000}
COMMANDS=${COMMANDS:-"GET key:__rand_int__;ZADD lb __rand_int__ m:__rand_int__"}

WORK=$(mktemp -d /tmp/podium-bench-binary.XXXXXX)
PID=
cleanup() {
    [ -z "$PID" ] || { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --data-dir "$WORK/data" --http off --rpc off --resp "127.0.0.1:$PORT" \
    --fsync everysec >"$WORK/log" 2>&1 &
PID=$!
for _ in $(seq 1 300); do
    redis-cli -p "$PORT" PING >/dev/null 2>&1 && break
    sleep 0.1
done
redis-cli -p "$PORT" PING >/dev/null || { cat "$WORK/log" >&2; exit 1; }

IFS=';' read -r -a CMDS <<<"$COMMANDS"
for c in "${CMDS[@]}"; do
    # shellcheck disable=SC2086 # the command's words
    if ! out=$(redis-benchmark -p "$PORT" -c "$CLIENTS" -n "$REQUESTS" -P 16 -r "$KEYSPACE" --csv $c 2>&1); then
        echo "redis-benchmark $c failed: $(grep -m 1 -i error <<<"$out" || tail -n 1 <<<"$out")" >&2
        exit 1
    fi
    rps=$(tail -n 1 <<<"$out" | awk -F'","' '{print $2}' | tr -d '"')
    echo "${c%% *} -P 16: $rps requests per second"
done
