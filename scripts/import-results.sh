#!/usr/bin/env bash
# Unpack a records archive fetched from the GPU host into results/<gpu>/ (the folder named after the GPU in the
# records), merging with the records already there, and redraw that folder's charts.
# Usage: scripts/import-results.sh path/to/records.tgz [path/to/log.txt]
set -euo pipefail
cd "$(dirname "$0")/.."
tgz=$1
tmp=$(mktemp -d)
tar xzf "$tgz" -C "$tmp"
gpu=$(python3 - "$tmp"/*.jsonl <<'PY'
import json, sys, re
names = [json.loads(l)["system"]["gpu"]["name"] for f in sys.argv[1:] for l in open(f) if '"gpu":{' in l.replace(" ", "")]
print(re.sub(r"[^a-z0-9]+", "-", names[0].lower()).strip("-") if names else "")
PY
)
[ -n "$gpu" ] || { echo "error: no GPU record in $tgz" >&2; exit 2; }
dest=results/$gpu
mkdir -p "$dest"
for f in "$tmp"/*.jsonl; do
    cat "$f" >> "$dest/$(basename "$f").tmp.$$"
    [ -e "$dest/$(basename "$f")" ] && cat "$dest/$(basename "$f")" "$dest/$(basename "$f").tmp.$$" > "$dest/$(basename "$f").new.$$" \
        || mv "$dest/$(basename "$f").tmp.$$" "$dest/$(basename "$f").new.$$"
    rm -f "$dest/$(basename "$f").tmp.$$"
    mv "$dest/$(basename "$f").new.$$" "$dest/$(basename "$f")"
done
[ $# -ge 2 ] && cp "$2" "$dest/log-$(date -u +%Y%m%dT%H%M%S).txt"
cargo run --release --quiet --bin qmcbench -- plot "$dest" --out "$dest/plots"
rm -rf "$tmp"
echo "imported into $dest"
