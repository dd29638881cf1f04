#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: scripts/fuzz.sh [SECONDS|smoke] [TARGET...]
#   SECONDS  per target (default 60).
#   smoke    a deterministic smoke for CI: a fixed seed and a fixed number of runs per target,
#            so the same commit always fuzzes the same inputs.
#   TARGET   any of: sse json_parse openai_completions openai_responses anthropic google bedrock
#            mistral openai_codex shell_rules session_reader rpc_command
# Needs cargo-fuzz (installed from crates.io if missing) and libFuzzer flags that only
# nightly accepts: uses the nightly toolchain when rustup has one, else stable with
# RUSTC_BOOTSTRAP=1. Crashes are left in fuzz/artifacts/<target>/ and make the script fail;
# turn each into a plain #[test] with the crashing input before fixing it.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
duration="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(sse json_parse openai_completions openai_responses anthropic google bedrock mistral
    openai_codex shell_rules session_reader rpc_command)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
if rustup run nightly rustc --version >/dev/null 2>&1; then
  fuzz=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# The fuzz crate is a workspace of its own: start from the main workspace's lock, so that the
# targets build the versions the tests ran (cargo adds the fuzz-only crates), not whatever
# crates.io has newest that day.
cp ../Cargo.lock Cargo.lock
"${fuzz[@]}" build
status=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  log="$(mktemp)"
  if [ "$duration" = smoke ]; then
    # A fresh corpus each time: the smoke depends only on the seeds and the commit.
    corpus="$(mktemp -d)"
    limits=(-seed=1 -runs="${FUZZ_SMOKE_RUNS:-5000}")
  else
    corpus="corpus/$t"
    limits=(-max_total_time="$duration")
  fi
  if "${fuzz[@]}" run "$t" "$corpus" "seeds/$t" -- \
      "${limits[@]}" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    runs="$(grep -oE 'Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' | tail -1)"
    summary+=("$t: ${runs:-?} runs (${duration}), no crash")
  else
    status=1
    summary+=("$t: CRASH, see $(grep -oE 'artifacts/[^ ]+' "$log" | tail -1)")
    tail -40 "$log"
  fi
  rm -f "$log"
done
printf '%s\n' "${summary[@]}"
exit "$status"
