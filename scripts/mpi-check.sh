#!/usr/bin/env bash
# The DMC driver across two MPI ranks: build `qmc` with the `mpi` feature, run a small He DMC on one rank and under
# `mpirun -n 2`, and check that the two energies agree within error bars and that the two-rank record says so; then
# the batched engine's lagged ranks (`solid --sync lagged`, whose sums travel as MPI point-to-point messages) under
# `mpirun -n 2`: the run passes its checks and its record says 2 MPI ranks, lagged.
# Needs an MPI library and libclang (Debian: libopenmpi-dev openmpi-bin libclang-dev; .ci/run installs them).
# Usage: scripts/mpi-check.sh [out-dir]   (QMC: a `qmc` built with the mpi feature, else a release build of it)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/mpi-check}
rm -rf "$out"
bin=${QMC:-}
if [ -z "$bin" ]; then
    cargo build --release --locked --quiet -p miniapps --features mpi --bin qmc --bin solid
    bin=${CARGO_TARGET_DIR:-target}/release/qmc
fi
# OpenMPI refuses to run as root (CI containers) unless told twice
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# 500/Ha of DMC at tau = 0.04: long enough for a converged error bar (a record without one fails, exit 1)
args=(--method dmc --system he --walkers 64 --steps 12500 --tau 0.04 --precision double --variants cpu --quiet)
"$bin" "${args[@]}" --out "$out/one"
mpirun --oversubscribe -n 2 "$bin" "${args[@]}" --out "$out/two"
# energy and error of a record file's one record
field() { grep -o "\"$2\":[-0-9.e+]*" "$1/qmc.jsonl" | tail -1 | cut -d: -f2; }  # the last: extra (the checks come first)
grep -q '"ranks":2' "$out/two/qmc.jsonl" && grep -q '"transport":"mpi"' "$out/two/qmc.jsonl" \
    || { echo "mpi-check: the mpirun record does not say 2 MPI ranks" >&2; exit 1; }
awk -v e1="$(field "$out/one" energy)" -v s1="$(field "$out/one" error)" \
    -v e2="$(field "$out/two" energy)" -v s2="$(field "$out/two" error)" 'BEGIN {
    d = e1 - e2; if (d < 0) d = -d; tol = 4 * sqrt(s1 * s1 + s2 * s2)
    printf "mpi-check: one rank %.5f +- %.5f, two MPI ranks %.5f +- %.5f: |diff| %.5f, allowed %.5f\n", e1, s1, e2, s2, d, tol
    exit !(d < tol) }'
# the lagged ranks of the batched CPU engine (the `solid` beside `qmc`), their sums in flight one generation and
# three (several started sums of one tag in flight at once between two processes); at lag 3 with shares by speed,
# and the ranks waiting asleep (QMC_MPI_WAIT=sleep: every sum, the blocking ones too, point to point)
solid=$(dirname "$bin")/solid
for run in "1 spin equal" "3 sleep speed"; do
    read -r lag wait balance <<< "$run"
    QMC_MPI_WAIT=$wait mpirun --oversubscribe -x QMC_MPI_WAIT -n 2 "$solid" --system gas --electrons 14 --walkers 16 --steps 40 \
        --tau 0.05 --variants cpu --precision double --threads 1 --sync lagged --lag $lag --balance $balance --quiet --out "$out/lagged-$lag"
    want=('"ranks":2' '"transport":"mpi"' '"sync":"lagged"' '"status":"passed"')
    [ "$wait" = sleep ] && want+=('"mpi_wait":"sleep"' '"balance":"speed"')
    for w in "${want[@]}"; do
        grep -q "$w" "$out/lagged-$lag/solid.jsonl" || { echo "mpi-check: the lagged mpirun record (--lag $lag, $wait) lacks $w" >&2; exit 1; }
    done
    echo "mpi-check: lagged solid over two MPI ranks, --lag $lag, waits $wait, $balance shares, passed"
done
# a wait that is neither is refused in one line
if QMC_MPI_WAIT=nap mpirun --oversubscribe -x QMC_MPI_WAIT -n 2 "$solid" --system gas --electrons 14 --walkers 16 --steps 2 \
    --variants cpu --threads 1 --quiet --out "$out/nap" 2> "$out/nap.err"; then
    echo "mpi-check: QMC_MPI_WAIT=nap was not refused" >&2; exit 1
fi
grep -q "QMC_MPI_WAIT=nap: a rank waits by spin" "$out/nap.err" || { echo "mpi-check: QMC_MPI_WAIT=nap: no clear message" >&2; cat "$out/nap.err" >&2; exit 1; }
echo "mpi-check: QMC_MPI_WAIT=nap refused"
