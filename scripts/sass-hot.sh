#!/usr/bin/env bash
# Where a kernel's executed machine code lies, by source line: Nsight Compute's source page (per-instruction executed
# counts, SASS only; gpu-host.sh lattice-ncu writes it as $OUT/lattice-sass-L<L>.csv.gz) matched instruction by
# instruction to a -lineinfo build of the profiled commit's source here (NVRTC, as ptxas-info.sh; nvdisasm from the
# wheel this installs into .nvrtc/nvdisasm). It prints how many instructions hold 95% and 99% of the executions (the
# hot footprint, against the instruction cache), then the source lines that make up that footprint and their share of
# the executions. The two builds must agree opcode for opcode; the script says so and stops where they do not.
# With BY=samples it ranks the source lines by their warp-stall samples instead (where the warps wait, not what they
# execute), each with its two largest stall reasons, after the entry's shares of the stall reasons (TOP: how many
# lines, 40 by default).
# Usage: scripts/sass-hot.sh <profile.csv.gz> <entry> <commit> [file.cu, default kernels/src/lattice/lattice.cu]
# Example: 2026-12-07, 5dfe220's f32 64-register lattice entry at L = 9 (four launches): 99% of the executions in
# 3,953 of its 8,536 instructions (61.8 KB), of which the rank-1 update's span loop (three copies then) was 496.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: scripts/sass-hot.sh <profile.csv.gz> <entry> <commit> [file.cu]" >&2; exit 2; }
prof=$1 entry=$2 commit=$3 src=${4:-kernels/src/lattice/lattice.cu}
[ -f "$prof" ] || { echo "error: no such profile: $prof" >&2; exit 2; }
git cat-file -e "$commit:$src" 2>/dev/null || { echo "error: $src is not in commit $commit" >&2; exit 2; }
source scripts/nvrtc-env.sh
nvd=.nvrtc/nvdisasm/nvidia/cu13/bin/nvdisasm
if [ ! -x "$nvd" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target .nvrtc/nvdisasm "nvidia-cuda-nvdisasm==13.*" \
        || { echo "error: could not install nvidia-cuda-nvdisasm from PyPI" >&2; exit 1; }
fi
# the maths defines come from this tree (prelude-defines.sh): the build matches the profiled commit's only where the
# files they are made from are the same in both
for f in kernels/src/maths.rs kernels/src/basis.rs; do
    git diff --quiet "$commit" -- "$f" \
        || { echo "error: $f differs between $commit and this tree, so would the maths defines: run from a checkout of $commit" >&2; exit 2; }
done
defs=$(scripts/prelude-defines.sh)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git show "$commit:$src" > "$dir/src.cu"
git show "$commit:kernels/src/common.cuh" > "$dir/common.cuh"
python3 - "$defs" "$dir" "$(basename "$src")" <<'PY'
import sys
sys.path.insert(0, "scripts")
from nvrtc_build import cubin
defines, d, name = sys.argv[1:4]
_, elf = cubin(open(defines).read(), open(f"{d}/common.cuh").read(), name, open(f"{d}/src.cu").read(), "sm_90",
               ["-lineinfo"])
open(f"{d}/k.cubin", "wb").write(elf)
PY
"$nvd" -g "$dir/k.cubin" > "$dir/k.sass"
python3 - "$prof" "$entry" "$dir/k.sass" "$dir/src.cu" "$(basename "$src")" "${BY:-executed}" <<'PY'
import collections, csv, gzip, os, re, sys
prof, entry, sass, srcpath, name, by = sys.argv[1:7]
if by not in ("executed", "samples"):
    sys.exit(f"error: BY={by}: executed or samples")
def opcode(text):  # "@!P0 BRA 0x1f0" -> "BRA": the guard predicate dropped
    return re.sub(r"^@!?U?P[0-9T]\s+", "", text.strip()).split()[0]
# this build's instructions of the entry's section: (opcode, (file, line))
ins, sec, at = [], None, None
for l in open(sass):
    if m := re.match(r"\s*\.text\.(\S+):", l):
        sec = m.group(1)
    elif sec == entry and (m := re.search(r'//## File "([^"]+)", line (\d+)', l)):
        at = (m.group(1).rsplit("/", 1)[-1], int(m.group(2)))
    elif sec == entry and (m := re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", l)):
        ins.append((opcode(m.group(1)), at))
if not ins:
    sys.exit(f"error: no entry {entry} in the build of this commit")
# the profile: each launch of the entry a section; per instruction its executed count, stall samples and a Counter of
# the samples by stall reason, each summed over the launches
totals, rows, ops, hdr, take = None, [], [], None, False
def flush():
    global totals, rows
    if rows:
        totals = [tuple(a + b for a, b in zip(t, r)) for t, r in zip(totals, rows)] if totals else rows
        rows = []
with gzip.open(prof, "rt") as fh:
    for row in csv.reader(fh):
        if row and row[0] == "Kernel Name":
            take, hdr = row[1] == entry, None
            flush()
        elif take and hdr is None:
            hdr = row
            col, scol = hdr.index("Instructions Executed"), hdr.index("Warp Stall Sampling (All Samples)")
            reasons = [(i, h[len("stall_"):]) for i, h in enumerate(hdr) if h.startswith("stall_") and "(" not in h]
        elif take:
            rows.append((int(row[col]), int(row[scol]),
                         collections.Counter({r: int(row[i]) for i, r in reasons if row[i] not in ("", "0")})))
            if totals is None:  # the first launch's opcodes, to match against this build's
                ops.append(opcode(row[1]))
flush()
execd, samples, stalls = zip(*totals) if totals else ((), (), ())
if not execd:
    sys.exit(f"error: the profile has no launch of {entry}")
if len(execd) != len(ins) or any(a != b[0] for a, b in zip(ops, ins)):
    sys.exit(f"error: the profile's {entry} ({len(execd)} instructions) is not this commit's build ({len(ins)}): "
             "another commit, compiler or architecture")
text = open(srcpath).read().split("\n")
def where(at):
    return (text[at[1] - 1].strip()[:80] if at[0] == name else f"{at[0]}:{at[1]}") if at else "?"
if by == "samples":
    total = sum(samples)
    every = sum(stalls, collections.Counter())
    print(f"{total} stall samples: " + ", ".join(f"{r} {100 * n / total:.1f}%" for r, n in every.most_common(8)))
    share, why = collections.Counter(), collections.defaultdict(collections.Counter)
    for n, c, (_, at) in zip(samples, stalls, ins):
        share[at] += n
        why[at] += c
    print(f"{'samples %':>9}  {'first two reasons':<30} line")
    for at, n in share.most_common(int(os.environ.get("TOP", 40))):
        two = ", ".join(f"{r} {100 * k / max(n, 1):.0f}%" for r, k in why[at].most_common(2))
        print(f"{100 * n / total:>9.2f}  {two:<30} {at[1] if at else '?'}: {where(at)}")
    sys.exit(0)
total = sum(execd)
order = sorted(execd, reverse=True)
def footprint(frac):
    acc = 0
    for n, e in enumerate(order, 1):
        acc += e
        if acc >= frac * total:
            return n
for frac in (0.95, 0.99):
    n = footprint(frac)
    print(f"{frac:.0%} of the executed instructions in {n} of {len(ins)} ({n * 16 / 1024:.1f} KB)")
hot = order[footprint(0.99) - 1]
size, share = collections.Counter(), collections.Counter()
for e, (_, at) in zip(execd, ins):
    share[at] += e
    if e >= hot:
        size[at] += 1
print(f"{'hot instrs':>10} {'exec %':>7}  line")
for at, n in size.most_common(30):
    print(f"{n:>10} {100 * share[at] / total:>7.2f}  {at[1] if at else '?'}: {where(at)}")
PY
