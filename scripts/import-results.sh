#!/usr/bin/env bash
# Bring a records archive fetched from the GPU host into results/<gpu>/ (the folder named after the GPU in the
# records) through `qmcbench import`, which refuses the whole archive if any record names no clean commit, is there
# already, or is a run of another machine; then keep the log beside them and redraw that folder's charts.
# Usage: scripts/import-results.sh path/to/records.tgz [path/to/log.txt] [--into results/<gpu>]
set -euo pipefail
cd "$(dirname "$0")/.."
tgz=$1
shift
log=
if [ $# -ge 1 ] && [[ $1 != --* ]]; then log=$1; shift; fi
cargo build --release --quiet --bin qmcbench
dest=$(./target/release/qmcbench import "$tgz" "$@")
[ -n "$log" ] && cp "$log" "$dest/log-$(date -u +%Y%m%dT%H%M%S).txt"
./target/release/qmcbench plot "$dest" --out "$dest/plots"
echo "imported into $dest"
