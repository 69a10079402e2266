#!/usr/bin/env bash
# Registers and spills of every kernel entry of one module, as ptxas 13.0 compiles it for sm_90 (the H100 and H200),
# without a GPU: the module's PTX comes from NVRTC exactly as the GPU layer builds it (kernels' ignored test
# ptx_of_every_module), then ptxas -v. The entries capped at 64 and 80 registers a thread (lattice.cu) are where a
# change to the device code can add spills that no test sees and that cost a tenth of a run (issue #26, 9fd1daf).
# Installs the NVIDIA compiler wheel (ptxas, about 40 MB) into .ptxas/ on first use.
# Usage: scripts/ptx-spills.sh [MODULE]   (default lattice; from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
module=${1:-lattice}
. scripts/nvrtc-env.sh
ptxas=.ptxas/nvidia/cu13/bin/ptxas
if [ ! -x "$ptxas" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --target .ptxas "nvidia-cuda-nvcc==13.0.*" >&2
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
QMC_PTX_DUMP="$dir" cargo test --release -q -p kernels --test nvrtc -- --ignored ptx_of_every_module >/dev/null
[ -e "$dir/$module.ptx" ] || { echo "no module $module (see kernels/tests/nvrtc.rs ptx_of_every_module)" >&2; exit 2; }
"$ptxas" -arch=sm_90 -v "$dir/$module.ptx" -o "$dir/$module.cubin" 2>&1 | python3 -c '
import re, sys
name = None
print("%-32s %9s %6s %12s %11s" % ("entry", "registers", "stack", "spill stores", "spill loads"))
for line in sys.stdin:
    m = re.search(r"Function properties for (\S+)", line)
    if m:
        name, frame = m.group(1), None
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and name:
        frame = m.groups()
        continue
    m = re.search(r"Used (\d+) registers", line)
    if m and name and frame:
        print("%-32s %9s %6s %12s %11s" % (name, m.group(1), *frame))
        name = None
'
