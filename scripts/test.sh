#!/usr/bin/env bash
# Every check CI runs, in the order a failure is cheapest to report.
# Installs what the tests need beyond the Rust toolchain: redis-server,
# redis-tools and redis-py for the Redis-protocol tests, the Python and
# Node.js leaderboard libraries they run unchanged, and Chromium for the
# TypeScript client's browser test.
set -euo pipefail
cd "$(dirname "$0")/.."


# Wall time is measured per phase and printed at the end (CI keeps it
# under 20 minutes on two cores).
phase_start=$SECONDS
timings=()
phase() { timings+=("$(printf "%4ds  %s" $((SECONDS - phase_start)) "$1")"); phase_start=$SECONDS; }

# The Redis-protocol tests (crates/server/tests/integration/resp_*.rs) diff podium's
# replies against a real redis-server and drive it with redis-cli and
# redis-py. Install them when missing; the tests start their own servers.
install_redis() {
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
        if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server redis-tools >/dev/null 2>&1; then
            $sudo apt-get update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server redis-tools >/dev/null
        fi
    fi
    if ! python3 -c 'import redis, sys; sys.exit(int(redis.__version__.split(".")[0]) < 5)' >/dev/null 2>&1; then
        # A Debian-managed python3 refuses a plain pip install (PEP 668).
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet 'redis>=5' 2>/dev/null ||
            PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --break-system-packages 'redis>=5'
    fi
    # The MessagePack-RPC test (crates/server/tests/integration/rpc_python.rs) drives podium
    # with the `msgpack` package's Packer/Unpacker, a client podium did not write.
    if ! python3 -c 'import msgpack' >/dev/null 2>&1; then
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet msgpack 2>/dev/null ||
            PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --break-system-packages msgpack
    fi
    # /metrics read by Prometheus's own parser (crates/server/tests/integration/metrics_python.rs).
    if ! python3 -c 'import prometheus_client' >/dev/null 2>&1; then
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet 'prometheus_client>=0.20' 2>/dev/null ||
            PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --break-system-packages 'prometheus_client>=0.20'
    fi
    # redis-py's own test suite (tests/ of its source distribution, which
    # PyPI's wheel leaves out), run against podium and redis-server by
    # crates/server/tests/integration/resp_clients.rs; it imports the `redis` package
    # beside it, so the client is the version the tests were written for.
    local suite=target/redis-py
    if [ ! -f "$suite/redis-5.2.1/tests/test_commands.py" ]; then
        mkdir -p "$suite"
        python3 -m pip download --quiet --no-deps --no-binary :all: -d "$suite" 'redis==5.2.1'
        tar -xzf "$suite/redis-5.2.1.tar.gz" -C "$suite"
    fi
    if ! python3 -c 'import pytest, pytest_timeout, packaging, async_timeout' >/dev/null 2>&1; then
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet pytest pytest-timeout packaging async-timeout 2>/dev/null ||
            PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --break-system-packages pytest pytest-timeout packaging async-timeout
    fi
    # The Python leaderboard library of the Redis world (agoragames'
    # `leaderboard`) is written for redis-py 2.x: it gets a venv of its own.
    local venv=target/py-leaderboard
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import leaderboard' >/dev/null 2>&1; then
        python3 -m venv "$venv"
        PIP_ROOT_USER_ACTION=ignore "$venv/bin/pip" install --quiet 'redis==2.10.6' 'leaderboard==3.7.3'
    fi
}

# The Node.js leaderboard library of the Redis world (agoragames'
# `agoragames-leaderboard`, on node_redis 0.8): the exact version, in a
# prefix of its own under target/ (never committed); the test
# node_leaderboard_library finds it through NODE_PATH.
install_node_leaderboard() {
    local prefix=target/node-leaderboard
    if [ -d "$prefix/node_modules/agoragames-leaderboard" ]; then return; fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        local sudo=""
        if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
        if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null 2>&1; then
            $sudo apt-get update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
        fi
    fi
    npm install --prefix "$prefix" --no-audit --no-fund agoragames-leaderboard@2.1.0
}

# mlomb's `redis-rank` (update policies and reads as Lua scripts through
# ioredis, boards in database 15 in its own tests): the exact versions,
# in a prefix of their own under target/ (never committed); the tests
# node_redis_rank_library* find them through NODE_PATH. Needs node and npm,
# which install_node_leaderboard installed.
install_node_redis_rank() {
    local prefix=target/node-redis-rank
    if [ -f "$prefix/node_modules/redis-rank/package.json" ] &&
        [ -f "$prefix/node_modules/ioredis/package.json" ]; then return; fi
    npm install --prefix "$prefix" --no-audit --no-fund redis-rank@2.2.3 ioredis@5.6.1
}

# Debian's Chromium, for the TypeScript client's test in a real browser
# (clients/typescript/test/browser.test.mjs, headless).
install_chromium() {
    if command -v chromium >/dev/null 2>&1; then return; fi
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null 2>&1; then
        $sudo apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
    fi
}


# What the tests need beyond Rust is installed in the background while
# fmt and clippy run (mostly downloads; the virtualenv's pip takes some
# CPU that clippy then shares): redis-server, redis-cli
# and redis-py for the Redis-protocol tests, the leaderboard libraries
# they run unchanged, Chromium for the browser tests, and the Python
# client's virtualenv and the TypeScript client's and the console's
# node_modules (their suites' `--prepare`).
mkdir -p target
deps_log=target/test-deps.log
( install_redis && install_node_leaderboard && install_node_redis_rank && install_chromium &&
    clients/python/run-tests.sh --prepare && clients/typescript/run-tests.sh --prepare &&
    tests/console/run-tests.sh --prepare ) > "$deps_log" 2>&1 &
deps=$!

echo "== cargo fmt --check"
cargo fmt --all -- --check

# One profile for clippy and the tests (their build scripts and proc
# macros are built once): Cargo.toml's `ci`, the release profile without
# its ThinLTO pass, which only costs CPU here. The suites below drive the
# `podium` it builds.
profile=ci
export PODIUM_BIN="$PWD/target/$profile/podium"

echo "== cargo clippy"
cargo clippy --workspace --all-targets --profile "$profile" --features podium-server/external -- -D warnings
phase "fmt and clippy"

# The optimized build of every test, apart from running them: the suites
# below all drive the `podium` binary it makes. (Beside clippy it took
# longer in all: two cores, both busy either way.)
echo "== optimized build of the tests"
cargo test --workspace --profile "$profile" --features podium-server/external --no-run
phase "optimized build"

echo "== test dependencies (redis-server, redis-cli, redis-py, the leaderboard libraries, chromium)"
if ! wait "$deps"; then
    cat "$deps_log" >&2
    echo "installing the test dependencies failed" >&2
    exit 1
fi
phase "waiting for the test dependencies"

# The OpenAPI document's suite (tests/openapi: schemathesis --checks all,
# pinned in tests/openapi/requirements.txt, in a virtualenv under target/,
# against fresh data directories without API keys and with them, side by
# side) drives the `podium` just built from one Python process
# mostly waiting on the server: it runs in the background from here on,
# its output printed at the end.
st_log=target/schemathesis.log
tests/openapi/run-tests.sh > "$st_log" 2>&1 &
st=$!
failed=()

echo "== cargo test, the clients' and the console's tests"
# Optimized: the property tests run thousands of operations per case.
# `external` adds the test binaries that need what was installed above.
# Three jobs at a time, and the jobs that mostly wait in a lane of their
# own beside them (scripts/rust-tests.sh says why); the clients' and
# the console's suites are jobs in the same lanes rather than a phase of
# their own after them (a fourth lane for every job was faster alone, 258 s
# against 276 s, but in a fresh-clone run a Redis-backend command then
# waited past its timeout):
# - the Python client (clients/python: mypy --strict, pytest) in a
#   virtualenv of its own under target/ (never committed), and the
#   TypeScript client (clients/typescript: tsc --strict, node --test) with
#   its dev dependencies from its lock file: both start the
#   `podium` built above, and a redis-server for the subset run on the
#   Redis backend (required here: installed above);
# - the web console (tests/console: headless Chromium against podium
#   serve): playwright-core from its lock file driving Debian's chromium;
#   the test starts the `podium` (with the console compiled in)
#   and runs its read pages again on the Redis backend.
bash scripts/rust-tests.sh \
    --job clients.python 'PODIUM_TEST_REDIS=require clients/python/run-tests.sh' \
    --job clients.typescript 'PODIUM_TEST_REDIS=require PODIUM_TEST_BROWSER=require clients/typescript/run-tests.sh' \
    --job web.console 'PODIUM_TEST_BROWSER=require tests/console/run-tests.sh' \
    --workspace --profile "$profile" --features podium-server/external ||
    failed+=("tests")
phase "tests (schemathesis beside them)"

echo "== OpenAPI document (tests/openapi: schemathesis --checks all)"
wait "$st" || failed+=("OpenAPI document")
cat "$st_log"
phase "schemathesis (what was left of it)"

echo "== wall time by phase"
printf '%s\n' "${timings[@]}"
printf '%4ds  in all\n' "$SECONDS"
if [ "${#failed[@]}" -gt 0 ]; then
    printf 'FAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi
