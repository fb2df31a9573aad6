#!/usr/bin/env bash
# Runs the web console's browser test: installs its one npm package from the
# lock file, then drives the console in Chromium against the podium binary
# (PODIUM_BIN, default target/release/podium).
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
cd ../..
set +e
node --test --test-concurrency=1 tests/console/console.test.mjs
exit $?
