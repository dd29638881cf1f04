#!/usr/bin/env bash
# Builds tern-bench with profile-guided optimisation and prints the directory of its binaries.
#
# Three steps, each in its own target directory so that the plain release build is untouched:
#   1. an instrumented build (`-Cprofile-generate`),
#   2. a training run of W1-W6 at reduced repetitions (W6 only when W6_SERVER is given),
#   3. the optimised build (`-Cprofile-use`) from the merged profile.
# The same three steps work for any binary that embeds tern: train it on its own traffic.
# Why: a turn's code is larger than the instruction cache; the profile lets the compiler lay the
# hot paths out together (measured in bench/README.md, "Profile-guided builds").
#
# Usage: bench/pgo.sh                     (prints e.g. target/pgo/use/release)
# Env:   CARGO_TARGET_DIR                  (default <repo>/target; the builds go to <it>/pgo)
#        W6_SERVER   the reference's w6-server.mjs, to train the SSE client as well
#        RUSTFLAGS   kept, the PGO flag is added to it
# Needs: llvm-profdata of the toolchain's LLVM (`rustup component add llvm-tools`, installed
#        here when missing).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PGO=$TARGET/pgo
FLAGS=${RUSTFLAGS:-}

host=$(rustc -vV | sed -n 's/^host: //p')
PROFDATA=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$PROFDATA" ]; then
	echo "installing llvm-tools (rustup component) for llvm-profdata" >&2
	rustup component add llvm-tools >&2
fi

build() { # build <target dir> <extra rustflags>
	(cd "$ROOT" && RUSTFLAGS="$FLAGS $2" CARGO_TARGET_DIR="$1" \
		cargo build --release -p tern-bench --bins >&2)
	# W7's binaries on their own (see compare.sh).
	(cd "$ROOT" && RUSTFLAGS="$FLAGS $2" CARGO_TARGET_DIR="$1" \
		cargo build --release -p tern-bench-fixtures --bins >&2)
}

echo "pgo: instrumented build" >&2
rm -rf "$PGO/raw"
build "$PGO/gen" "-Cprofile-generate=$PGO/raw"

echo "pgo: training run" >&2
B=$PGO/gen/release/tern-bench
"$B" w1 --warmup 1 --reps 3 >/dev/null
"$B" w2 --warmup 1 --reps 3 >/dev/null
"$B" w3 --warmup 1 --reps 3 >/dev/null
"$B" w4 >/dev/null
"$B" w5 >/dev/null
if [ -n "${W6_SERVER:-}" ]; then "$B" w6 --server "$W6_SERVER" >/dev/null; fi
"$PGO/gen/release/tern-w7" >/dev/null

echo "pgo: optimised build" >&2
"$PROFDATA" merge -o "$PGO/merged.profdata" "$PGO/raw"
build "$PGO/use" "-Cprofile-use=$PGO/merged.profdata"
echo "$PGO/use/release"
