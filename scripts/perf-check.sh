#!/usr/bin/env bash
# Performance regression check for CI: the quick CPU suite, each time normalised by the CPU copy bandwidth measured
# in the same process, compared case by case with the committed baseline (results/ci-baseline, recorded on a
# machine like CI's: 2 cores, no GPU). Fails (exit 1) when a case is slower than the baseline by more than the
# tolerance. Then it proves itself: the same suite with every timed repetition doing its work twice
# (QMC_PLANT_SLOWDOWN=2) must fail the same check.
#   scripts/perf-check.sh            check, then the planted-slowdown self-test
#   scripts/perf-check.sh --record   re-record the baseline (after an intended change of speed; commit it)
set -euo pipefail
cd "$(dirname "$0")/.."
# Tolerance: the noise of repeated unchanged runs on a 2-core CI-like machine (README, "Performance regression
# check") plus margin.
TOL=${QMC_PERF_TOLERANCE:-0.60}
cargo build --release --locked --quiet --bin qmcbench
run() { # run the suite into $1
    rm -rf "$1"
    ./target/release/qmcbench suite --quick --variants cpu --reps 9 --quiet --out "$1" >/dev/null
}
if [ "${1:-}" = --record ]; then
    run results/ci-baseline
    rm -rf results/ci-baseline/plots
    echo "recorded results/ci-baseline"
    exit 0
fi
run target/perf-new
./target/release/qmcbench compare results/ci-baseline target/perf-new --normalize --tolerance "$TOL"
echo "planted slowdown (every repetition does its work twice): the check must fail"
QMC_PLANT_SLOWDOWN=2 run target/perf-planted
if ./target/release/qmcbench compare results/ci-baseline target/perf-planted --normalize --tolerance "$TOL" >/dev/null 2>&1; then
    echo "error: the regression check did not catch a planted 2x slowdown" >&2
    exit 1
fi
echo "the planted 2x slowdown was caught"
