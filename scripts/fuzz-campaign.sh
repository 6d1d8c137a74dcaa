#!/bin/bash
# A round of the fuzzing campaign (docs/FUZZING.md): each TARGET run for SECONDS with `make fuzz`'s
# command line (`make fuzz-run`), two at a time (one per core of a two-core machine), then its working
# corpus minimised into fuzz/corpus/TARGET as `make fuzz-merge` does (`make fuzz-merge-run`). Prints
# one row of FUZZING.md's table per target.
#
#   make fuzz-campaign SECONDS=3600 TARGETS="http playlist"
#   scripts/fuzz-campaign.sh SECONDS TARGET...        (the same, after `make fuzz-build`)
#
# Run nothing else beside it, or say so beside its figures. Logs go to .build/fuzz-logs/TARGET.log,
# findings to .build/fuzz-findings/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: $0 SECONDS TARGET..." >&2
    exit 2
fi
seconds=$1
shift
binaries=.build/fuzz/release
for target in "$@"; do
    if [ ! -x "$binaries/fuzz-$target" ]; then
        echo "$0: no $binaries/fuzz-$target: run make fuzz-build first" >&2
        exit 2
    fi
done
mkdir -p .build/fuzz-logs

load() { cut -d' ' -f1 /proc/loadavg; }
# 12345678 as 12,345,678.
commas() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }

# Runs one target for $seconds with the Makefile's command line (`make fuzz-run`) and writes its log;
# the first and last lines hold the time and load.
run() {
    local target=$1 log=.build/fuzz-logs/$1.log
    echo "start $(date -u +%H:%M) $(load)" > "$log"
    ${MAKE:-make} --no-print-directory fuzz-run TARGET="$target" SECONDS="$seconds" >> "$log" 2>&1 \
        || echo "status $?" >> "$log"
    echo "end $(date -u +%H:%M) $(load)" >> "$log"
}

# Minimises the working corpus with the committed one into fuzz/corpus/TARGET (`make fuzz-merge-run`).
merge() {
    ${MAKE:-make} --no-print-directory fuzz-merge-run TARGET="$1" > ".build/fuzz-logs/$1.merge.log" 2>&1
}

# One row of the table: the last figures libFuzzer printed.
row() {
    local target=$1 log=.build/fuzz-logs/$1.log
    local when executions rate rss coverage features corpus findings status
    # "17:13–18:13, 0.69 → 2.02": the times, then the load average at the start and at the end.
    when=$(awk '/^start /{s = $2; a = $3} /^end /{e = $2; b = $3} END {print s "–" e ", " a " → " b}' "$log")
    executions=$(awk '/^stat::number_of_executed_units:/{print $2}' "$log")
    rate=$(awk '/^stat::average_exec_per_sec:/{print $2}' "$log")
    rss=$(awk '/^stat::peak_rss_mb:/{print $2}' "$log")
    coverage=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    features=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    corpus=$(ls "fuzz/corpus/$target" | wc -l)
    findings=$(find ".build/fuzz-findings/$target" -type f | wc -l)
    status=$(awk '/^status /{print " (the run exited " $2 ")"}' "$log")
    printf '| `%s` | %s | %s | %s | %s | %s | %s | %s inputs | %s MB | %s%s |\n' "$target" "$when" \
        "$seconds" "$(commas "${executions:-0}")" "$(commas "${rate:-0}")" "${coverage:-?}" \
        "$(commas "${features:-?}")" "$corpus" "${rss:-?}" "$([ "$findings" = 0 ] && echo none || echo "$findings files")" "$status"
}

targets=("$@")
for ((index = 0; index < ${#targets[@]}; index += 2)); do
    pair=("${targets[@]:index:2}")
    for target in "${pair[@]}"; do run "$target" & done
    wait
    for target in "${pair[@]}"; do merge "$target"; done
done
echo "| Target | When (UTC), load at start → end | Seconds | Executions | Per second | Coverage (edges) | Features | Corpus after merge | Peak RSS | Findings |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for target in "${targets[@]}"; do row "$target"; done
