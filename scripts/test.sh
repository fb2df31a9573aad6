#!/usr/bin/env bash
# Every check CI runs, in the order a failure is cheapest to report.
# Installs nothing beyond the Rust toolchain for now: the engine has no
# external services. Later issues add their servers here.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --release -- -D warnings

echo "== cargo test"
# Release mode: the property tests run thousands of operations per case.
cargo test --workspace --release
