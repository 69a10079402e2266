#!/bin/sh
# Device code compiled for the host with g++ (scripts/cu-host.h supplies CUDA's vocabulary) and run against the Rust
# code it mirrors, so the device arithmetic, random numbers and draw order are checked before the GPU host runs them:
# - qmc.cu's step kernel against the CPU driver on every system and precision (scripts/qmc-cu-host.cpp);
# - the synthetic solid's per-walker random draws (kernels/src/solid/draws.cu) against solid::draws, bit for bit
#   (scripts/solid-draws-host.cpp);
# - the plane-wave kernel (kernels/src/planewave/planewave.cu) against planewave::PlaneWaves::evaluate in double and
#   float, every block and thread of a launch one at a time, padding included (scripts/planewave-host.cpp);
# - the lattice kernel's rebuild of W (lattice.cu Chain::reinvert) by a block of host threads against the plain
#   Gauss-Jordan, bit for bit (scripts/lattice-reinvert-host.cpp, scripts/cu-block-host.h);
# - the lattice kernel whole (lattice.cu's run: draws, look-ahead batches, updates, rebuilds, measurements), a block
#   of host threads a chain, on launches a Rust test writes and a Rust test then checks: double on the reference
#   path, single and mixed on the CPU's path or their own state (scripts/lattice-run-host.cpp; lattice::tests
#   host_runs).
# Usage: scripts/cu-on-host.sh   (from the repository root)
set -e
dir=$(mktemp -d)
mkdir "$dir/qmc" "$dir/draws" "$dir/planewave" "$dir/lattice"
# through the test command (its profile, features and --workspace selection): after it nothing is compiled again,
# where `-p kernels --lib` resolved the dependencies' features apart and rebuilt the kernels (288 s of CI on 2 cores)
QMC_HOST_DUMP="$dir/qmc" SOLID_DRAWS_DUMP="$dir/draws" PLANEWAVE_DUMP="$dir/planewave" LATTICE_RUN_DUMP="$dir/lattice" \
    scripts/test.sh -q -- --ignored qmc::gpu_tests::dump_for_the_host_build solid::tests::dump_draws_for_the_host_build \
    planewave::tests::dump_for_the_host_build lattice::tests::dump_runs_for_the_host_build >/dev/null
# the defines the GPU layer puts before the prelude (kernels::maths::prelude_defines), written by the qmc dump
g++ -O1 -std=c++17 -include "$dir/qmc/prelude-defines.h" -o "$dir/qmc-host" scripts/qmc-cu-host.cpp
g++ -O1 -std=c++17 -include "$dir/qmc/prelude-defines.h" -o "$dir/draws-host" scripts/solid-draws-host.cpp
g++ -O1 -std=c++17 -include "$dir/qmc/prelude-defines.h" -o "$dir/planewave-host" scripts/planewave-host.cpp
g++ -O1 -std=c++20 -ffp-contract=off -pthread -include "$dir/qmc/prelude-defines.h" -o "$dir/reinvert-host" scripts/lattice-reinvert-host.cpp
g++ -O1 -std=c++20 -ffp-contract=off -pthread -include "$dir/qmc/prelude-defines.h" -o "$dir/lattice-run-host" scripts/lattice-run-host.cpp
status=0
for s in "$dir"/qmc/*/; do "$dir/qmc-host" "${s%/}" || status=1; done
"$dir/draws-host" "$dir/draws" || status=1
"$dir/planewave-host" "$dir/planewave" || status=1
"$dir/reinvert-host" || status=1
if "$dir/lattice-run-host" "$dir/lattice"; then
    LATTICE_RUN_DUMP="$dir/lattice" scripts/test.sh -q -- --ignored lattice::tests::check_runs_of_the_host_build \
        > "$dir/lattice-check.log" 2>&1 && grep -q "test result: ok. 1 passed" "$dir/lattice-check.log" \
        || { cat "$dir/lattice-check.log"; echo "cu-on-host: the lattice host runs' check failed or did not run" >&2; status=1; }
else
    status=1
fi
rm -rf "$dir"
exit $status
