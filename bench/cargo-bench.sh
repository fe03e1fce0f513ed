#!/usr/bin/env bash
# The micro-benchmarks (divan): record appends with and without fdatasync,
# reading and folding a 100,000-event record, the vote tally, reading a
# reply. Writes the output to bench/results/cargo-bench.txt as well.
#
#   bash bench/cargo-bench.sh            # GAVEL_BENCH_DIR=DIR to append on another disk
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$ROOT/bench/results"
cd "$ROOT"
{
    echo "# cargo bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) vCPU, load $(cut -d' ' -f1 /proc/loadavg), $(git describe --always --dirty 2>/dev/null || echo '?')"
    cargo bench --quiet -p gavel-record -p gavel-domain --bench record --bench domain 2>&1
} | tee "$ROOT/bench/results/cargo-bench.txt"
