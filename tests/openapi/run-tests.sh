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
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# One mode: podium with the server arguments before `--` on a fresh data
# directory of its own, schemathesis with the arguments after it; the
# output goes to $dir/log, the status is the exit code. Each mode runs in
# its own directory (schemathesis and Hypothesis keep caches in the
# working directory), so the two modes run side by side: schemathesis is
# one Python thread, and a CI machine has two cores.
mode() {
    local name="$1" dir="$2"; shift 2
    local server_args=() st_args=()
    while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do server_args+=("$1"); shift; done
    [ "$#" -gt 0 ] && shift
    st_args=("$@")
    mkdir -p "$dir/data"
    cd "$dir"
    "$bin" serve --data-dir "$dir/data" --http 127.0.0.1:0 --rpc off --resp off \
        "${server_args[@]}" > "$dir/out" 2> "$dir/err" &
    local server=$! addr="" url=""
    for _ in $(seq 300); do
        addr="$(sed -n 's/^podium: http listening on //p' "$dir/out")"
        [ -n "$addr" ] && break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        echo "podium did not start:"; cat "$dir/out" "$dir/err"
        kill "$server" 2>/dev/null
        return 1
    fi
    url="http://$addr"
    echo "== schemathesis: $name"
    # One worker: with two, Hypothesis's lambda descriptions call
    # ast.parse from two threads at once, which CPython 3.11 cannot do
    # ("AST constructor recursion depth mismatch").
    local status=0
    "$venv/bin/schemathesis" --config-file "$here/schemathesis.toml" \
        run "$url/openapi.json" --checks all \
        --max-examples "$examples" --seed 42 --workers 1 \
        --no-color --output-truncate false "${st_args[@]}" || status=1
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true
    return $status
}

key="schemathesis-admin-key-0123456789"
mkdir -p "$work/keys"
printf '%s:admin\nschemathesis-read-key-0123456789:read\n' "$key" > "$work/keys/keys"

mode "no API keys" "$work/nokeys" > "$work/nokeys.log" 2>&1 &
pids+=($!)
mode "API keys, an admin key sent" "$work/keys" --api-key-file "$work/keys/keys" \
    -- -H "Authorization: Bearer $key" > "$work/keys.log" 2>&1 &
pids+=($!)

status=0
for i in 0 1; do
    wait "${pids[$i]}" || status=1
done
pids=()
cat "$work/nokeys.log" "$work/keys.log"
exit $status
