#!/usr/bin/env bash
# Performance regression check for CI: the quick CPU suite, each time normalised by the CPU copy bandwidth measured
# in the same process, compared with the committed baseline (results/ci-baseline, recorded on a machine like CI's:
# 2 cores, no GPU). Single cases on such a shared machine swing from 0.25x to 4.5x between unchanged runs, so the
# check judges the suite as a whole: it fails (exit 1) when the geometric mean of new/base over all cases exceeds
# 1 + tolerance. Then it proves itself: the same suite with every timed repetition doing its work sixteen times
# (QMC_PLANT_SLOWDOWN=16) must fail the same check.
#   scripts/perf-check.sh            check, then the planted-slowdown self-test
#   scripts/perf-check.sh --record   re-record the baseline (after an intended change of speed; commit it)
set -euo pipefail
cd "$(dirname "$0")/.."
# Tolerance: unchanged runs on the 2-core machine gave geometric means from 0.45 to 1.96 against their baselines
# (README, "Performance regression check"); 3.0 (fail above 4x) clears that noise with a factor of two to spare, so
# the check catches a suite-wide slowdown of 4x or more and nothing finer.
TOL=${QMC_PERF_TOLERANCE:-3.0}
cargo build --release --locked --quiet --bin qmcbench
run() { # run the suite into $1
    rm -rf "$1"
    ./target/release/qmcbench suite --quick --variants cpu --reps 9 --quiet --out "$1" >/dev/null 2>&1
}
if [ "${1:-}" = --record ]; then
    run results/ci-baseline
    rm -rf results/ci-baseline/plots
    echo "recorded results/ci-baseline"
    exit 0
fi
run target/perf-new
./target/release/qmcbench compare results/ci-baseline target/perf-new --normalize --aggregate --tolerance "$TOL" | tail -1
echo "planted slowdown (every repetition does its work sixteen times): the check must fail"
QMC_PLANT_SLOWDOWN=16 run target/perf-planted
if ./target/release/qmcbench compare results/ci-baseline target/perf-planted --normalize --aggregate --tolerance "$TOL" | tail -1; then
    echo "error: the regression check did not catch a planted 16x slowdown" >&2
    exit 1
fi
echo "the planted 16x slowdown was caught"
