#!/usr/bin/env bash
# The test command: every unit and integration test of the workspace, with the NVRTC compile check of every CUDA
# kernel (no GPU needed). On a GPU host the GPU tests run too.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nvrtc-env.sh
[ -e .nvrtc/nvidia/cu13/lib/libnvrtc.so.13 ] && export QMC_REQUIRE_NVRTC=1
cargo test --workspace --locked "$@"
