#!/usr/bin/env bash
# Registers, machine-code size and spills of every kernel of a .cu file, without a GPU: NVRTC (the wheel
# scripts/nvrtc-env.sh installs) compiles the file as the GPU layer does (kernels::gpu::compile: the maths defines,
# common.cuh, then the file) for a real architecture with ptxas's report, one line an entry or out-of-line function
# (code: the entry's section of the cubin, its out-of-line callees included). What a change does to a kernel's
# register pressure shows here in seconds; the GPU host measures what it does to the time.
# Usage: scripts/ptxas-info.sh kernels/src/lattice/lattice.cu [sm_90] [grep filter]
# Example: 2026-12-07, lattice.cu: mixed's 64-register entry spilled 60 / 272 bytes (stores / loads) where single's
# spilled none; the rebuild's M_all argument was why (lattice.cu m_slice).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: scripts/ptxas-info.sh <file.cu> [sm_XY] [filter]}
arch=${2:-sm_90}
filter=${3:-}
[ -f "$src" ] || { echo "error: no such file: $src" >&2; exit 2; }
source scripts/nvrtc-env.sh
defs=$(scripts/prelude-defines.sh)
python3 - "$defs" "$src" "$arch" <<'EOF' | { if [ -n "$filter" ]; then grep -E "$filter"; else cat; fi; }
import re, struct, sys
sys.path.insert(0, "scripts")
from nvrtc_build import cubin
defines, path, arch = sys.argv[1:4]
log, elf = cubin(open(defines).read(), open("kernels/src/common.cuh").read(), path.rsplit("/", 1)[-1],
                 open(path).read(), arch, ["--ptxas-options=-v"])
# each function's machine code: the cubin's .text.<function> sections (ELF64 section headers)
shoff, = struct.unpack_from("<Q", elf, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
sections = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
strtab = sections[shstrndx][4]
code = {}
for name, _, _, _, _, sz in sections:
    sec = elf[strtab + name:elf.index(b"\0", strtab + name)].decode()
    if sec.startswith(".text."):
        code[sec[6:]] = sz
# "Function properties for F" then its stack and spills, then (entries) "Used R registers"
fn, out = None, []
for line in log.splitlines():
    if m := re.search(r"Function properties for (\S+)", line):
        fn = m.group(1)
        out.append([fn, "", ""])
    elif fn and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
        out[-1][1] = f"stack {m.group(1)}, spills {m.group(2)} / {m.group(3)} bytes (stores / loads)"
    elif fn and (m := re.search(r"Used (\d+) registers", line)):
        out[-1][2] = f"{m.group(1)} registers"
for f, spill, regs in out:
    kb = f"code {code[f] / 1024:5.1f} KB" if f in code else ""
    print(f"{f:<40} {regs:<14} {kb:<14} {spill}" if len(f) <= 40 else f"{f}\n{'':<40} {regs:<14} {kb:<14} {spill}")
EOF
