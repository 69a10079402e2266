#!/bin/sh
# Run qmc.cu's step kernel, compiled for the host with g++, against the CPU driver on every system in double
# precision (no GPU needed): the device code's arithmetic, random numbers and draw order are checked before the
# GPU host runs it. Usage: scripts/qmc-cu-on-host.sh   (from the repository root)
set -e
dir=$(mktemp -d)
QMC_HOST_DUMP="$dir" cargo test -q -p kernels --lib qmc::gpu_tests::dump_for_the_host_build -- --ignored >/dev/null
g++ -O1 -std=c++17 -o "$dir/host" scripts/qmc-cu-host.cpp
status=0
for s in "$dir"/*/; do "$dir/host" "${s%/}" || status=1; done
rm -rf "$dir"
exit $status
