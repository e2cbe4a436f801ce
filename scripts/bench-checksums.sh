#!/usr/bin/env bash
# Cost of block checksums (issue 17): stream pr / bfs / wcc, the old binary on a store without
# block checksums against the new binary on the same graph imported with them, alternated,
# median of N runs each. Reports wall, user and sys seconds and peak RSS per run, and the
# median user+sys seconds of old and new with their ratio.
#
#   scripts/bench-checksums.sh OLD_BIN OLD_STORE NEW_BIN NEW_STORE [RUNS=3] [MEMORY=1GiB]
#
# e.g. scripts/bench-checksums.sh /work/baseline/outcore /work/data/rmat22d \
#        target/release/outcore /work/wt-data/checksums/rmat22d 3
# (NEW_STORE: `outcore import rmat22.el --store NEW_STORE --dedup --drop-self-loops` with the
# new binary.) Drops the OS page cache before each run when it can (root), so runs start cold.
set -euo pipefail
old_bin=$1 old_store=$2 new_bin=$3 new_store=$4 runs=${5:-3} memory=${6:-1GiB}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source_id=$(head -c 4096 "$old_store/../rmat22.el" 2>/dev/null | awk 'NR==1{print $1}')
source_id=${source_id:-0}

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

one() { # bin store algo -> "user+sys wall user sys rss"
  local bin=$1 store=$2 algo=$3 extra=()
  [ "$algo" = bfs ] && extra=(--source "$source_id")
  [ "$algo" = pr ] && extra=(--iterations 10)
  drop_caches
  /usr/bin/time -f '%U %S %e %M' -o "$out/t" "$bin" run "$algo" --store "$store" --engine stream \
    --memory "$memory" -q -o "$out/values.txt" "${extra[@]}" >/dev/null
  read -r user sys wall rss < "$out/t"
  echo "$(echo "$user + $sys" | bc) $wall $user $sys $rss"
}

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

printf '%-5s %-4s %3s %9s %8s %8s %8s %10s\n' algo bin run cpu_s wall_s user_s sys_s peak_kb
for algo in pr bfs wcc; do
  : > "$out/old" ; : > "$out/new"
  for i in $(seq "$runs"); do
    r=$(one "$old_bin" "$old_store" "$algo"); echo "$r" >> "$out/old"
    printf '%-5s %-4s %3s %9s %8s %8s %8s %10s\n' "$algo" old "$i" $r
    r=$(one "$new_bin" "$new_store" "$algo"); echo "$r" >> "$out/new"
    printf '%-5s %-4s %3s %9s %8s %8s %8s %10s\n' "$algo" new "$i" $r
  done
  o=$(median < "$out/old"); n=$(median < "$out/new")
  echo "$algo median user+sys: old $o s, new $n s, new/old $(echo "scale=3; $n / $o" | bc)"
done
