#!/usr/bin/env bash
# The side-by-side benchmark: gavel and LangGraph doing the same work in one
# run, printed as a table with ratios and written to bench/results/latest.md
# (and the figures section of bench/README.md).
#
#   bash bench/run.sh [side_by_side.py options, e.g. --reps 5 --skip-big]
#
# From a fresh clone it: installs /usr/bin/time and hyperfine when missing (apt,
# as root), makes a venv at $GAVEL_BENCH_VENV (default
# ~/.cache/gavel-bench-venv) with the LangGraph versions of
# shared/reference/langgraph-baseline.md (skipped when they are there), builds
# gavel in release mode, then runs bench/side_by_side.py. About 4-6 minutes on
# a 2-core VM once built. Not part of CI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${GAVEL_BENCH_VENV:-$HOME/.cache/gavel-bench-venv}"
PYTHON="${PYTHON:-python3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

say() { printf '[bench] %s\n' "$*" >&2; }

# Tools: GNU time for peak RSS (required), hyperfine for short commands
# (optional: a plain loop stands in).
apt_install() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        say "installing $* with apt-get"
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
    fi
}
[ -x /usr/bin/time ] || apt_install time
[ -x /usr/bin/time ] || { say "needs GNU time at /usr/bin/time (apt-get install time)"; exit 2; }
command -v hyperfine >/dev/null || apt_install hyperfine || true
command -v strace >/dev/null || apt_install strace || true
command -v hyperfine >/dev/null || say "hyperfine not found: short commands are timed with a plain loop"

# LangGraph, pinned to the versions the reference measured.
PINS=(
    "langgraph==1.2.24"
    "langgraph-checkpoint==4.3.2"
    "langgraph-checkpoint-sqlite==3.1.2"
    "langchain-core==1.8.3"
    "langsmith==0.15.1"
)
have_pins() {
    "$VENV/bin/python" - "${PINS[@]}" <<'EOF' 2>/dev/null
import sys, importlib.metadata as m
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    if m.version(name) != version:
        sys.exit(1)
EOF
}
if [ -x "$VENV/bin/python" ] && have_pins; then
    say "LangGraph venv present: $VENV"
else
    say "making the LangGraph venv at $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip >/dev/null
    "$VENV/bin/pip" install -q "${PINS[@]}"
    have_pins || { say "the venv does not hold the pinned versions"; exit 2; }
fi

say "building gavel (release) into $CARGO_TARGET_DIR"
(cd "$ROOT" && cargo build --release --quiet -p gavel-cli)
GAVEL="$CARGO_TARGET_DIR/release/gavel"

export LANGCHAIN_TRACING_V2=false LANGSMITH_TRACING=false
exec "$PYTHON" "$ROOT/bench/side_by_side.py" --gavel "$GAVEL" --python "$VENV/bin/python" "$@"
