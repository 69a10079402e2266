#!/usr/bin/env bash
# Redraw every paper figure and the HTML report of a results folder from its records (no measuring: a figure with no
# records is reported and skipped). Usage: scripts/figures.sh results/<gpu>
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/figures.sh results/<gpu>}
cargo build --release --quiet --bin qmcbench
bin=target/release/qmcbench
for f in $($bin figure --list | awk '/^[^ ]/ {print $1}'); do
    if ! $bin figure "$f" --records "$dir" --out "$dir/figures" > /dev/null 2> "/tmp/figure-$f.err"; then
        echo "skipped $f: $(tail -1 "/tmp/figure-$f.err")"
    else
        echo "drew $dir/figures/$f.png"
    fi
done
$bin report "$dir" --out "$dir/report.html" --title "qmc-bench on $(basename "$dir")"
