#!/usr/bin/env bash
# Build the release `qmcbench` binary (it runs every mini-app: `qmcbench run <kernel>`) and put it in .carry/ for the
# GPU host. cudarc loads libcuda, libnvrtc and libcublas at run time, so this machine needs no CUDA toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bin qmcbench
mkdir -p .carry
cp target/release/qmcbench .carry/qmcbench
echo "built .carry/qmcbench from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!results' || echo -dirty)"
