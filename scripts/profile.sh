#!/usr/bin/env bash
# Profiles an Iron bench with perf and draws where its time goes:
#
#   scripts/profile.sh [--debug] BENCH-ARGS…     e.g. scripts/profile.sh log
#                                                     scripts/profile.sh --debug --smoke jobs
#
# runs `iron bench BENCH-ARGS…` twice under `perf record` (Debian: `apt-get install
# linux-perf`; run as root or with kernel.perf_event_paranoid <= 1):
#   1. on-CPU: stacks sampled at 499 Hz with DWARF unwinding (Rust keeps no frame pointers),
#      following every process the bench starts;
#   2. off-CPU: every scheduler switch system-wide with its stack, kept for the bench's own
#      process tree: the time each thread waited (locks, fsync, channels, sleeps, the network).
# and writes under target/profile/<args>-<time>/: on-cpu.svg and off-cpu.svg (flame graphs,
# scripts/flamegraph.py), their .folded stacks, each run's perf.data, and bench.txt (what the
# bench printed, so a profile keeps the figures it explains). Release build by default (what
# BENCHMARKS.md measures); --debug profiles the test build.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
if [ "${1:-}" = "--debug" ]; then profile=debug; shift; fi
if [ $# -lt 1 ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
name=$(printf '%s' "$*" | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//')
command -v perf >/dev/null || { echo "perf not found: apt-get install linux-perf" >&2; exit 1; }

if [ "$profile" = release ]; then
  cargo build --release --bins
else
  cargo build --bins
fi
iron="target/$profile/iron"
out="target/profile/$name-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"

echo "== on-CPU: perf record of iron bench $* ($profile)"
perf record -F 499 --call-graph dwarf,16384 -o "$out/on-cpu.perf.data" -- \
  "$iron" bench "$@" | tee "$out/bench.txt"
perf script -i "$out/on-cpu.perf.data" > "$out/on-cpu.txt" 2>/dev/null
python3 scripts/flamegraph.py on-cpu "$out/on-cpu.txt" "$out/on-cpu.svg" \
  --title "iron bench $* — on CPU ($profile)"

echo "== off-CPU: scheduler switches during a second run"
# The bench's own pid, so only its process tree counts.
perf record -a -g -e sched:sched_switch -e sched:sched_process_fork \
  -o "$out/off-cpu.perf.data" -- \
  sh -c 'echo $$ > "$0/root.pid"; exec "$@"' "$out" "$iron" bench "$@" >/dev/null
perf script -i "$out/off-cpu.perf.data" > "$out/off-cpu.txt" 2>/dev/null
python3 scripts/flamegraph.py off-cpu "$out/off-cpu.txt" "$out/off-cpu.svg" \
  --root "$(cat "$out/root.pid")" --title "iron bench $* — off CPU ($profile)"
rm -f "$out/on-cpu.txt" "$out/off-cpu.txt"
echo "== wrote $out"
