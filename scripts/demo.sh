#!/usr/bin/env bash
# The README's demo: generate an RMAT graph, import it within a memory budget, run BFS,
# PageRank and WCC, and print what each found with its time and bytes read.
# Usage: scripts/demo.sh DIR SCALE MEMORY
set -euo pipefail
dir=${1:-demo-data}
scale=${2:-20}
memory=${3:-1GiB}
outcore=${OUTCORE:-target/release/outcore}
mkdir -p "$dir"
edges="$dir/rmat$scale.el"
store="$dir/rmat$scale"

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

if [ ! -s "$edges" ]; then
    step "generate an RMAT graph (Graph500 Kronecker, scale $scale, edge factor 16)" \
        "$outcore" generate rmat --scale "$scale" --edge-factor 16 --seed 1 --output "$edges"
fi
step "import it (external sorting within $memory)" \
    "$outcore" import "$edges" --store "$store" --memory "$memory"
step "what the store holds" "$outcore" info --store "$store"

# A BFS source with out-edges: the source of the first edge in the file.
source=$(head -n 1 "$edges" | awk '{print $1}')
step "BFS from vertex $source" \
    "$outcore" run bfs --store "$store" --source "$source" --memory "$memory" \
    --output "$dir/bfs.txt" --stats-json "$dir/bfs.json"
step "PageRank, 20 iterations" \
    "$outcore" run pr --store "$store" --iterations 20 --memory "$memory" \
    --output "$dir/pr.txt" --stats-json "$dir/pr.json"
step "weakly connected components" \
    "$outcore" run wcc --store "$store" --memory "$memory" \
    --output "$dir/wcc.txt" --stats-json "$dir/wcc.json"

printf '\n\033[1m== summary\033[0m\n'
"$outcore" summary "$dir/bfs.json" "$dir/pr.json" "$dir/wcc.json"
echo
echo "results (one 'vertex value' line per vertex, original ids) are in $dir/{bfs,pr,wcc}.txt"
