#!/usr/bin/env bash
# Where a command's peak resident memory lies: runs COMMAND, samples its VmRSS every 5 ms, keeps
# /proc/PID/smaps from the largest sample, and prints that sample's RSS per mapping (heap, anonymous,
# each library), largest first.
#
# Usage: bench/peak-rss.sh COMMAND [ARGUMENTS…]
#   e.g. bench/peak-rss.sh .build/release/guard-play package bench/work/input-10min.mp4 --out /tmp/o \
#        --force --quiet --container fmp4
set -euo pipefail
snapshot=$(mktemp)
trap 'rm -f "$snapshot" "$snapshot.next"' EXIT
"$@" >/dev/null 2>&1 &
pid=$!
largest=0
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$rss" ] && [ "$rss" -gt "$largest" ]; then
        if cat "/proc/$pid/smaps" >"$snapshot.next" 2>/dev/null && [ -s "$snapshot.next" ]; then
            largest=$rss
            mv "$snapshot.next" "$snapshot"
        fi
    fi
    sleep 0.005
done
wait "$pid" || echo "the command exited with status $?" >&2
echo "largest VmRSS sampled: $largest KiB"
awk '$1 == "Rss:" { total += $2 } $1 == "Anonymous:" { anonymous += $2 }
    END { printf "mapped RSS %d KiB: anonymous %d KiB, file-backed %d KiB\n", total, anonymous, total - anonymous }' \
    "$snapshot"
awk '
    $1 ~ /^[0-9a-f]+-[0-9a-f]+$/ { name = (NF >= 6 ? $6 : "[anonymous]"); next }
    $1 == "Rss:" { rss[name] += $2 }
    END { for (name in rss) if (rss[name] > 0) printf "%8d KiB  %s\n", rss[name], name }' "$snapshot" |
    sort -k1,1nr | head -n 30
