#!/usr/bin/env bash
# Builds the library under every combination of its cargo features (there are few: parquet,
# mpi — the latter needs Open MPI and clang, which scripts/install-deps.sh installs — and
# unchecked-blocks, the measurement-only build of scripts/bench-checksums.sh), and the CLI with
# unchecked-blocks, which it forwards.
set -euo pipefail
features=$(cargo metadata --no-deps --format-version 1 --locked \
    | python3 -c 'import json,sys; m=json.load(sys.stdin); p=[p for p in m["packages"] if p["name"]=="outcore"][0]; print(" ".join(f for f in p["features"] if f!="default"))')
combos=("")
for f in $features; do
    for c in "${combos[@]}"; do combos+=("${c:+$c,}$f"); done
done
for c in "${combos[@]}"; do
    echo "check-features: outcore with features [${c}]"
    cargo check -p outcore --locked --no-default-features ${c:+--features "$c"} --quiet
done
echo "check-features: outcore-cli with features [unchecked-blocks]"
cargo check -p outcore-cli --locked --features unchecked-blocks --quiet
echo "check-features: ${#combos[@]} combinations of the library and the CLI's unchecked-blocks build"
