#!/usr/bin/env bash
# Bring a records archive fetched from the GPU host into results/<gpu>/ (the folder named after the GPU in the
# records) through `qmcbench import`, which refuses the whole archive if any record names no clean commit, is there
# already, or is a run of another machine; then keep the log beside them, redraw that folder's charts and regenerate
# the README's result tables.
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
# the README's result tables follow the records (a test holds them equal); review the diff before committing
./target/release/qmcbench headlines --write README.md
echo "imported into $dest"
