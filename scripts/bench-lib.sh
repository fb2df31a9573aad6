# Sourced by the Redis-protocol bench scripts (scripts/redis-bench.sh,
# scripts/redis-bench-ops.sh): a work directory in $WORK, removed on exit
# with every server whose pid is in $PIDS; a free port; waiting until a
# server answers PING. Set WORK_PREFIX (the directory's name) first.

WORK=$(mktemp -d "/tmp/${WORK_PREFIX:-podium-bench}.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
    for _ in $(seq 1 300); do
        redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "server on port $1 did not come up" >&2
    exit 1
}
