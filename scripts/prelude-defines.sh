#!/usr/bin/env bash
# Prints the path of the maths defines the GPU layer puts before the prelude (kernels::maths::prelude_defines), for
# the scripts that compile a .cu file as the GPU layer does (ptxas-info.sh, sass-hot.sh). The qmc dump test writes
# them (a test build, minutes after a change of the kernels crate, a .cu file's included); they are kept in the target
# folder until the two files they come from change, so an edit of a .cu file then takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
defs=${CARGO_TARGET_DIR:-target}/ptxas-info/prelude-defines.h
if [ ! -s "$defs" ] || [ kernels/src/maths.rs -nt "$defs" ] || [ kernels/src/basis.rs -nt "$defs" ]; then
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    QMC_HOST_DUMP="$dir" scripts/test.sh -q -- --ignored qmc::gpu_tests::dump_for_the_host_build >/dev/null
    mkdir -p "$(dirname "$defs")"
    cp "$dir/prelude-defines.h" "$defs.tmp" && mv "$defs.tmp" "$defs"
fi
echo "$defs"
