#!/usr/bin/env bash
# The web console's test: installs playwright-core from package-lock.json
# (no browser is downloaded: it drives Debian's /usr/bin/chromium), then runs
# console.test.mjs against the podium binary ($PODIUM_BIN, default
# target/release/podium). PODIUM_CONSOLE_DIR serves the console's files from
# a directory instead of the binary's; PODIUM_TEST_BROWSER=require fails
# rather than skips without Chromium. Exits with the test's status. npm ci
# runs when node_modules is older than the lock file; `--prepare` runs only
# that (CI runs it while the binary builds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PODIUM_BIN="${PODIUM_BIN:-$root/target/release/podium}"

install() {
    cd "$here"
    # npm writes node_modules/.package-lock.json on every install.
    if [ ! node_modules/.package-lock.json -nt package-lock.json ]; then
        npm ci --no-audit --no-fund --no-progress
    fi
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
cd "$root"
node --test --test-concurrency=1 tests/console/console.test.mjs
