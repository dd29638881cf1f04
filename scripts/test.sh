#!/usr/bin/env bash
# The project's tests: the workspace test suite, then a deterministic fuzz smoke of every
# fuzz target (scripts/fuzz.sh smoke). `scripts/test.sh --quick` runs only the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
if [ "${1:-}" = "--quick" ]; then
  exit 0
fi
echo "== fuzz smoke (scripts/fuzz.sh smoke)"
bash scripts/fuzz.sh smoke
