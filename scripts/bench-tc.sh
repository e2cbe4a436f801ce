#!/usr/bin/env bash
# tc and lcc benchmark (issue 19): OLD and NEW binaries alternated, medians of RUNS (default 3),
# inmem at --memory 8GiB and nwsm at --memory 384MiB inside a 512 MiB cgroup (v1, PLATFORM.md),
# each with RAYON_NUM_THREADS=1 and 2, page cache dropped before every run. Prints wall, user+sys
# seconds, bytes read (against the store's adjacency bytes, csr-out + csr-in), peak RSS and the
# 1-vs-2-thread speed-up. nwsm builds its bbp layout into the store: pass copies, not a shared
# store, and give the old binary its own (OLD_STORE, default STORE): layouts differ between
# versions (since d792a25 BBP numbers a rank's vertices in ascending degree and records it), so
# one store shared by both would be repartitioned at every switch. Before timing, each binary
# runs tc once on nwsm to build its layout (not timed).
# Usage: scripts/bench-tc.sh OLD_BIN NEW_BIN STORE [OUTDIR]
#   (run as root; env ALGOS="tc lcc", ENGINES="inmem nwsm", THREADS="1 2", RUNS=3, OLD_STORE)
set -euo pipefail
old=$1 new=$2 store=$3 out=${4:-$(mktemp -d)}
old_store=${OLD_STORE:-$store}
algos=${ALGOS:-tc lcc} engines=${ENGINES:-inmem nwsm} runs=${RUNS:-3} threads=${THREADS:-1 2}
mkdir -p "$out"
cg=/sys/fs/cgroup/memory/bench-tc
store_of() { if [ "$1" = old ]; then echo "$old_store"; else echo "$store"; fi; }
run_one() { # BIN_LABEL BIN ALGO ENGINE THREADS RUN
    local json="$out/$1-$3-$4-t$5-r$6.json" mem=8GiB run_store
    run_store=$(store_of "$1")
    sync; echo 3 > /proc/sys/vm/drop_caches || true
    # nwsm inside a 512 MiB group; inmem inside a 12 GiB one, so that a binary that overruns
    # its 8 GiB budget (893c803's lcc did: 24 GB) is stopped there, not by the machine's OOM killer.
    local limit=12G
    if [ "$4" = nwsm ]; then mem=384MiB limit=512M; fi
    mkdir -p "$cg"; echo "$limit" > "$cg/memory.limit_in_bytes"
    ( echo $BASHPID > "$cg/cgroup.procs"
      RAYON_NUM_THREADS=$5 /usr/bin/time -f '%e %U %S %M' -o "$json.time" "$2" run "$3" --store "$run_store" \
        --engine "$4" --memory "$mem" --quiet --output /dev/null --stats-json "$json" ) ||
        { echo "bench-tc: $1 $3 $4 t$5 failed (exit $?)" >&2; rm -f "$json" "$json.time"; }
}
case " $engines " in *" nwsm "*)
    "$old" run tc --store "$old_store" --engine nwsm --memory 384MiB --quiet --output /dev/null
    "$new" run tc --store "$store" --engine nwsm --memory 384MiB --quiet --output /dev/null ;;
esac
for r in $(seq 1 "$runs"); do
    for algo in $algos; do for engine in $engines; do for t in $threads; do
        run_one old "$old" "$algo" "$engine" "$t" "$r"
        run_one new "$new" "$algo" "$engine" "$t" "$r"
    done; done; done
done
rmdir "$cg" 2>/dev/null || true
python3 - "$out" "$store" "$runs" "$algos" "$engines" "$threads" <<'PY'
import json, os, statistics as st, sys
out, store, runs, algos, engines = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split()
threads = [int(t) for t in sys.argv[6].split()]
if os.path.exists(os.path.join(store, 'CURRENT')):  # a generational store
    store = os.path.join(store, open(os.path.join(store, 'CURRENT')).read().strip())
adj = sum(os.path.getsize(os.path.join(store, d, f)) for d in ('csr-out', 'csr-in')
          if os.path.isdir(os.path.join(store, d)) for f in os.listdir(os.path.join(store, d))
          if not f.endswith('.crc32c'))
print(f"adjacency on disk: {adj / 2**20:.0f} MiB; medians of {runs}")
print(f"{'bin':4} {'algo':4} {'engine':6} {'thr':>3} {'wall s':>8} {'cpu s':>8} {'read MiB':>9} {'read/adj':>8} {'RSS MiB':>8} {'1→2 thr':>7}")
for algo in algos:
    for engine in engines:
        for b in ('old', 'new'):
            walls = {}
            for t in threads:
                rows = []
                for r in range(1, runs + 1):
                    p = f"{out}/{b}-{algo}-{engine}-t{t}-r{r}.json"
                    if not os.path.exists(p):
                        continue
                    s = json.load(open(p))
                    e, u, sy, m = open(p + '.time').read().split()[-4:]
                    rows.append((float(e), float(u) + float(sy), s.get('bytes_read', 0), int(m) / 1024))
                if not rows:
                    print(f"{b:4} {algo:4} {engine:6} {t:>3}   failed (see the log)")
                    continue
                med = [st.median(x[i] for x in rows) for i in range(4)]
                walls[t] = med[0]
                sp = f"{walls[1] / walls[2]:.2f}" if t == 2 and 1 in walls else ''
                print(f"{b:4} {algo:4} {engine:6} {t:>3} {med[0]:>8.1f} {med[1]:>8.1f} {med[2] / 2**20:>9.0f} "
                      f"{med[2] / adj:>8.2f} {med[3]:>8.0f} {sp:>7}")
PY
