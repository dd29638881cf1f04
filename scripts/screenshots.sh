#!/usr/bin/env bash
# The interactive mode's screenshots in docs/screens/: the tmux test (crates/tern/tests/
# interactive.sh) saves its panes with their colours (TERN_TEST_SHOTS), `aha` turns a pane
# into HTML and headless Chromium photographs it. Needs tmux, aha and chromium (Debian).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in tmux aha chromium; do
  command -v "$tool" >/dev/null || { echo "screenshots need $tool (apt-get install $tool)" >&2; exit 1; }
done
shots="$(mktemp -d)"
trap 'rm -rf "$shots"' EXIT
TERN_TEST_SHOTS="$shots" cargo test -p tern --test interactive
mkdir -p docs/screens
for name in markdown-rendered always-allowed session-stats resumed deny-reason-typed dequeued; do
  [ -f "$shots/$name.ansi" ] || { echo "the test saved no pane named $name" >&2; exit 1; }
  aha --black --title "tern" < "$shots/$name.ansi" \
    | sed 's|<head>|<head><style>body{margin:12px;font:15px/1.25 "DejaVu Sans Mono",monospace}</style>|' \
    > "$shots/$name.html"
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,760 \
    --screenshot="$PWD/docs/screens/$name.png" "file://$shots/$name.html" 2>/dev/null
  echo "docs/screens/$name.png"
done
