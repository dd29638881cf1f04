#!/usr/bin/env bash
# The project's tests: the workspace test suite, then the lint gates (rustfmt, clippy with
# warnings denied, rustdoc with warnings denied), differential smokes against the reference
# (scripts/diff-scenarios.sh 1 100, scripts/diff-streams.sh 1 100) and a deterministic fuzz
# smoke of every fuzz target (scripts/fuzz.sh smoke). `scripts/test.sh --quick` runs only
# the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --exclude tern-bench-fixtures
# The W7 fixtures package on its own, in the feature graph of a program that embeds only
# tern-agent and tern-ai: the workspace build unifies in what tern-tools and the CLI need
# (regex's Unicode case folding, tokio's process and signal drivers), which its tests check
# is left out.
cargo test -p tern-bench-fixtures
if [ "${1:-}" = "--quick" ]; then
  exit 0
fi
echo "== cargo fmt --check, clippy -D warnings, rustdoc -D warnings"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "== differential smoke: 100 random scenarios, the reference's traces against tern's"
DIFF_PROFILE=debug bash scripts/diff-scenarios.sh 1 100
echo "== differential smoke: 100 random provider streams, pi-ai's outputs against tern's"
DIFF_PROFILE=debug bash scripts/diff-streams.sh 1 100
echo "== fuzz smoke (scripts/fuzz.sh smoke)"
bash scripts/fuzz.sh smoke
