#!/usr/bin/env bash
# End-to-end check of the `tern` binary against a real model: llama.cpp's llama-server with
# Qwen2.5-Coder-1.5B-Instruct (see ../shared/local-llm/README.md for the one-time setup).
# Run by hand; never part of `cargo test` or CI.
#
#   scripts/e2e-local-llm.sh [LLM_DIR]        # default LLM_DIR: ../.local-llm or ./.local-llm
#
# Starts llama-server on 127.0.0.1:8080 unless one already answers there, builds tern, and in
# a temp folder holding notes.txt asks tern (read tool only) for the secret launch code.
# Passes when the run exits 0, a `read` tool call happened and its result reached the model,
# and the answer contains the code. Checks structure, not wording: a 1.5B model is reliable
# for one tool round trip at temperature 0, not for long tasks.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
LLM="${1:-}"
if [ -z "$LLM" ]; then
  for d in "$ROOT/../.local-llm" "$ROOT/.local-llm"; do [ -x "$d/bin/llama-server" ] && LLM="$d" && break; done
fi
PORT="${PORT:-8080}"
URL="http://127.0.0.1:$PORT/v1"
CODE="PELICAN-$((RANDOM % 900 + 100))"

started=""
if ! curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
  [ -n "$LLM" ] && [ -x "$LLM/bin/llama-server" ] || {
    echo "no llama-server found; set it up with ../shared/local-llm/setup-local-llm.sh .local-llm" >&2; exit 2; }
  "$LLM/bin/llama-server" -m "$LLM/models/qwen2.5-coder-1.5b-instruct.gguf" \
    --jinja --chat-template-file "$LLM/qwen25-fenced2.jinja" -c 4096 -t 2 \
    --host 127.0.0.1 --port "$PORT" >/tmp/tern-e2e-llama.log 2>&1 &
  started=$!
  trap '[ -n "$started" ] && kill "$started" 2>/dev/null || true' EXIT
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    sleep 1
  done
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { echo "llama-server did not come up; see /tmp/tern-e2e-llama.log" >&2; exit 2; }
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
cargo build -q -p tern
TERN="$CARGO_TARGET_DIR/debug/tern"

WORK="$(mktemp -d)"
# One line, as ../shared/local-llm/toolchat.py writes it: the 1.5B model fills every optional
# parameter of `read` (offset 1, limit 1), so with a heading line first it reads only the
# heading and then invents a code. Checked by hand; see the crate README.
printf 'The secret launch code is %s.\n' "$CODE" > "$WORK/notes.txt"
cd "$WORK"
# pi's default prompt has no hints for small models; these keep a 1.5B model on the tool.
HINTS="Give tool paths relative to the working directory. To read a whole file, call read with only its path. Answer from what the tools returned; never invent file contents."
CMD=("$TERN" --base-url "$URL" --model local --tools read --temperature 0 --no-session
     --append-system-prompt "$HINTS" --max-turns 4 --timeout 300 -p "What is the secret launch code written in notes.txt?")
echo "\$ cd $WORK && ${CMD[*]}"
set +e
"${CMD[@]}" >"$WORK/answer.txt" 2>"$WORK/stderr.txt"
rc=$?
set -e
# The same question in JSON mode shows the tool round trip as events.
"$TERN" --base-url "$URL" --model local --tools read --temperature 0 --no-session \
  --append-system-prompt "$HINTS" --max-turns 4 \
  --timeout 300 --mode json "What is the secret launch code written in notes.txt?" >"$WORK/events.jsonl" 2>/dev/null || true
echo "exit code: $rc"
echo "--- stdout"; cat "$WORK/answer.txt"
echo "--- stderr"; cat "$WORK/stderr.txt"
set +e
python3 - "$WORK/events.jsonl" "$CODE" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
calls = [e for e in events if e.get("type") == "tool_execution_end" and e.get("toolName") == "read"]
print(f"--- json mode: {len(events)} events, read calls: {len(calls)}")
for c in calls:
    text = "".join(b.get("text", "") for b in c["result"].get("content", []))
    print(f"    read result (isError={c['isError']}): {text.strip()[:80]!r}")
sys.exit(0 if calls and not any(c["isError"] for c in calls) else 1)
PY
json_ok=$?
fail=0
[ "$rc" -eq 0 ] || { echo "FAIL: exit code $rc"; fail=1; }
grep -q "$CODE" "$WORK/answer.txt" || { echo "FAIL: the answer does not contain $CODE"; fail=1; }
[ "$json_ok" -eq 0 ] || { echo "FAIL: no successful read tool call in the JSON run"; fail=1; }
[ "$fail" -eq 0 ] && echo "PASS: tool round trip and the code $CODE in the answer"
exit "$fail"
