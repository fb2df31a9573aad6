#!/usr/bin/env bash
# The OpenAPI document against the server: schemathesis (pinned in
# requirements.txt, installed into a venv under target/) runs every check it
# has (`--checks all`: status codes, content types, response schemas, bodies
# the schema calls valid accepted and invalid refused, authentication) with a
# bounded number of examples per operation and a fixed seed, against the
# podium binary ($PODIUM_BIN, default target/release/podium) on a fresh data
# directory: once without API keys, once with keys (an admin key sent). Exits
# non-zero on any failure. ST_EXAMPLES sets the examples per operation;
# schemathesis.toml holds the one setting changed from schemathesis's own.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${PODIUM_BIN:-$root/target/release/podium}"
examples="${ST_EXAMPLES:-30}"
if [ ! -x "$bin" ]; then
    echo "run-tests.sh: no podium binary at $bin (cargo build --release, or set PODIUM_BIN)" >&2
    exit 1
fi
venv="$root/target/schemathesis-venv"
if [ ! -x "$venv/bin/schemathesis" ]; then
    if ! python3 -m venv "$venv" ||
        ! PIP_ROOT_USER_ACTION=ignore "$venv/bin/pip" install --quiet --disable-pip-version-check \
            -r "$here/requirements.txt"; then
        rm -rf "$venv"
        echo "run-tests.sh: could not install schemathesis (python3 -m venv, pip)" >&2
        exit 1
    fi
fi

work="$(mktemp -d)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# Starts podium with "$@" on a fresh data directory; sets $server and $url.
start() {
    rm -rf "$work/data" && mkdir -p "$work/data"
    "$bin" serve --data-dir "$work/data" --http 127.0.0.1:0 --rpc off --resp off "$@" \
        > "$work/out" 2> "$work/err" &
    server=$!
    for _ in $(seq 300); do
        addr="$(sed -n 's/^podium: http listening on //p' "$work/out")"
        [ -n "$addr" ] && { url="http://$addr"; return; }
        sleep 0.1
    done
    echo "podium did not start:" >&2; cat "$work/out" "$work/err" >&2; exit 1
}

stop() {
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
}

run() {
    local name="$1"; shift
    echo "== schemathesis: $name"
    # One worker: with two, Hypothesis's lambda descriptions call
    # ast.parse from two threads at once, which CPython 3.11 cannot do
    # ("AST constructor recursion depth mismatch").
    "$venv/bin/schemathesis" --config-file "$here/schemathesis.toml" \
        run "$url/openapi.json" --checks all \
        --max-examples "$examples" --seed 42 --workers 1 \
        --no-color --output-truncate false "$@"
}

status=0
# schemathesis and Hypothesis keep caches in the working directory (failures
# to replay, examples): in the run's own, so each run starts afresh.
cd "$work"
start
run "no API keys" || status=1
stop

key="schemathesis-admin-key-0123456789"
printf '%s:admin\nschemathesis-read-key-0123456789:read\n' "$key" > "$work/keys"
start --api-key-file "$work/keys"
run "API keys, an admin key sent" -H "Authorization: Bearer $key" || status=1
stop
exit $status
