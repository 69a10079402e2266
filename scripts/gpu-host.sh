#!/usr/bin/env bash
# Run on the GPU host: the measurements of a session in one go. Usage: scripts/gpu-host.sh STAGE...
#   foundation  ceilings and the B-spline sweep (paper 000's bandwidth claim, tables of 1-8 GB)
#   kernels     the full suite of every other mini-app, GPU and all-core CPU, plus one-core CPU baselines
# Records go to $OUT/records.tgz (one archive: the host returns at most 8 files), the log to $OUT/log.txt.
# Unpack locally with scripts/import-results.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/qmc-out}
REC=/tmp/qmc-records
BIN=${BIN:-.carry/qmcbench}
mkdir -p "$OUT" "$REC"
exec > >(tee -a "$OUT/log.txt") 2>&1

# cudarc opens libnvrtc and libcublas by name: put the toolkit's folders on the search path.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
for lib in libnvrtc.so.13 libcublas.so.13; do
    if ! ldconfig -p | grep -q "$lib" && ! ls ${LD_LIBRARY_PATH//:/\/$lib } >/dev/null 2>&1; then
        f=$(find /usr /opt -name "$lib" 2>/dev/null | head -1)
        [ -n "$f" ] && export LD_LIBRARY_PATH="$(dirname "$f"):$LD_LIBRARY_PATH"
    fi
done
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv || true
nproc; grep -m1 "model name" /proc/cpuinfo

fail=0
run() { # run a qmcbench command, keep going on failure, remember it
    echo "+ qmcbench $*"
    local t0=$SECONDS
    "$BIN" "$@" --quiet --out "$REC" || { echo "FAILED (exit $?): qmcbench $*"; fail=1; }
    echo "  ($((SECONDS - t0)) s)"
}

for stage in "$@"; do
    case $stage in
    foundation)
        "$BIN" list
        run ceilings
        # Tables of 0.27-8.6 GB: grid 64^3 with 256..4096 orbitals; walkers 16..1024. cpu-ref only validates.
        run run bspline --grid 64 --orbitals 256,1024,4096 --walkers 16,128,1024 --variants cpu,gpu
        # One core, for the speedup over a single core (the papers' usual baseline).
        run run bspline --grid 64 --orbitals 256,1024,4096 --walkers 128 --variants cpu --threads 1 --reps 3
        run run bspline --grid 64 --orbitals 1024 --walkers 16,128,1024 --output vgl --variants cpu,gpu
        run run bspline --grid 64 --orbitals 1024 --walkers 16,128,1024 --basis blip --variants cpu,gpu --precision single
        ;;
    kernels)
        for k in $("$BIN" list | awk '/^kernels:/{f=1;next} /^devices:/{f=0} f{print $1}'); do
            [ "$k" = bspline ] && continue
            run suite --full --kernels "$k" --variants cpu,gpu
        done
        ;;
    *) echo "unknown stage $stage"; fail=1 ;;
    esac
done
tar czf "$OUT/records.tgz" -C "$REC" .
echo "records: $(cat "$REC"/*.jsonl 2>/dev/null | wc -l) in $OUT/records.tgz"
exit $fail
