#!/usr/bin/env bash
# Drives `tern`'s interactive mode in tmux: a prompt, a permission question answered "a", a
# queued message taken back with Alt+Up and corrected, a steering message (Enter) and a
# follow-up (Alt+Enter) typed while a slow tool runs, Ctrl+C abort of a hung turn, history,
# model text with escape sequences, a resize from 110 to 60 columns, a prompt of two lines,
# Markdown, hidden thinking, keystroke echo while a model streams 1,000 deltas a second,
# `!` commands, slash commands, Ctrl+D exit; then `-c`, a call denied with a reason, `/fork`,
# and SIGTERM while a tool runs.
#
# Needs: tmux (apt-get install -y tmux), TERN_BIN (the binary) and TERN_TEST_URL (a scripted
# OpenAI-compatible server answering: 1) a bash tool call `echo warming up; sleep 5; echo slept`, 2) text
# "Noted the banana.", 3) text "Summary done.", 4) a hung stream, 5) text with escape
# sequences, ... (the list is in `tests/interactive.rs`), and last a bash tool call
# `sleep 30; echo never`). The cargo test `tests/interactive.rs` starts that
# server and runs this script:
#
#     cargo test -p tern --test interactive -- --nocapture
#
# Writes the captured panes to $TERN_TEST_OUT (default: a temp dir) and exits non-zero with
# the last pane on the first failed expectation.
set -euo pipefail

: "${TERN_BIN:?set TERN_BIN to the tern binary}"
: "${TERN_TEST_URL:?set TERN_TEST_URL to the scripted server (see the header)}"
command -v tmux >/dev/null || { echo "tmux is missing: apt-get install -y tmux" >&2; exit 77; }

OUT="${TERN_TEST_OUT:-$(mktemp -d)}"
WORK="$(mktemp -d)"
S="tern-it-$$"
mkdir -p "$WORK/home" "$WORK/cwd"
cleanup() { tmux kill-session -t "$S" 2>/dev/null || true; }
trap cleanup EXIT

step=0
capture() {
  step=$((step + 1)); tmux capture-pane -p -t "$S" > "$OUT/pane-$step-$1.txt"
  # scripts/screenshots.sh: the same panes with their colours.
  if [ -n "${TERN_TEST_SHOTS:-}" ]; then tmux capture-pane -e -p -t "$S" > "$TERN_TEST_SHOTS/$1.ansi"; fi
}

# wait_for TEXT NAME [SECONDS]: polls the pane until TEXT shows.
wait_for() {
  local text="$1" name="$2" secs="${3:-15}"
  for _ in $(seq 1 $((secs * 10))); do
    if on_screen "$text"; then capture "$name"; return 0; fi
    sleep 0.1
  done
  capture "FAILED-$name"
  echo "expected '$text' on screen ($name); the pane was:" >&2
  cat "$OUT/pane-$step-FAILED-$name.txt" >&2
  exit 1
}

# on_screen TEXT: the pane shows TEXT now.
on_screen() { tmux capture-pane -p -t "$S" | grep -qF -- "$1"; }
# expect TEXT NAME WHY / refuse TEXT NAME WHY: unless (if) the pane shows TEXT now, save it as
# FAILED-NAME, say WHY and fail.
expect() { on_screen "$1" || { capture "FAILED-$2"; echo "$3" >&2; exit 1; }; }
refuse() { if on_screen "$1"; then capture "FAILED-$2"; echo "$3" >&2; exit 1; fi; }

# start_tern [FLAG]: tern against the scripted server in a new pane; the pane then shows
# tern's exit code and stays a while.
start_tern() {
  tmux new-session -d -s "$S" -x 110 -y 36 \
    "cd '$WORK/cwd' && env HOME='$WORK/home' TERN_SESSION_DIR='$WORK/home/sessions' TERN_CONFIG=/dev/null \
     '$TERN_BIN' --base-url '$TERN_TEST_URL' --model scripted --tools read,bash,write,edit ${1:-}; \
     echo \"TERN-EXIT=\$?\"; sleep 30"
}

# allow_bash PROMPT COMMAND ASKED RUNNING: sends PROMPT, answers the permission question for
# bash with "y", and waits until COMMAND runs (ASKED and RUNNING name the captures).
allow_bash() {
  tmux send-keys -t "$S" "$1" Enter
  wait_for "Allow bash" "$3"
  tmux send-keys -t "$S" "${5:-y}"
  wait_for "$2" "$4"
}

start_tern
wait_for "ready" "started"
# `a` allows bash for the rest of this session.
allow_bash "run the slow thing" "sleep 5" "permission-question" "tool-running" a
# The running command's output so far shows live beside it.
wait_for "│ warming up" "tool-live-tail"
# A queued message comes back to the input with Alt+Up, to be corrected and sent again.
tmux send-keys -t "$S" "typo mesage" Enter
wait_for "queued steer: typo mesage" "typo-queued"
wait_for "↳ Alt+Up to edit all queued messages" "queue-hint"
tmux send-keys -t "$S" M-Up
wait_for "steer> typo mesage" "dequeued"
refuse "queued steer: typo" "dequeue" "the message taken back is still queued"
tmux send-keys -t "$S" C-u
tmux send-keys -t "$S" "also mention banana" Enter
wait_for "queued steer: also mention banana" "steer-queued"
tmux send-keys -t "$S" "then summarize" M-Enter
wait_for "queued follow-up: then summarize" "follow-up-queued"
wait_for "Noted the banana." "answer-after-steer" 20
# The tool call reads as a person reads it (pi's tool rows), not as JSON arguments.
wait_for "✓ bash echo warming up; sleep 5; echo slept → slept (2 lines) · exit 0" "tool-line-readable"
# Ctrl+O shows the last call's whole output.
tmux send-keys -t "$S" C-o
wait_for "── output of bash echo warming up; sleep 5; echo slept ──" "output-expanded"
tmux capture-pane -p -t "$S" | grep -qx "warming up" \
  || { capture "FAILED-output-lines"; echo "the expanded output lacks its lines" >&2; exit 1; }
refuse '{"command"' "tool-json" "a tool call is shown as raw JSON"
wait_for "Summary done." "answer-after-follow-up" 20
wait_for "ready" "idle-again"
# bash was allowed for the session: the next call runs without a question.
tmux send-keys -t "$S" "run it again" Enter
wait_for "Ran again." "always-allowed"
refuse "Allow bash \`echo again" "asked-again" "asked again after 'always this session'"
expect "allowed (this session) bash echo again" "always-note" "no note of the call allowed for the session"
# A call of each file tool, as pi's rows name them: write with its line count, edit with its
# diff, read with its line range, and a failed read in red with the reason.
tmux send-keys -t "$S" "touch files" Enter
wait_for "Allow write" "write-asked"
tmux send-keys -t "$S" y
wait_for "Allow edit" "edit-asked"
tmux send-keys -t "$S" y
wait_for "Files done." "file-tools"
pane="$(tmux capture-pane -p -t "$S")"
for shown in '✓ write new.txt (3 lines)' '✓ edit new.txt' '-beta' '+BETA' \
             '✓ read new.txt:2-3 → BETA (2 lines)' '✗ read missing.txt → '; do
  printf '%s\n' "$pane" | grep -qF -- "$shown" \
    || { capture "FAILED-file-tools"; echo "not on screen: $shown" >&2; exit 1; }
done
[ "$(cat "$WORK/cwd/new.txt")" = "$(printf 'alpha\nBETA\ngamma')" ] \
  || { echo "write and edit did not leave the file expected" >&2; exit 1; }
# The footer: the folder, tokens in and out, the context used of the window, the model.
printf '%s\n' "$pane" | grep -qE '^ready ↑[0-9.]+k? ↓[0-9.]+k? [0-9.]+%/128k \(auto\) +scripted$' \
  || { capture "FAILED-footer"; echo "the footer lacks its fields" >&2; exit 1; }
tmux send-keys -t "$S" "hang please" Enter
wait_for "Thinking about it" "hung-turn"
tmux send-keys -t "$S" C-c
wait_for "aborted; the session is kept" "aborted"
tmux send-keys -t "$S" Up
wait_for "> hang please" "history-up"
tmux send-keys -t "$S" C-u
# A paste of several lines goes on the line as one marker; its newlines send nothing.
printf 'line one\nline two\nline three\n' | tmux load-buffer -
tmux paste-buffer -p -t "$S"
wait_for "> [paste #1 +3 lines]" "paste-marker"
refuse "› line one" "paste-sent" "a pasted newline sent the line"
tmux send-keys -t "$S" C-u
# Ctrl+R searches the history; Enter puts the match on the line.
tmux send-keys -t "$S" C-r "banana"
wait_for "(search 'banana'): also mention banana" "history-search"
tmux send-keys -t "$S" Enter
wait_for "> also mention banana" "history-search-accepted"
tmux send-keys -t "$S" C-u
# Escape sequences in model text (set the title, clear the screen) must not drive the terminal.
tmux send-keys -t "$S" "evil please" Enter
wait_for "before]2;owned after[2J end" "escapes-shown-as-text"
title="$(tmux display -p -t "$S" '#{pane_title}')"
if [ "$title" = owned ]; then
  echo "the model's escape sequence retitled the terminal" >&2; exit 1
fi
# Narrower: the terminal reflows the live rows (the footer is 109 columns wide); they are
# drawn again once, none left behind.
footer_rows() { tmux capture-pane -p -t "$S" | grep -cxF "$WORK/cwd" || true; }
[ "$(footer_rows)" = 1 ] || { capture "FAILED-footer-before"; echo "not one footer before the resize" >&2; exit 1; }
tmux resize-window -t "$S" -x 60
sleep 0.5
[ "$(footer_rows)" = 1 ] || { capture "FAILED-resize-redraw"; echo "the resize left a footer row behind" >&2; exit 1; }
capture "resized-60"
# A prompt of two lines: Ctrl+J starts the second; both show, and go as one message.
tmux send-keys -t "$S" "show" C-j "markdown"
wait_for "  markdown" "two-lines"
tmux capture-pane -p -t "$S" | grep -qx "> show" \
  || { capture "FAILED-two-lines"; echo "the first line is not on its own row" >&2; exit 1; }
# Markdown renders: no markers, fences or table rules as typed; words wrap whole at 60 columns.
tmux send-keys -t "$S" Enter
wait_for "between words." "markdown-rendered"
pane="$(tmux capture-pane -p -t "$S")"
for raw in '**bold**' '`code`' '```' '|---|' '## Plan' '- first item'; do
  if printf '%s\n' "$pane" | grep -qF -- "$raw"; then
    capture "FAILED-markdown-raw"; echo "raw markdown on screen: $raw" >&2; exit 1
  fi
done
for shown in 'Plan' 'Use bold words and code here.' '• first item' '── rust ──' \
             'let total = a ** b;' 'name  │ size' 'alpha │ 1'; do
  printf '%s\n' "$pane" | grep -qF -- "$shown" \
    || { capture "FAILED-markdown"; echo "not on screen: $shown" >&2; exit 1; }
done
# No row wider than the screen, and no word cut at the edge.
while IFS= read -r row; do
  if [ "$(LC_ALL=C.UTF-8 bash -c 'printf %s "${#1}"' _ "$row")" -gt 60 ]; then
    capture "FAILED-markdown-width"; echo "a row is wider than 60 columns: $row" >&2; exit 1
  fi
done <<< "$pane"
for row in 'This closing sentence is long enough that a sixty column' \
           'screen must wrap it between words.'; do
  printf '%s\n' "$pane" | grep -qxF -- "$row" \
    || { capture "FAILED-markdown-wrap"; echo "not a row of its own: $row" >&2; exit 1; }
done
tmux resize-window -t "$S" -x 110
# Ctrl+T hides thinking: a dim line stands for it.
tmux send-keys -t "$S" C-t
tmux send-keys -t "$S" "think please" Enter
wait_for "Thought it through." "thinking-hidden"
refuse "secret musing" "thinking-shown" "hidden thinking on screen"
expect "thinking… (Ctrl+T shows it)" "thinking-note" "no line stands for the hidden thinking"
tmux send-keys -t "$S" C-t
# Keystroke echo while the model streams 1,000 deltas a second: the time from a key sent to
# the pane showing it, reported (not asserted).
tmux send-keys -t "$S" "flood please" Enter
wait_for "word word" "flood-started"
times=()
typed=""
for i in $(seq 1 10); do
  typed="${typed}k"
  t0=$EPOCHREALTIME
  tmux send-keys -t "$S" "k"
  until on_screen "steer> $typed"; do :; done
  t1=$EPOCHREALTIME
  times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
  sleep 0.1
done
sorted="$(printf '%s\n' "${times[@]}" | sort -n)"
echo "keystroke echo while streaming 1,000 deltas/s (ms, 10 keys): median $(echo "$sorted" | sed -n 5p)," \
  "max $(echo "$sorted" | tail -1); all: ${times[*]}" | tee "$OUT/keystroke-echo.txt"
tmux send-keys -t "$S" C-u
wait_for "Flood done." "flood-done" 30
wait_for "ready" "idle-after-flood"
# `!cmd` runs here and its output goes to the model with the next prompt; `!!cmd` does not.
tmux send-keys -t "$S" '!echo bang-$((6*7))' Enter
wait_for "bang-42" "user-bash-output"
wait_for "(exit 0)" "user-bash-done"
tmux send-keys -t "$S" '!!echo quiet-$((5*5))' Enter
wait_for "quiet-25" "user-bash-excluded"
wait_for "ready" "idle-after-user-bash"
# Slash commands about the session and its model.
tmux send-keys -t "$S" "/model" Enter
wait_for "• " "model-list"
wait_for "/scripted" "model-list-current"
tmux send-keys -t "$S" "/tools" Enter
wait_for "bash — " "tools-listed"
tmux send-keys -t "$S" "/name tmux demo" Enter
wait_for "session named tmux demo" "named"
tmux send-keys -t "$S" "/session" Enter
wait_for "assistant, " "session-stats"
tmux send-keys -t "$S" "/copy" Enter
wait_for "copied the last answer" "copied"
# Tab completes a command, and a file after @.
tmux send-keys -t "$S" "/mo" Tab
wait_for "> /model" "tab-command"
tmux send-keys -t "$S" C-u
touch "$WORK/cwd/notes-for-tab.md"
tmux send-keys -t "$S" "see @notes" Tab
wait_for "> see @notes-for-tab.md" "tab-file"
tmux send-keys -t "$S" C-u
# /new, then /resume lists this directory's other sessions and /resume 1 goes back to the
# first, its conversation shown again.
tmux send-keys -t "$S" "/new" Enter
wait_for "new session:" "new-session"
tmux send-keys -t "$S" "/resume" Enter
wait_for "/resume N continues one" "resume-list"
tmux send-keys -t "$S" "/resume 1" Enter
wait_for "resumed" "resumed-by-command"
shown="$(tmux capture-pane -p -t "$S" -S -3000 | grep -cF '› also mention banana' || true)"
[ "$shown" -ge 2 ] || { capture "FAILED-resume-history"; echo "/resume did not show the conversation again" >&2; exit 1; }
tmux send-keys -t "$S" "/frobnicate" Enter
wait_for "unknown command /frobnicate; /help lists the commands" "unknown-command"
tmux send-keys -t "$S" C-d
wait_for "TERN-EXIT=0" "exited"
# The exit hint names a command that works: run it (without TERN_SESSION_DIR, so it must name
# the session folder itself); the session's last run ended, so there is nothing to recover.
wait_for "To resume this session:" "resume-hint"
resume="$(tmux capture-pane -p -t "$S" | grep -A1 -F "To resume this session:" | tail -1)"
case "$resume" in
  "tern "*) ;;
  *) echo "no resume command after the hint: '$resume'" >&2; exit 1 ;;
esac
# shellcheck disable=SC2086 # the command's words, as a shell would split them
out="$(cd "$WORK/cwd" && env HOME="$WORK/home" TERN_CONFIG=/dev/null "$TERN_BIN" ${resume#tern } --recover 2>&1)" \
  || { echo "the resume command failed: $resume: $out" >&2; exit 1; }
echo "$out" | grep -q "nothing to recover" || { echo "the resume command found no session: $out" >&2; exit 1; }

# SIGTERM while a tool runs: the run is aborted, the command's processes die, the session is
# kept, tern exits with the abort code.
tmux kill-session -t "$S"
start_tern -c
wait_for "resumed:" "resumed"
# The earlier conversation shows again, rendered as it was while it ran.
for shown in '› run the slow thing' '✓ bash echo warming up; sleep 5; echo slept' 'Noted the banana.' \
             '• first item' 'name  │ size' '$ echo bang-$((6*7))'; do
  tmux capture-pane -p -t "$S" -S -3000 | grep -qF -- "$shown" \
    || { capture "FAILED-history"; echo "the resumed screen lacks: $shown" >&2; exit 1; }
done
# A call denied with a reason: the dialog takes the reason, the model reads it.
tmux send-keys -t "$S" "delete the build folder" Enter
wait_for "[n] deny with a reason" "deny-dialog"
tmux send-keys -t "$S" n
wait_for "reason (Enter denies" "deny-reason"
tmux send-keys -t "$S" "keep the build folder"
wait_for "Esc: no reason): keep the build folder" "deny-reason-typed"
tmux send-keys -t "$S" Enter
wait_for "denied bash rm -rf build (keep the build folder)" "denied-with-reason"
wait_for "Understood, keeping it." "answer-after-denial"
# /fork waits for the run to end (while it works the command says so).
wait_for "ready" "idle-after-denial"
# /fork lists the prompts; /fork N starts a new session before prompt N, its text on the input.
tmux send-keys -t "$S" "/fork" Enter
wait_for "/fork N starts a new session from before prompt N" "fork-list"
n="$(tmux capture-pane -p -t "$S" | grep -F ". delete the build folder" | grep -oE '[0-9]+' | head -1)"
[ -n "$n" ] || { capture "FAILED-fork-list"; echo "the prompt is not in /fork's list" >&2; exit 1; }
tmux send-keys -t "$S" "/fork $n" Enter
wait_for "Forked to new session" "forked"
wait_for "> delete the build folder" "fork-input"
tmux send-keys -t "$S" C-u
allow_bash "run the long thing" "sleep 30" "permission-question-2" "long-tool-running"
sleep 0.5
shell="$(tmux display -p -t "$S" '#{pane_pid}')"
tern_pid="$(pgrep -P "$shell" | head -1)"
sleeper="$(pgrep -f 'sleep 30; echo never' | head -1 || true)"
[ -n "$tern_pid" ] && [ -n "$sleeper" ] || { echo "no tern ($tern_pid) or tool ($sleeper) process" >&2; exit 1; }
kill -TERM "$tern_pid"
wait_for "TERN-EXIT=130" "sigterm-exit"
for _ in $(seq 1 50); do kill -0 "$sleeper" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$sleeper" 2>/dev/null; then
  echo "the tool's process $sleeper outlived tern after SIGTERM" >&2; exit 1
fi
grep -q "run the long thing" "$WORK"/home/sessions/*/*.jsonl || { echo "the session lost the prompt" >&2; exit 1; }
echo "interactive: all steps passed; panes in $OUT"
