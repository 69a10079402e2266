#!/usr/bin/env bash
# Build the release `qmcbench` binary (it runs every mini-app: `qmcbench run <kernel>`) and the kernels' unit-test
# binary, and put them in .carry/ for the
# GPU host. cudarc loads libcuda, libnvrtc, libcublas and libcusolver at run time, so this machine needs no CUDA
# toolkit. With MPI=1 it is built with the `mpi` feature (needs libopenmpi-dev and libclang here; the host has
# Open MPI 4.1, the same libmpi.so.40 ABI), so `mpirun -n R .carry/qmcbench run qmc|solid ...` runs R ranks. It
# also carries the kernels' unit tests as .carry/kernels-tests (GPU tests run there; gpu-host.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p miniapps ${MPI:+--features mpi} --bin qmcbench
mkdir -p .carry
# stripped, like the test binary: the working tree and the carry travel together under 64 MiB
strip -o .carry/qmcbench target/release/qmcbench
# The kernels' test binary (every unit test, GPU tests included), for `scripts/gpu-host.sh tests`: built with the
# release profile (the f64 references in the tests run 5-20x faster than at opt-level 1) and stripped to fit the
# carry limit.
exe=$(cargo test --release --locked -p kernels --lib --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable")][-1])')
strip -o .carry/kernels-tests "$exe"
echo "built .carry/qmcbench from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!results' || echo -dirty)"
# One archive to carry, with the stages script (run there: tar xJf .carry/all.txz -C .carry). xz, not gzip: the
# device tool takes the tracked tree and the carry together under 64 MiB, the tree is about 57 MB of it (the
# records), and gzip's 11 MB no longer fits beside it (xz: 7 MB; xz -9e: 5.9 MB, 20 s here, taken when the tree of
# 60 MB left 7 KB beside the 7 MB).
cp scripts/gpu-host.sh .carry/
# PREV=<a stripped qmcbench of another commit> carries it as .carry/qmcbench-prev, for the stages that compare two
# builds in one run (gpu-host.sh's PREV_BIN: lu-route, fig34-prev, gemm-basis, basis-ab, lattice-ab)
# ALT=<a third build> carries it as .carry/qmcbench-alt (gpu-host.sh's ALT_BIN: lattice-ab). Builds of nearby commits
# differ little, so xz (a 64 MiB window) takes the second and third for a fraction of the first's bytes.
extra=()
if [ -n "${PREV:-}" ]; then
    cp "$PREV" .carry/qmcbench-prev
    extra=(qmcbench-prev)
fi
if [ -n "${ALT:-}" ]; then
    cp "$ALT" .carry/qmcbench-alt
    extra+=(qmcbench-alt)
fi
tar cf - -C .carry qmcbench kernels-tests gpu-host.sh "${extra[@]}" | xz -9e -T2 > .carry/all.txz
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
carry=$(du -b .carry/all.txz | cut -f1)
echo "carry .carry/all.txz: $carry bytes; with the tracked tree ($tree bytes) $((tree + carry)) of the 67108864 allowed"
[ $((tree + carry)) -lt 67108864 ] || echo "warning: the tree and .carry/all.txz exceed the device tool's 64 MiB" >&2
