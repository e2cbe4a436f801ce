#!/usr/bin/env bash
# Import benchmark: old and new binaries alternated, cold page cache, 3 rounds, medians.
#   scripts/bench-import.sh OLD_BIN NEW_BIN EDGEFILE [MEMORY]
# Prints per run: wall, user, sys seconds, peak RSS, and the importer's own figures (input
# bytes read, store bytes written, temp bytes, which path built the store, step seconds) from
# --stats-json; then medians.
set -euo pipefail
old=$1 new=$2 input=$3 memory=${4:-2GiB}
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-import.XXXXXX")
trap 'rm -rf "$work"' EXIT
drop_cache() { # cold input: evict its pages (fadvise DONTNEED), root not needed
    python3 -c "import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$input"
}
for round in 1 2 3; do
    for which in old new; do
        bin=$old; [ "$which" = new ] && bin=$new
        drop_cache
        rm -rf "$work/store"
        /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
            "$bin" import -q --memory "$memory" --store "$work/store" --stats-json "$work/stats.json" "$input" >/dev/null
        read -r wall user sys rss_kb <"$work/time"
        python3 - "$which" "$round" "$wall" "$user" "$sys" "$rss_kb" "$work/stats.json" <<'PY' | tee -a "$work/results"
import json, sys
which, rnd, wall, user, sys_s, rss_kb, stats = sys.argv[1:]
d = json.load(open(stats))
steps = " ".join(f"{name}={sec:.2f}" for name, sec in d["step_seconds"])
print(f"{which} round {rnd}: wall {wall} s user {user} s sys {sys_s} s peak {int(rss_kb)//1024} MiB "
      f"read {d['input_bytes']>>20} MiB written {d['bytes_written']>>20} MiB "
      f"temp w/r {d['temp_bytes_written']>>20}/{d['temp_bytes_read']>>20} MiB "
      f"{'in-memory' if d.get('in_memory') else 'external'} | {steps}")
PY
    done
done
python3 - "$work/results" <<'PY'
import re, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for which in ("old", "new"):
    r = [x for x in rows if x[0] == which]
    med = lambda i: statistics.median(float(x[i]) for x in r)
    print(f"{which} median: wall {med(4):.2f} s, user {med(7):.2f} s, sys {med(10):.2f} s, peak {med(13):.0f} MiB")
PY
