#!/usr/bin/env bash
# A longer round of the confinement race test: COUNT reads, COUNT writes and COUNT edits run
# through a folder that another thread swaps for a symlink to an outside folder, once with
# openat2 and once on the portable path. Any access outside fails the run.
#   scripts/race-test.sh [COUNT]   (default 10000 per tool and path: 60,000 calls)
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-10000}"
TERN_RACE_COUNT="$count" cargo test -p tern-tools --test race -- --nocapture
echo "race test: $((count * 3)) calls per path, 2 paths, no access outside"
