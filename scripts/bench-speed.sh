#!/usr/bin/env bash
# Old-vs-new speed of bfs (from the top-out-degree vertex), pr --iterations 20 and wcc on the
# inmem engine (--memory 8GiB) and the stream engine (--memory 384MiB inside a 512 MiB cgroup v1
# group, PLATFORM.md), cold page cache, old and new alternated, ROUNDS rounds (default 3).
# Prints per case the medians of whole-process seconds, iteration seconds (--stats-json),
# bytes read and peak RSS, and the old/new ratios. Needs root (drop_caches, cgroup).
# NEW_STORE (default STORE) is the same graph imported by the new binary: a store written before
# block checksums makes every new run derive them from a whole read of each file, and one with
# generations (CURRENT, gen-N/) cannot be opened by binaries older than them.
#
#   scripts/bench-speed.sh OLD_BIN NEW_BIN STORE [ROUNDS] [NEW_STORE]
#
# ENGINES (default "inmem stream") and ALGOS (default "bfs pr wcc") pick the cases. NEW_AUTO=1
# runs the new binary with no --engine (the planner's choice, printed per case) in each case's
# conditions, against the old binary on the named engine: issue 15's "speed-ups carry to
# `outcore run` with no --engine".
set -euo pipefail
OLD=$1 NEW=$2 STORE=$3 ROUNDS=${4:-3} NEW_STORE=${5:-$3}
WORK=$(mktemp -d)
CG=/sys/fs/cgroup/memory/outcore-bench-speed
trap 'rmdir "$CG" 2>/dev/null || true; rm -rf "$WORK"' EXIT

# The top-out-degree vertex's original id, from csr-out/offsets and ids/original (u64 LE).
SOURCE=$(python3 - "$STORE" <<'PY'
import array, os, sys
d = sys.argv[1]
if os.path.exists(d + '/CURRENT'):
    d += '/' + open(d + '/CURRENT').read().strip()
o = array.array('Q'); o.frombytes(open(d + '/csr-out/offsets', 'rb').read())
ids = array.array('Q'); ids.frombytes(open(d + '/ids/original', 'rb').read())
print(ids[max(range(len(o) - 1), key=lambda v: o[v + 1] - o[v])])
PY
)
mkdir -p "$CG" && echo 512M > "$CG/memory.limit_in_bytes"

run_one() { # BIN STORE ENGINE ALGO... -> "wall iter_s bytes_read peak_rss"
  local bin=$1 STORE=$2 engine=$3; shift 3
  local memory=8GiB prefix=()
  if [ "$engine" = stream ]; then memory=384MiB; fi
  local choice=(--engine "$engine")
  if [ "${NEW_AUTO:-0}" = 1 ] && [ "$bin" = "$NEW" ]; then choice=(); fi
  sync; echo 3 > /proc/sys/vm/drop_caches
  local start end
  start=$(date +%s.%N)
  if [ "$engine" = stream ]; then
    sh -c "echo \$\$ > $CG/cgroup.procs; exec \"\$@\"" _ "$bin" run --store "$STORE" "${choice[@]}" \
      --memory "$memory" --stats-json "$WORK/s.json" -o "$WORK/out" "$@" >/dev/null 2>&1
  else
    "$bin" run --store "$STORE" "${choice[@]}" --memory "$memory" --stats-json "$WORK/s.json" \
      -o "$WORK/out" "$@" >/dev/null 2>&1
  fi
  end=$(date +%s.%N)
  python3 - "$WORK/s.json" "$start" "$end" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
it = sum(i['seconds'] for i in s['per_iteration'])
print(f"{s['engine']} ", end="", file=sys.stderr)
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.3f} {it:.3f} {s['bytes_read']} {s['peak_rss_bytes']}")
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

printf '%-7s %-6s %10s %10s %10s %10s %10s %10s %9s %9s\n' engine algo old_wall new_wall old_iter new_iter \
  old_MiB new_MiB old_rssM new_rssM
for engine in ${ENGINES:-inmem stream}; do
  for name in ${ALGOS:-bfs pr wcc}; do
    case $name in
      bfs) algo="bfs --source $SOURCE" ;;
      pr) algo="pr --iterations 20" ;;
      *) algo=$name ;;
    esac
    : > "$WORK/old" ; : > "$WORK/new"
    for _ in $(seq "$ROUNDS"); do
      # shellcheck disable=SC2086
      run_one "$OLD" "$STORE" "$engine" $algo >> "$WORK/old"
      # shellcheck disable=SC2086
      run_one "$NEW" "$NEW_STORE" "$engine" $algo >> "$WORK/new"
    done
    col() { awk -v c="$2" '{print $c}' "$WORK/$1" | median; }
    read -r ow oi ob orss <<< "$(col old 1) $(col old 2) $(col old 3) $(col old 4)"
    read -r nw ni nb nrss <<< "$(col new 1) $(col new 2) $(col new 3) $(col new 4)"
    printf '%-7s %-6s %10s %10s %10s %10s %10d %10d %9d %9d  wall x%.2f, iterations x%.2f\n' "$engine" \
      "${algo%% *}" "$ow" "$nw" "$oi" "$ni" $((ob >> 20)) $((nb >> 20)) $((orss >> 20)) $((nrss >> 20)) \
      "$(echo "$ow / $nw" | bc -l)" "$(echo "$oi / ($ni + 0.000001)" | bc -l)"
  done
done
