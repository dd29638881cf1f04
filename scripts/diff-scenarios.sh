#!/usr/bin/env bash
# Differential run of the agent loop against the reference on random scenarios:
#   scripts/diff-scenarios.sh [SEED] [COUNT]      (defaults: 1, 100)
# Draws COUNT scenarios (scripts/random_scenarios.py), has the reference's runner give their
# traces (each run twice; a scenario whose two traces differ is dropped as not
# deterministic), then checks tern's conformance runner against them. Scenarios and traces
# stay in target/diff-scenarios/SEED/. A difference is either a bug in tern or a scenario
# the format cannot make deterministic: read it, and add a real bug's scenario to
# crates/tern-agent/tests/conformance/extra/ with its reference trace.
# With TERN_TEMPORAL_ADDRESS (HOST:PORT of a Temporal server, e.g. `temporal server
# start-dev --headless --port 7299`) the scenarios also run as sessions through the Temporal
# backend; those it declines (exit 4, the reason on stderr) are counted apart.
# Needs Node and npm (the reference's packages are installed on first use).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seed="${1:-1}"
count="${2:-100}"
work="$root/target/diff-scenarios/$seed"
conf="$root/crates/tern-agent/tests/conformance"
rm -rf "$work"
mkdir -p "$work/scenarios" "$work/expected"
python3 "$root/scripts/random_scenarios.py" "$seed" "$count" "$work/scenarios"
if [ ! -d "$conf/reference/node_modules" ]; then
  (cd "$conf/reference" && npm ci --silent)
fi
echo "reference traces ..."
(cd "$conf/reference" && node gen.mjs "$work/scenarios" "$work/expected" >"$work/gen.log") || true
grep -E "^(NONDETERMINISTIC|ERROR)" "$work/gen.log" | cut -c1-200 || true
# A scenario without a trace is not compared; most must have one, or nothing was checked.
for s in "$work"/scenarios/*.json; do
  [ -f "$work/expected/$(basename "$s")" ] || rm "$s"
done
traced=$(find "$work/expected" -name '*.json' | wc -l)
if [ "$traced" -lt $((count * 9 / 10)) ]; then
  echo "the reference traced only $traced of $count scenarios (see $work/gen.log)" >&2
  exit 1
fi
# DIFF_PROFILE=debug uses the test build's runner (scripts/test.sh: no release build).
profile="${DIFF_PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo build --quiet --release -p tern-agent --example conformance --manifest-path "$root/Cargo.toml"
else
  cargo build --quiet -p tern-agent --example conformance --manifest-path "$root/Cargo.toml"
fi
status=0
bash "$root/../shared/conformance/check.sh" "$root/target/$profile/examples/conformance" \
  "$work/scenarios" "$work/expected" >"$work/check.log" 2>&1 || status=$?
grep -v "^pass " "$work/check.log" || true
if [ -n "${TERN_TEMPORAL_ADDRESS:-}" ]; then
  echo "through Temporal ($TERN_TEMPORAL_ADDRESS) ..."
  cargo build --quiet --release -p tern-temporal --example conformance_temporal \
    --manifest-path "$root/Cargo.toml"
  bash "$root/../shared/conformance/check.sh" "$root/target/release/examples/conformance_temporal" \
    "$work/scenarios" "$work/expected" >"$work/temporal.log" 2>&1 || true
  python3 - "$work/temporal.log" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
name, failed = None, {}
for l in lines:
    if l.startswith("FAIL "):
        name = l.split()[1]
        failed[name] = []
    elif l.startswith("pass ") or re.match(r"^\d+ passed", l):
        name = None
    elif name:
        failed[name].append(l)
declined = [n for n, d in failed.items() if any("not run through Temporal" in x for x in d)]
passed = sum(1 for l in lines if l.startswith("pass "))
print(f"Temporal: {passed} passed, {len(declined)} declined, {len(failed) - len(declined)} failed")
for n, d in failed.items():
    if n not in declined:
        print("FAIL", n, *d[:8], sep="\n  ")
PY
fi
exit "$status"
