#!/usr/bin/env bash
# The soak test (not in CI): AGENTS agents (default 1000) in one process for SECONDS seconds
# (default 600) against a local scripted server that injects every stream and tool fault at
# random, aborts some prompts, and samples RSS each second. Prints the figures; exits 1 when
# a prompt was lost (no end within 60 s), an answer was lost, or RSS grew more than 10 %
# after the first minute.
#   scripts/soak.sh [AGENTS] [SECONDS] [extra tern-soak flags, e.g. --seed 7]
set -euo pipefail
cd "$(dirname "$0")/.."
agents="${1:-1000}"
seconds="${2:-600}"
shift $(( $# > 2 ? 2 : $# ))
cargo build --release -p tern-bench --bin tern-soak
exec target/release/tern-soak --agents "$agents" --seconds "$seconds" "$@"
