#!/bin/sh
# Longer round of the symlink-swap race test (not run in CI).
# Usage: scripts/race-test.sh [CALLS_PER_TOOL]   (default 10000: 30,000 calls in all)
set -eu
count="${1:-10000}"
cd "$(dirname "$0")/.."
TERN_RACE_COUNT="$count" exec cargo test --release -p tern-tools --test race -- --nocapture
