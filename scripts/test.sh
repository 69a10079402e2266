#!/usr/bin/env bash
# The test command: every unit and integration test of the workspace, with the NVRTC compile check of every CUDA
# kernel (no GPU needed). On a GPU host the GPU tests run too.
# In the release profile: on 2 cores its build takes 8.5 min against the 13-17 min of the kernels' tests alone at
# opt-level 1, its tests run in 1.5 min, and the integration tests leave every mini-app's optimized binary in
# target/release for what CI runs next (the MPI check, the quick suite, the instruction check), with no second build.
# With the `mpi` feature where MPI and libclang are installed, as the GPU host's binaries are built.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nvrtc-env.sh
[ -e .nvrtc/nvidia/cu13/lib/libnvrtc.so.13 ] && export QMC_REQUIRE_NVRTC=1
features=()
if scripts/has-mpi.sh; then
    features=(--features miniapps/mpi)
fi
cargo test --workspace --locked --release "${features[@]}" "$@"
