#!/usr/bin/env bash
# Build the release `qmcbench` binary (it runs every mini-app: `qmcbench run <kernel>`) and put it in .carry/ for the
# GPU host. cudarc loads libcuda, libnvrtc, libcublas and libcusolver at run time, so this machine needs no CUDA
# toolkit. With MPI=1 it is built with the `mpi` feature (needs libopenmpi-dev and libclang here; the host has
# Open MPI 4.1, the same libmpi.so.40 ABI), so `mpirun -n R .carry/qmcbench run qmc|solid ...` runs R ranks. With
# TESTS=1 it also carries the kernels' unit tests as .carry/kernels-tests (GPU tests run there; gpu-host.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p miniapps ${MPI:+--features mpi} --bin qmcbench
mkdir -p .carry
cp target/release/qmcbench .carry/qmcbench
if [ -n "${TESTS:-}" ]; then
    tests=$(cargo test --locked -p kernels --lib --no-run 2>&1 | grep -o 'target/debug/deps/kernels-[0-9a-f]*' | tail -1)
    cp "$tests" .carry/kernels-tests
    echo "carried the kernels' unit tests ($tests) as .carry/kernels-tests"
fi
echo "built .carry/qmcbench from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!results' || echo -dirty)"
