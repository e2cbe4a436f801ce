#!/usr/bin/env bash
# The pregel engine's acceptance benchmark: partition a store for W = 1, 2, 4 ranks (basic and
# recoded), run pr (10 supersteps), wcc and sssp under `mpirun -n W`, and print per-rank peak RSS,
# partition bytes on disk, messages sent and wall time from each run's --stats-json.
# Usage: scripts/bench-pregel.sh STORE OUTDIR [RANKS...]   (needs a release build with --features mpi)
# Environment: ALGOS (default "pr wcc sssp"), MODES (default "basic recoded"), MEMORY (default 1GiB).
set -euo pipefail
store=$1
out=$2
shift 2
ranks=${*:-1 2 4}
outcore=${OUTCORE:-target/release/outcore}
memory=${MEMORY:-1GiB}
algos=${ALGOS:-pr wcc sssp}
modes=${MODES:-basic recoded}
mkdir -p "$out"
# The source of sssp: the vertex with the most out-arcs.
source=$(python3 - "$store" <<'PY'
import struct, sys, array
d = sys.argv[1]
off = array.array('Q'); off.frombytes(open(d + '/csr-out/offsets', 'rb').read())
best = max(range(len(off) - 1), key=lambda v: off[v + 1] - off[v])
ids = open(d + '/ids/original', 'rb'); ids.seek(8 * best)
print(struct.unpack('<Q', ids.read(8))[0])
PY
)
for w in $ranks; do
    for mode in $modes; do
        flag=(); [ "$mode" = recoded ] && flag=(--recode)
        /usr/bin/time -f "%e s, peak RSS %M KiB" "$outcore" partition --store "$store" --ranks "$w" "${flag[@]}" \
            --memory "$memory" --quiet 2> "$out/partition-$w-$mode.log"
        for algo in $algos; do
            args=(run "$algo" --store "$store" --engine pregel --memory "$memory" --quiet "${flag[@]}"
                --output /dev/null --stats-json "$out/$algo-$w-$mode.json")
            [ "$algo" = pr ] && args+=(--iterations 10)
            [ "$algo" = sssp ] && args+=(--source "$source")
            timeout 1200 mpirun --allow-run-as-root --oversubscribe -n "$w" "$outcore" "${args[@]}"
            echo "done $algo W=$w $mode"
        done
    done
done
python3 - "$out" $ranks <<'PY'
import json, sys, os
out, ranks = sys.argv[1], sys.argv[2:]
print(f"{'algo':5} {'W':>2} {'mode':8} {'steps':>5} {'wall s':>7} {'msgs sent':>12} {'msg MiB':>8} "
      f"{'peak RSS per rank (MiB)':>28} {'partition MiB per rank':>24}")
for algo in ['pr', 'wcc', 'sssp']:
    for w in ranks:
        for mode in ['basic', 'recoded']:
            p = f"{out}/{algo}-{w}-{mode}.json"
            if not os.path.exists(p):
                continue
            s = json.load(open(p))
            per = s['pregel']['per_rank']
            msgs = sum(i.get('messages_sent_all_ranks', 0) for i in s['per_iteration'])
            mib = sum(r['message_bytes_sent'] for r in per) / 2**20
            rss = ' '.join(f"{r['peak_rss_bytes'] / 2**20:.0f}" for r in per)
            disk = ' '.join(f"{r['partition_bytes_on_disk'] / 2**20:.0f}" for r in per)
            print(f"{algo:5} {w:>2} {mode:8} {len(s['per_iteration']):>5} {s['wall_seconds']:>7.1f} {msgs:>12} "
                  f"{mib:>8.0f} {rss:>28} {disk:>24}")
PY
