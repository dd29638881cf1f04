#!/usr/bin/env bash
# Differential run of the providers against the reference on random streams:
#   scripts/diff-streams.sh [SEED] [COUNT]      (defaults: 1, 100)
# Draws COUNT cases (Anthropic Messages and OpenAI completions) (scripts/random_streams.py), has the reference
# (pi-ai 1.6, crates/tern-ai/tests/providers/reference) give their outputs, each run twice,
# then checks tern's provider runner against them. Cases and outputs stay in
# target/diff-streams/SEED/. Needs Node and npm.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seed="${1:-1}"
count="${2:-100}"
work="$root/target/diff-streams/$seed"
ref="$root/crates/tern-ai/tests/providers/reference"
rm -rf "$work"
mkdir -p "$work"
python3 "$root/scripts/random_streams.py" "$seed" "$count" "$work"
[ -d "$ref/node_modules" ] || (cd "$ref" && npm ci --silent)
echo "reference outputs ..."
(cd "$ref" && node gen.mjs "$work" >"$work/gen.log" 2>&1) || { tail -20 "$work/gen.log"; exit 1; }
# DIFF_PROFILE=debug uses the test build's runner (scripts/test.sh: no release build).
profile="${DIFF_PROFILE:-release}"
flags=(--quiet -p tern-ai --features testing --example provider_replay)
[ "$profile" = release ] && flags+=(--release)
cargo build "${flags[@]}" --manifest-path "$root/Cargo.toml"
status=0
bash "$root/../shared/providers/check.sh" "$root/target/$profile/examples/provider_replay" "$work" \
  >"$work/check.log" 2>&1 || status=$?
grep -v "^PASS " "$work/check.log" || true
exit "$status"
