#!/usr/bin/env bash
# Build the release `qmcbench` binary (it runs every mini-app: `qmcbench run <kernel>`) and the kernels' unit-test
# binary, and put them in .carry/ for the GPU host. cudarc loads libcuda, libnvrtc, libcublas and libcusolver at run
# time, so this machine needs no CUDA toolkit. One build, the test command's (scripts/test.sh --no-run: the release
# profile, with the `mpi` feature where MPI and libclang are installed here): the binaries CI tests are the ones
# carried, and after the tests nothing is compiled again. With the feature (Open MPI 4.1 on the host, the same
# libmpi.so.40 ABI) `mpirun -n R .carry/qmcbench run qmc|solid ...` runs R ranks; MPI=1 makes its absence an error.
# The kernels' unit tests (GPU tests included) go as .carry/kernels-tests for `scripts/gpu-host.sh tests`.
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=$(scripts/has-mpi.sh && echo yes || echo no)
[ -z "${MPI:-}" ] || [ $mpi = yes ] \
    || { echo "error: MPI=1 needs mpirun and libclang here (Debian: libopenmpi-dev openmpi-bin libclang-dev)" >&2; exit 2; }
exe=$(scripts/test.sh --no-run --message-format=json 2>/dev/null | python3 -c 'import json, sys
for m in (json.loads(x) for x in sys.stdin if x.startswith("{")):
    t = m.get("target", {})
    if m.get("executable") and t.get("name") == "kernels" and "lib" in t.get("kind", []) and m["profile"]["test"]:
        print(m["executable"])')
[ -n "$exe" ] || { echo "error: the test build gave no kernels test binary (run scripts/test.sh --no-run)" >&2; exit 1; }
mkdir -p .carry
# stripped: the working tree and the carry travel together under 64 MiB
strip -o .carry/qmcbench "${CARGO_TARGET_DIR:-target}/release/qmcbench"
strip -o .carry/kernels-tests "$exe"
echo "mpi feature: $mpi"
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
