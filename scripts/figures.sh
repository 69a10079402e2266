#!/usr/bin/env bash
# Redraw everything drawn from a results folder's records: every paper figure (figures/: PNG, SVG and the TXT table),
# the generic charts (plots/) and the HTML report. Nothing is measured: a figure without passed records for it is
# reported as skipped and its old drawing removed, so no drawing outlives its records.
# Usage: scripts/figures.sh results/<gpu>
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/figures.sh results/<gpu>}
cargo build --release --quiet --bin qmcbench || exit 2
bin=target/release/qmcbench
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for f in $($bin figure --list | awk '/^[^ ]/ {print $1}'); do
    if $bin figure "$f" --records "$dir" --out "$dir/figures" > /dev/null 2> "$err"; then
        echo "drew $dir/figures/$f.png"
    else
        echo "skipped $f: $(tail -1 "$err")"
        rm -f "$dir/figures/$f.png" "$dir/figures/$f.svg" "$dir/figures/$f.txt"
    fi
done
rm -f "$dir"/plots/*.png "$dir"/plots/*.svg
$bin plot "$dir" --out "$dir/plots" 2> "$err" || { cat "$err"; exit 2; }
echo "drew $(ls "$dir"/plots/*.svg 2>/dev/null | wc -l) charts in $dir/plots (SVG committed, PNG beside it ignored)"
$bin report "$dir" --out "$dir/report.html" --title "qmc-bench on $(basename "$dir")"
