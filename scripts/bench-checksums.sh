#!/usr/bin/env bash
# What block-checksum verification costs (issue 17: at most 5 % on the speed benchmarks).
#
# Builds the outcore binary twice from this checkout — as shipped (target/release/outcore) and
# with the measurement-only feature `unchecked-blocks`, which compiles the checks out
# (target/unchecked/release/outcore) — and runs both on ONE generational store: stream pr
# --iterations 10, bfs (from the top-out-degree vertex), wcc, and inmem pr --iterations 10.
# Like scripts/bench-speed.sh: cold page cache before every run (root), stream runs with
# --memory 384MiB inside a 512 MiB cgroup v1 group (PLATFORM.md), inmem with --memory 8GiB; the
# two binaries alternate (which goes first swaps every round), RUNS rounds. Prints per case the
# medians of whole-process seconds and of iteration seconds (--stats-json) of each binary, the
# bytes read and verified, and the cost of the checks in %: (checked - unchecked) / unchecked.
#
#   scripts/bench-checksums.sh STORE [RUNS=5]
#
# Environment: PROFILE (cargo profile, default release; `dev` only to try the script quickly),
# SKIP_BUILD=1 (use the binaries already built), STREAM_MEMORY, INMEM_MEMORY, CGROUP_LIMIT.
# Before timing, it checks that the checked binary verified bytes and the unchecked one none
# (`bytes_verified` in --stats-json), so the comparison is what it claims to be.
set -euo pipefail
STORE=$1 RUNS=${2:-5}
PROFILE=${PROFILE:-release}
STREAM_MEMORY=${STREAM_MEMORY:-384MiB} INMEM_MEMORY=${INMEM_MEMORY:-8GiB} CGROUP_LIMIT=${CGROUP_LIMIT:-512M}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$STORE/CURRENT" ] || { echo "bench-checksums: $STORE is not a generational store (no CURRENT); import it with this checkout's binary" >&2; exit 64; }
case $PROFILE in dev) OUTDIR=debug ;; *) OUTDIR=$PROFILE ;; esac
CHECKED=$ROOT/target/$OUTDIR/outcore
UNCHECKED=$ROOT/target/unchecked/$OUTDIR/outcore
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  (cd "$ROOT" && cargo build --profile "$PROFILE" -p outcore-cli --locked --quiet)
  (cd "$ROOT" && cargo build --profile "$PROFILE" -p outcore-cli --locked --quiet --features unchecked-blocks \
    --target-dir target/unchecked)
fi
WORK=$(mktemp -d)
CG=/sys/fs/cgroup/memory/outcore-bench-checksums
trap 'rmdir "$CG" 2>/dev/null || true; rm -rf "$WORK"' EXIT

if mkdir -p "$CG" 2>/dev/null && echo "$CGROUP_LIMIT" > "$CG/memory.limit_in_bytes" 2>/dev/null; then
  IN_CGROUP=1
else
  IN_CGROUP=0
  echo "bench-checksums: no cgroup v1 memory group (not root?): stream runs are not limited to $CGROUP_LIMIT" >&2
fi
if ! (sync && echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then
  echo "bench-checksums: cannot drop the page cache (not root?): runs start warm" >&2
fi

# The top-out-degree vertex's original id, from csr-out/offsets and ids/original (u64 LE).
SOURCE=$(python3 - "$STORE" <<'PY'
import array, sys
d = sys.argv[1] + '/' + open(sys.argv[1] + '/CURRENT').read().strip()
o = array.array('Q'); o.frombytes(open(d + '/csr-out/offsets', 'rb').read())
ids = array.array('Q'); ids.frombytes(open(d + '/ids/original', 'rb').read())
print(ids[max(range(len(o) - 1), key=lambda v: o[v + 1] - o[v])])
PY
)

run_one() { # BIN ENGINE ALGO... -> "wall iter_s bytes_read bytes_verified peak_rss"
  local bin=$1 engine=$2; shift 2
  local memory=$INMEM_MEMORY
  [ "$engine" = stream ] && memory=$STREAM_MEMORY
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  local start end
  start=$(date +%s.%N)
  if [ "$engine" = stream ] && [ "$IN_CGROUP" = 1 ]; then
    sh -c "echo \$\$ > $CG/cgroup.procs; exec \"\$@\"" _ "$bin" run --store "$STORE" --engine "$engine" \
      --memory "$memory" --stats-json "$WORK/s.json" -q -o "$WORK/out-${bin//\//_}" "$@"
  else
    "$bin" run --store "$STORE" --engine "$engine" --memory "$memory" --stats-json "$WORK/s.json" -q \
      -o "$WORK/out-${bin//\//_}" "$@"
  fi
  end=$(date +%s.%N)
  python3 - "$WORK/s.json" "$start" "$end" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
it = sum(i['seconds'] for i in s['per_iteration'])
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.3f} {it:.3f} {s['bytes_read']} {s['bytes_verified']} {s['peak_rss_bytes']}")
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
pct() { python3 -c "import sys; c, u = map(float, sys.argv[1:]); print(f'{100 * (c - u) / u:+.1f}' if u > 0 else 'n/a')" "$1" "$2"; }

# The binaries are what they claim: the checked one verifies what it reads, the other nothing.
read -r _ _ _ verified _ <<< "$(run_one "$CHECKED" stream wcc)"
[ "$verified" -gt 0 ] || { echo "bench-checksums: $CHECKED verified no bytes" >&2; exit 1; }
read -r _ _ _ verified _ <<< "$(run_one "$UNCHECKED" stream wcc 2>/dev/null)"
[ "$verified" -eq 0 ] || { echo "bench-checksums: $UNCHECKED verified $verified bytes: not an unchecked build" >&2; exit 1; }

echo "store $STORE, $RUNS round(s), profile $PROFILE; cost = (checked - unchecked) / unchecked"
printf '%-7s %-4s %9s %9s %7s %9s %9s %7s %9s %9s %6s\n' engine algo chk_wall unc_wall cost chk_iter unc_iter \
  cost read_MiB verif_MiB same
for case in "stream pr --iterations 10" "stream bfs --source $SOURCE" "stream wcc" "inmem pr --iterations 10"; do
  : > "$WORK/checked"; : > "$WORK/unchecked"
  for round in $(seq "$RUNS"); do
    order=(checked unchecked)
    [ $((round % 2)) = 0 ] && order=(unchecked checked)
    for which in "${order[@]}"; do
      bin=$CHECKED
      [ "$which" = unchecked ] && bin=$UNCHECKED
      # shellcheck disable=SC2086
      run_one "$bin" $case 2>/dev/null >> "$WORK/$which"
    done
  done
  col() { awk -v c="$2" '{print $c}' "$WORK/$1" | median; }
  cw=$(col checked 1) uw=$(col unchecked 1) ci=$(col checked 2) ui=$(col unchecked 2)
  same=no
  cmp -s "$WORK/out-${CHECKED//\//_}" "$WORK/out-${UNCHECKED//\//_}" && same=yes
  # shellcheck disable=SC2086
  set -- $case
  printf '%-7s %-4s %9s %9s %6s%% %9s %9s %6s%% %9d %9d %6s\n' "$1" "$2" "$cw" "$uw" "$(pct "$cw" "$uw")" \
    "$ci" "$ui" "$(pct "$ci" "$ui")" $(($(col checked 3) >> 20)) $(($(col checked 4) >> 20)) "$same"
done
