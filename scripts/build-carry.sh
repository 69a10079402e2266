#!/usr/bin/env bash
# Build the release `qmcbench` binary (it runs every mini-app: `qmcbench run <kernel>`) and put it in .carry/ for the
# GPU host. cudarc loads libcuda, libnvrtc, libcublas and libcusolver at run time, so this machine needs no CUDA
# toolkit. With MPI=1 it is built with the `mpi` feature (needs libopenmpi-dev and libclang here; the host has
# Open MPI 4.1, the same libmpi.so.40 ABI), so `mpirun -n R .carry/qmcbench run qmc|solid ...` runs R ranks.
# With TESTS=1 it also puts the kernels' unit-test binary (stripped: ~14 MB) in .carry/kernels-tests for the host's
# `tests` stage, which runs the GPU tests on the GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p miniapps ${MPI:+--features mpi} --bin qmcbench
mkdir -p .carry
cp target/release/qmcbench .carry/qmcbench
if [ -n "${TESTS:-}" ]; then
    exe=$(cargo test --locked -p kernels --lib --no-run 2>&1 | sed -n 's/.*Executable unittests src\/lib.rs (\(.*\))/\1/p')
    [ -x "$exe" ] || { echo "error: no kernels test binary found" >&2; exit 2; }
    strip -o .carry/kernels-tests "$exe"
    echo "built .carry/kernels-tests from $exe"
fi
echo "built .carry/qmcbench from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!results' || echo -dirty)"
