#!/usr/bin/env bash
# Instruction-count regression check for CI (issue #23): what each kernel's CPU code costs, counted, not timed.
# Every case below runs twice under valgrind's cachegrind (--cache-sim=no: instructions only), with N = B and
# N = B + R timed repetitions (qmc: B and B + R VMC steps), warm-up 0, one thread, the cpu variant only, no ceilings
# measured. Start-up, set-up and the reference check are the same in both runs, so (I(B+R) - I(B)) / R is the
# instructions of one repetition. Each is compared with results/ci-baseline/instructions.tsv (`qmcbench
# compare-instructions`): a change of more than the tolerance either way fails (exit 1).
#   scripts/instr-check.sh                 measure every case, compare with the baseline
#   scripts/instr-check.sh --record        re-measure and write the baseline (after a change meant to alter cost:
#                                          commit it with the reason in the message)
#   scripts/instr-check.sh --self-test     plant a 5% slowdown (QMC_PLANT_SLOWDOWN=<kernel>:1.05) in each kernel in
#                                          turn: the check must fail for every case of that kernel and pass the
#                                          others (the planted kernel's cases and a cheap case of each of the next
#                                          two kernels; --self-test-full measures every case under every plant)
#   --only REGEX      only the cases whose key matches (check and self-test)
#   --out FILE        also keep the measured table here
# Environment: JOBS (valgrind processes at a time, default 2), INSTR_TOLERANCE (default 0.02), QMCBENCH (a built
# binary instead of building one).
# The tolerance: eleven unchanged runs on the 2-core build machine differed by at most 0.18% per case (README,
# "Performance regression check"), so 2% is far above the noise and below the 5% the self-test plants.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=results/ci-baseline/instructions.tsv
TOL=${INSTR_TOLERANCE:-0.02}
JOBS=${JOBS:-2}
MODE=check ONLY= OUTFILE=
while [ $# -gt 0 ]; do
    case $1 in
    --record) MODE=record ;;
    --self-test) MODE=self-test ;;
    --self-test-full) MODE=self-test-full ;;
    --only) ONLY=$2; shift ;;
    --out) OUTFILE=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# The cases: key (kernel/op/precision), B, R, what N counts (reps: the records' repetitions; steps: the qmc VMC
# steps, a QMC run being timed whole), then the mini-app's command line with @N for N. Small sizes: all of them
# take about a minute on 2 cores. R is chosen so that R * 1.05 is a whole number (the self-test's plant adds
# exactly 5%) and the R repetitions outweigh the few thousand instructions by which start-up varies.
CASES=$(cat <<'EOF'
bspline/vgh/double            1  20 reps  bspline --grid 16 --orbitals 64 --walkers 64 --output vgh --precision double
bspline/vgh/single            1  20 reps  bspline --grid 16 --orbitals 64 --walkers 64 --output vgh --precision single
bspline/vgh/mixed             1  20 reps  bspline --grid 16 --orbitals 64 --walkers 64 --output vgh --precision mixed
bspline/vgl/double            1  20 reps  bspline --grid 16 --orbitals 64 --walkers 64 --output vgl --precision double
bspline/v/double              1  20 reps  bspline --grid 16 --orbitals 64 --walkers 64 --output v --precision double
determinant/ratio/double      1 400 reps  determinant --n 128 --walkers 16 --ops ratio --precision double
determinant/update/double     1  20 reps  determinant --n 64 --walkers 16 --ops update --precision double
determinant/update/single     1  20 reps  determinant --n 64 --walkers 16 --ops update --precision single
determinant/update/mixed      1  20 reps  determinant --n 64 --walkers 16 --ops update --precision mixed
determinant/delayed/double    1  20 reps  determinant --n 64 --walkers 4 --ops delayed --delay 16 --precision double
determinant/invert/double     1  20 reps  determinant --n 64 --walkers 4 --ops invert --precision double
determinant/moves/double      1  20 reps  determinant --n 64 --walkers 4 --ops moves --delay 4 --steps 32 --recompute 16 --precision double
jastrow/bspline-vgl/double    1  20 reps  jastrow --term bspline --electrons 54 --walkers 4 --moves 4 --ops vgl --precision double
jastrow/bspline-vgl/single    1  20 reps  jastrow --term bspline --electrons 54 --walkers 4 --moves 4 --ops vgl --precision single
jastrow/bspline-vgl/mixed     1  20 reps  jastrow --term bspline --electrons 54 --walkers 4 --moves 4 --ops vgl --precision mixed
jastrow/bspline-ratio/double  1  20 reps  jastrow --term bspline --electrons 54 --walkers 16 --moves 4 --ops ratio --precision double
jastrow/bspline-accept/double 1  20 reps  jastrow --term bspline --electrons 54 --walkers 4 --moves 4 --ops accept --precision double
jastrow/u-vgl/double          1  20 reps  jastrow --term u --electrons 54 --walkers 4 --moves 4 --ops vgl --precision double
jastrow/p-vgl/double          1  20 reps  jastrow --term p --electrons 54 --walkers 2 --moves 4 --ops vgl --precision double
jastrow/pade-vgl/double       1  20 reps  jastrow --term pade --electrons 54 --walkers 4 --moves 4 --ops vgl --precision double
ewald/energy/double           1  20 reps  ewald --lattice fcc --electrons 14 --ions 2 --walkers 8 --check-walkers 2 --ops energy --precision double
ewald/energy/single           1  20 reps  ewald --lattice fcc --electrons 14 --ions 2 --walkers 8 --check-walkers 2 --ops energy --precision single
ewald/energy/mixed            1  20 reps  ewald --lattice fcc --electrons 14 --ions 2 --walkers 8 --check-walkers 2 --ops energy --precision mixed
ewald/move/double             1  20 reps  ewald --lattice fcc --electrons 14 --ions 2 --walkers 8 --check-walkers 2 --ops move --precision double
pseudopotential/energy/double 1  20 reps  pseudopotential --atoms 8 --walkers 2 --precision double
pseudopotential/energy/single 1  20 reps  pseudopotential --atoms 8 --walkers 2 --precision single
pseudopotential/energy/mixed  1  20 reps  pseudopotential --atoms 8 --walkers 2 --precision mixed
gemm/basis/double             1  20 reps  gemm --op basis --molecules acetic-acid --walkers 4 --precision double
gemm/basis/single             1  20 reps  gemm --op basis --molecules acetic-acid --walkers 4 --precision single
gemm/f64/double               1  20 reps  gemm --op gemm --molecules acetic-acid --walkers 4 --algo f64
gemm/naive-f32/single         1  20 reps  gemm --op gemm --molecules acetic-acid --walkers 4 --algo naive-f32
gemm/kahan-f32/single         1  20 reps  gemm --op gemm --molecules acetic-acid --walkers 4 --algo kahan-f32
gemm/mixed/mixed              1  20 reps  gemm --op gemm --molecules acetic-acid --walkers 4 --algo mixed
gemm/blas-f64/double          1  20 reps  gemm --op gemm --molecules acetic-acid --walkers 4 --algo blas-f64
gemm/blas-f32/single          1  20 reps  gemm --op gemm --molecules acetic-acid --walkers 4 --algo blas-f32
lattice/sweeps/double         1  20 reps  lattice --lattice 5 --chains 8 --sweeps 4 --equil 2 --serial-max-chains 0 --max-reps @N --precision double
lattice/sweeps/single         1  20 reps  lattice --lattice 5 --chains 8 --sweeps 4 --equil 2 --serial-max-chains 0 --max-reps @N --precision single
lattice/sweeps/mixed          1  20 reps  lattice --lattice 5 --chains 8 --sweeps 4 --equil 2 --serial-max-chains 0 --max-reps @N --precision mixed
lattice/screened/mixed        1  20 reps  lattice --lattice 11 --chains 2 --sweeps 2 --equil 1 --serial-max-chains 0 --max-reps @N --precision mixed
solid/dmc/double              1  20 reps  solid --electrons 64 --walkers 2 --cpu-walkers 2 --check-steps 1 --check-walkers 2 --max-reps @N --precision double
solid/dmc/mixed               1  20 reps  solid --electrons 64 --walkers 2 --cpu-walkers 2 --check-steps 1 --check-walkers 2 --max-reps @N --precision mixed
qmc/vmc/double             4000 200 steps qmc --method vmc --system he --walkers 8 --equil 10 --precision double
qmc/vmc/mixed              4000 200 steps qmc --method vmc --system he --walkers 8 --equil 10 --precision mixed
EOF
)
[ -n "$ONLY" ] && CASES=$(grep -E "^[^ ]*($ONLY)" <<<"$CASES" || true)
[ -n "$CASES" ] || { echo "error: no case matches --only '$ONLY'" >&2; exit 2; }
# the self-test's witnesses, a cheap case of each kernel in the order of the cases: under the plant of one kernel the
# witnesses of the next two kernels are measured too and must not move (the unplanted check has shown that every
# case passes; the witnesses show that a plant stays in its kernel)
WITNESS=(bspline/v/double determinant/update/double jastrow/bspline-ratio/double ewald/move/double pseudopotential/energy/single gemm/blas-f64/double lattice/sweeps/single solid/dmc/double qmc/vmc/double)

command -v valgrind >/dev/null || { echo "error: valgrind is not installed (Debian: apt-get install valgrind)" >&2; exit 2; }
if [ -z "${QMCBENCH:-}" ]; then
    cargo build --release --locked --quiet --bin qmcbench
    QMCBENCH=target/release/qmcbench
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/instr-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# One valgrind run: case key, N, the mini-app's command line (@N replaced). Writes "<instructions> <status>" to
# $WORK/<key>/<N>.res, status "ok" or why the run cannot be counted.
one() {
    local key=$1 n=$2 unit=$3 dir="$WORK/${1//\//_}/$2"
    shift 3
    local args=("${@//@N/$n}")
    case $unit in reps) args+=(--reps "$n" --fixed-reps) ;; steps) args+=(--steps "$n") ;; esac
    mkdir -p "$dir"
    local rc=0
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$QMCBENCH" run "${args[@]}" \
        --variants cpu --threads 1 --warmup 0 --no-ceilings --quiet --out "$dir/records" >"$dir/log" 2>&1 || rc=$?
    local instr status=ok
    instr=$(grep -o 'I *refs: *[0-9,]*' "$dir/log" | tr -dc 0-9)
    local recs=$(cat "$dir"/records/*.jsonl 2>/dev/null | wc -l)
    if [ "$rc" != 0 ]; then status="exit-$rc"
    elif [ -z "$instr" ]; then status=no-count
    elif [ "$recs" != 1 ]; then status="records-$recs"
    elif [ "$unit" = reps ] && ! grep -q "\"reps\":$n," "$dir"/records/*.jsonl; then status="reps-not-$n"
    elif [ "$unit" = steps ] && ! grep -q "\"steps\":$n[,}]" "$dir"/records/*.jsonl; then status="steps-not-$n"
    fi
    echo "${instr:-0} $status" >"$dir.res"
}
export -f one
export WORK QMCBENCH

# Measure the cases given on stdin (lines of $CASES) into the table $1: key and instructions per repetition.
measure() {
    local table=$1 lines
    lines=$(cat)
    while read -r key b r unit cmd; do
        printf '%s\0%s\0%s\0%s\0' "$key" "$b" "$unit" "$cmd"
        printf '%s\0%s\0%s\0%s\0' "$key" "$((b + r))" "$unit" "$cmd"
    done <<<"$lines" | xargs -0 -n 4 -P "$JOBS" bash -c 'one "$1" "$2" "$3" $4' _
    : >"$table"
    local bad=0
    while read -r key b r unit cmd; do
        local d="$WORK/${key//\//_}" i1 s1 i2 s2
        read -r i1 s1 <"$d/$b.res"
        read -r i2 s2 <"$d/$((b + r)).res"
        if [ "$s1" != ok ] || [ "$s2" != ok ]; then
            echo "error: $key: the run could not be counted ($s1 / $s2): qmcbench run $cmd; its log:" >&2
            tail -5 "$d/$b/log" "$d/$((b + r))/log" >&2
            bad=1
            continue
        fi
        awk -v k="$key" -v a="$i1" -v b="$i2" -v r="$r" 'BEGIN { printf "%s\t%.1f\n", k, (b - a) / r }' >>"$table"
    done <<<"$lines"
    return $bad
}

header() {
    echo "# instructions per repetition of each case's CPU code (scripts/instr-check.sh; key, instructions, optional tolerance)"
    echo "# $(valgrind --version), $(rustc --version 2>/dev/null || echo rustc unknown), vector ISA under valgrind: $(valgrind -q "$QMCBENCH" list 2>/dev/null | grep -o 'vector ISA [a-z0-9]*' | cut -d' ' -f3)"
}

compare() { "$QMCBENCH" compare-instructions "$@" --tolerance "$TOL"; }

t0=$SECONDS
case $MODE in
record)
    [ -z "$ONLY" ] || { echo "error: --record measures every case: drop --only" >&2; exit 2; }
    measure "$WORK/new.tsv" <<<"$CASES"
    { header; cat "$WORK/new.tsv"; } >"$BASE.tmp" && mv "$BASE.tmp" "$BASE"
    echo "recorded $(wc -l <"$WORK/new.tsv") cases in $BASE ($((SECONDS - t0)) s): commit it, saying why the cost changed"
    ;;
check)
    [ -f "$BASE" ] || { echo "error: no baseline $BASE: scripts/instr-check.sh --record" >&2; exit 2; }
    measure "$WORK/new.tsv" <<<"$CASES" || exit 2
    [ -n "$OUTFILE" ] && cp "$WORK/new.tsv" "$OUTFILE"
    rc=0
    compare "$BASE" "$WORK/new.tsv" ${ONLY:+--subset} || rc=$?
    if [ "$rc" = 1 ]; then
        echo "note: the baseline was counted with: $(sed -n 2p "$BASE" | sed 's/^# //')" >&2
        echo "      this machine:                   $(header | sed -n 2p | sed 's/^# //')" >&2
        echo "      a change meant to alter cost: scripts/instr-check.sh --record, and say why in the commit" >&2
    fi
    echo "instruction check: $(wc -l <"$WORK/new.tsv") cases in $((SECONDS - t0)) s"
    exit $rc
    ;;
self-test | self-test-full)
    [ -f "$BASE" ] || { echo "error: no baseline $BASE: scripts/instr-check.sh --record" >&2; exit 2; }
    kernels=$(cut -d/ -f1 <<<"$CASES" | awk '!seen[$0]++')
    failed=""
    for k in $kernels; do
        if [ $MODE = self-test-full ]; then
            subset=$CASES
        else
            # the witnesses of the two kernels after k (in WITNESS's order, wrapping round)
            w=""
            for i in "${!WITNESS[@]}"; do
                if [ "${WITNESS[$i]%%/*}" = "$k" ]; then
                    n=${#WITNESS[@]}
                    w=" ${WITNESS[$(((i + 1) % n))]} ${WITNESS[$(((i + 2) % n))]} "
                fi
            done
            subset=$(awk -v k="$k" -v w="$w" 'index($1, k "/") == 1 || index(w, " " $1 " ") > 0' <<<"$CASES")
        fi
        echo "== planted QMC_PLANT_SLOWDOWN=$k:1.05: $(grep -c "^$k/" <<<"$subset") cases of $k, $(grep -vc "^$k/" <<<"$subset" || true) of the others"
        rm -rf "${WORK:?}"/*_*
        if ! QMC_PLANT_SLOWDOWN=$k:1.05 measure "$WORK/planted.tsv" <<<"$subset"; then
            failed="$failed $k"
            continue
        fi
        compare "$BASE" "$WORK/planted.tsv" --subset --planted "$k" || failed="$failed $k"
    done
    if [ -n "$failed" ]; then
        echo "error: self-test FAILED: the planted 5% slowdown was not caught exactly in:$failed ($((SECONDS - t0)) s)" >&2
        exit 1
    fi
    echo "self-test passed: a planted 5% slowdown was caught in every case of each of $(wc -w <<<"$kernels") kernels, and no other kernel's case moved ($((SECONDS - t0)) s)"
    ;;
esac
