#!/usr/bin/env bash
# The long crash test of tern-durable: the agent process is SIGKILLed at CRASH_POINTS points
# (default 200) on its session file, and CRASH_SQLITE_KILLS times (default 20) while
# CRASH_AGENTS agents (default 50) share one SQLite database, once with fsync'd group commits
# and once with buffered appends (the side log); every kill is recovered and
# checked against the uninterrupted run. Prints the seed (CRASH_SEED reproduces the kill
# points), the kills per category, and `N passed, 0 failed`.
#
#   scripts/crash-test.sh                  # 200 + 20 x 50 + 20 x 50
#   CRASH_POINTS=1000 scripts/crash-test.sh
#   CRASH_SEED=1796154326500 scripts/crash-test.sh
#
# `cargo test -p tern-durable --test crash` runs the short version (24 + 3 x 50 + 3 x 50).
set -euo pipefail
cd "$(dirname "$0")/.."
export CRASH_POINTS="${CRASH_POINTS:-200}"
export CRASH_SQLITE_KILLS="${CRASH_SQLITE_KILLS:-20}"
export CRASH_AGENTS="${CRASH_AGENTS:-50}"
exec cargo test -p tern-durable --test crash "$@"
