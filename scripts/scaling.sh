#!/usr/bin/env bash
# DMC weak and strong scaling over CPU ranks, with records and an efficiency table.
#
#   scripts/scaling.sh OUT [MAX_RANKS]           ranks as threads of one process (--ranks R), each rank one core
#   MPI=1 scripts/scaling.sh OUT [MAX_RANKS]     ranks as MPI processes (mpirun -n R, one bound to each core; build
#                                                with --features mpi; MPIRUN_FLAGS overrides the binding)
#   QMC="path/to/qmcbench run qmc" ...           a built program instead of cargo (the GPU host has no cargo)
#
# Weak: WEAK walkers per rank (default 256), so the work grows with the ranks. Strong: STRONG walkers in all
# (default 4096), split over the ranks; KINDS="weak" or "strong" runs one of them. Ranks 1, 2, 4, ... up to MAX_RANKS
# (default: the logical cores), or the list RANKS ("1 16"; efficiencies are against its first), each run REPEAT
# times (default 1; the run of median time per generation counts); with
# threads the pool has R threads (--threads R), so R ranks use R cores. SYSTEM (default heg: the 14-electron gas,
# whose generation costs enough that communication is a fair fraction), STEPS (default 200), TAU (default 0.02;
# DMC equilibrates at least 10/Ha first, 500 generations at 0.02, which the timings include).
# BALANCE (default speed) is DMC's --balance: speed gives each rank walkers in proportion to its measured speed, so
# a persistently slow rank holds fewer and the others wait less for it; equal gives every rank the same share (the
# behaviour before issue #24, bit-reproducible runs).
# Records go to OUT/qmc.jsonl (sizes.ranks, params.transport, extra.compute/reduce/migrate_per_gen_s); the table
# OUT/scaling-threads.csv (or -mpi) has per-generation times and efficiencies: weak t(1)/t(R), strong t(1)/(R t(R)).
# Its last columns say who the ranks waited for, per generation: compute_max (each generation's slowest rank's
# compute), compute_slowest_rank (the compute of the rank slowest over the whole run), reduce_max (each generation's
# longest wait in the sum; reduce_per_gen_s is the mean over ranks). compute_slowest_rank close to compute_max: one
# rank persistently slow (what --balance speed corrects); compute_max well above it: random stragglers.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/scaling.sh OUT [MAX_RANKS]}
max=${2:-$(nproc)}
weak=${WEAK:-256} strong=${STRONG:-4096} system=${SYSTEM:-heg} steps=${STEPS:-200} tau=${TAU:-0.02} balance=${BALANCE:-speed}
mkdir -p "$out"
[ -n "${MPI:-}" ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -n "${QMC:-}" ]; then
    read -r -a bin <<< "$QMC"
else
    cargo build --release --locked --quiet ${MPI:+--features mpi} --bin qmc
    bin=("${CARGO_TARGET_DIR:-target}/release/qmc")
fi
run() { # ranks walkers
    local common=(--method dmc --system "$system" --walkers "$2" --gas-walkers "$2" --steps "$steps" --gas-steps "$steps"
        --equil 0 --tau "$tau" --balance "$balance" --precision double --variants cpu --quiet --out "$out")
    if [ -n "${MPI:-}" ]; then
        # one rank per core, bound to it, while the ranks fit the cores (unbound, a rank spinning in a collective can
        # share a core with one still computing); more ranks than cores: oversubscribed, unbound. On the H100 host
        # the two measured alike at 16 ranks (weak 0.651 bound, 0.637 unbound, results/nvidia-h100-80gb-hbm3/
        # log-20261126T155000-*). MPIRUN_FLAGS replaces the choice (for measuring it).
        local flags=(--bind-to core --map-by core)
        [ "$1" -gt "$(nproc)" ] && flags=(--oversubscribe --bind-to none)
        [ -n "${MPIRUN_FLAGS:-}" ] && read -r -a flags <<< "$MPIRUN_FLAGS"
        mpirun "${flags[@]}" -n "$1" "${bin[@]}" "${common[@]}" --threads 1
    else
        "${bin[@]}" "${common[@]}" --ranks "$1" --threads "$1"
    fi
}
kinds=${KINDS:-weak strong}
csv="$out/scaling-$([ -n "${MPI:-}" ] && echo mpi || echo threads)${KINDS:+-${kinds// /-}}.csv"
echo "scaling,ranks,walkers,compute_per_gen_s,reduce_per_gen_s,migrate_per_gen_s,gen_s,efficiency,compute_max_per_gen_s,compute_slowest_rank_per_gen_s,reduce_max_per_gen_s,balance" > "$csv"
for kind in $kinds; do
    t1=""
    ranks=${RANKS:-}
    if [ -z "$ranks" ]; then for ((r = 1; r <= max; r *= 2)); do ranks="$ranks $r"; done; fi
    for r in $ranks; do
        w=$([ $kind = weak ] && echo $((weak * r)) || echo "$strong")
        # REPEAT runs of each point, the one of median time per generation kept: one-rank runs alone varied 12.9-15.6
        # ms a generation between runs on the H100 host, and that time is every efficiency's denominator
        runs=()
        for ((k = 0; k < ${REPEAT:-1}; k++)); do
            # a run too short for its error bar may fail validation: its timings still count, so go on
            run "$r" "$w" || echo "warning: the run on $r ranks exited with status $?" >&2
            # the last record is this run's: per-generation times from its extras
            line=$(tail -1 "$out/qmc.jsonl")
            get() { grep -o "\"$1\":[-0-9.e+]*" <<< "$line" | tail -1 | cut -d: -f2; }
            c=$(get compute_per_gen_s) d=$(get reduce_per_gen_s) m=$(get migrate_per_gen_s)
            cx=$(get compute_max_per_gen_s) cs=$(get compute_slowest_rank_per_gen_s) dx=$(get reduce_max_per_gen_s)
            g=$(awk -v c="$c" -v d="$d" -v m="$m" 'BEGIN { printf "%.6g", c + d + m }')
            runs+=("$g $c $d $m $cx $cs $dx")
        done
        read -r g c d m cx cs dx < <(printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(( (${#runs[@]} + 1) / 2 ))p")
        t1=${t1:-$g}
        eff=$(awk -v t1="$t1" -v g="$g" -v r="$r" -v k=$kind 'BEGIN { printf "%.3f", k == "weak" ? t1 / g : t1 / (r * g) }')
        echo "$kind,$r,$w,$c,$d,$m,$g,$eff,$cx,$cs,$dx,$balance" | tee -a "$csv"
    done
done
