#!/usr/bin/env bash
# Gateway benchmark: wrk at 64 connections on loopback, in one run, side by side:
#   - the key endpoint (valid session tokens, audited grants) against nginx serving a 16-byte file;
#   - a 6-second segment from the gateway against nginx serving the same file from disk;
#   - with `nodes` as the third argument, key delivery per node on PostgreSQL (`--store`, a throwaway
#     cluster on a Unix socket) against the same node on SQLite, and two PostgreSQL nodes at once
#     (32 connections each) against one (64). These run in $ROUNDS interleaved rounds (default 3), the
#     order rotating each round so drift on a shared machine hits every configuration alike; each run
#     follows a 2-second warm-up of the same configuration that is not counted; the goals are judged on
#     each configuration's median, and the spread over the rounds is printed beside it. A round in which
#     the host stole more than STEAL_MAX % (default 2) of the CPU from any of its runs is printed but
#     not counted, and another is run in its place (at most 3 × ROUNDS in all);
#   - then the gateway's RSS sampled through a longer mixed run (keys and segments), which should stay flat.
# Usage: [ROUNDS=3] [STEAL_MAX=2] [AUTOGROUP=off] bench/gateway.sh [seconds per comparison run, default 15] [seconds of the RSS run, default 60] [nodes]
# AUTOGROUP=off (as root) turns the kernel's autogroup scheduling off for the run and back on at the end:
# with it on, every session gets an equal share of the cores, and PostgreSQL makes each of its backends
# a session of its own, so on two shared cores each busy backend weighs as much as the nodes and wrk
# together; that, not the gateway, made the nodes' rounds spread and two nodes' p99 reach 100–200 ms
# (docs/PERFORMANCE.md). A deployment under systemd puts each service in a cgroup of its own instead.
# Needs: the release build (made here), ffmpeg, nginx, wrk, curl; for `nodes`, Debian's postgresql.
# Results go in docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-15}
rss_duration=${2:-60}
nodes=${3:-}
connections=64
threads=2

# The product only: the test-support targets (FormatTestSupport imports MediaFormats @testable) do
# not build in release.
swift build -c release -Xswiftc -warnings-as-errors --product guard-play >/dev/null
binary=.build/release/guard-play

# A folder of its own: bench/work also holds the other benchmarks' generated inputs.
work=bench/work/gateway
rm -rf "$work"
mkdir -p "$work"/imports "$work"/nginx/www "$work"/nginx/logs "$work"/nginx/temp
work=$(cd "$work" && pwd)
export GUARDPLAY_KEK=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

autogroup=/proc/sys/kernel/sched_autogroup_enabled
autogroup_before=$(cat "$autogroup" 2>/dev/null || echo unknown)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${AUTOGROUP:-}" = off ] && [ "$autogroup_before" = 1 ]; then echo 1 > "$autogroup"; fi
}
trap cleanup EXIT
if [ "${AUTOGROUP:-}" = off ] && [ "$autogroup_before" = 1 ]; then echo 0 > "$autogroup"; fi
echo "kernel.sched_autogroup_enabled during the run: $(cat "$autogroup" 2>/dev/null || echo unknown)"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Key paths for 64 new sessions on the gateway at port $1 (asset clip imported there first, admin
# token $3) → file $2.
session_paths() {
    : > "$2"
    for _ in $(seq 64); do
        curl -sf -X POST -H "Authorization: Bearer $3" "http://127.0.0.1:$1/v1/sessions" -d '{"asset":"clip"}' |
            python3 -c 'import json,sys; print("/v1/keys/'"$kid"'?token=" + json.load(sys.stdin)["token"])' >> "$2"
    done
}

# A 6-second segment: the first segment of the clip packaged as AES-128 HLS with 6-second segments.
key_hex=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
kid=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s' "$key_hex" | xxd -r -p > "$work/clip.key"
printf 'key.bin\n%s\n' "$work/clip.key" > "$work/clip.keyinfo"
mkdir -p "$work/imports/clip"
ffmpeg -nostdin -loglevel error -y -i media/clip.mp4 -c copy -f hls -hls_time 6 -hls_playlist_type vod \
    -hls_key_info_file "$work/clip.keyinfo" -hls_segment_filename "$work/imports/clip/seg%d.ts" \
    -master_pl_name master.m3u8 "$work/imports/clip/media.m3u8"
segment="$work/imports/clip/seg0.ts"
segment_seconds=$(awk -F'[:,]' '/^#EXTINF/ {print $2; exit}' "$work/imports/clip/media.m3u8")
segment_bytes=$(stat -c %s "$segment")

# The gateway, release build, one HTTP thread per core.
gateway_port=$(free_port)
"$binary" serve --data "$work/data" --listen "127.0.0.1:$gateway_port" --import-root "$work/imports" \
    --threads "$(nproc)" --drain 0 > "$work/gateway.out" 2> "$work/gateway.err" &
gateway_pid=$!
pids+=("$gateway_pid")
for _ in $(seq 100); do grep -q listening "$work/gateway.out" 2>/dev/null && break; sleep 0.1; done
token=$("$binary" tokens create --scope admin --data "$work/data" 2>/dev/null)
curl -sf -X PUT -H "Authorization: Bearer $token" "http://127.0.0.1:$gateway_port/v1/assets/clip" \
    -d "{\"directory\":\"$work/imports/clip\",\"keys\":[{\"kid\":\"$kid\",\"key\":\"$key_hex\"}]}" > /dev/null
session_paths "$gateway_port" "$work/key-paths.txt" "$token"
check=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "http://127.0.0.1:$gateway_port$(head -1 "$work/key-paths.txt")")
[ "$check" = "200 16" ] || { echo "key endpoint check failed: $check" >&2; exit 1; }

cat > "$work/paths.lua" <<'LUA'
-- Cycles through the request paths in the file named by the first script argument.
local paths = {}
local index = 0
function init(args)
    for line in io.lines(args[1]) do paths[#paths + 1] = line end
end
function request()
    index = index % #paths + 1
    return wrk.format("GET", paths[index])
end
LUA

# nginx serving a 16-byte file and the same segment from disk.
head -c 16 /dev/urandom > "$work/nginx/www/key.bin"
cp "$segment" "$work/nginx/www/seg0.ts"
nginx_port=$(free_port)
cat > "$work/nginx/nginx.conf" <<NGINX
worker_processes $(nproc);
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path $work/nginx/temp/body;
    proxy_temp_path $work/nginx/temp/proxy;
    fastcgi_temp_path $work/nginx/temp/fastcgi;
    uwsgi_temp_path $work/nginx/temp/uwsgi;
    scgi_temp_path $work/nginx/temp/scgi;
    server {
        listen 127.0.0.1:$nginx_port;
        root $work/nginx/www;
        location = /key.bin { add_header Cache-Control no-store; }
    }
}
NGINX
chmod -R a+rX "$work/nginx"
nginx -p "$work/nginx/" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
pids+=($!)
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$nginx_port/key.bin" && break; sleep 0.1; done

# wrk run → "requests/s p99-ms MB/s requests"; measure URL [LUA-SCRIPT SCRIPT-ARGUMENT]; $conns connections
# (default 64).
measure() {
    local url=$1
    local script=()
    [ $# -lt 3 ] || script=(-s "$2" "$url" -- "$3")
    [ $# -ge 3 ] || script=("$url")
    local output
    output=$(wrk -t"${wrk_threads:-$threads}" -c"${conns:-$connections}" -d"${seconds:-$duration}s" --latency "${script[@]}")
    echo "$output" > "$work/wrk-$(date +%s%N).txt"
    local rps p99 mbps
    rps=$(echo "$output" | awk '/^Requests\/sec:/ {print $2}')
    p99=$(echo "$output" | awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; print v}')
    mbps=$(echo "$output" | awk '/^Transfer\/sec:/ {v=$2; if (v ~ /GB$/) {sub(/GB$/,"",v); v=v*1024} else if (v ~ /MB$/) {sub(/MB$/,"",v)} else if (v ~ /KB$/) {sub(/KB$/,"",v); v=v/1024} else {sub(/B$/,"",v); v=v/1048576}; print v}')
    local errors
    errors=$(echo "$output" | awk '/Non-2xx or 3xx responses:/ {print $NF}')
    [ -z "$errors" ] || { echo "wrk against $url saw $errors non-2xx responses" >&2; exit 1; }
    local requests
    requests=$(echo "$output" | awk '/requests in/ {print $1}')
    echo "$rps $p99 $mbps $requests"
}

echo "gateway benchmark: wrk -t$threads -c$connections -d${duration}s on loopback, $(nproc) cores"
echo "segment: seg0.ts, $segment_seconds s, $segment_bytes bytes (AES-128, encrypted whole)"
read -r n_key_rps n_key_p99 _ <<< "$(measure "http://127.0.0.1:$nginx_port/key.bin")"
read -r g_key_rps g_key_p99 _ <<< "$(measure "http://127.0.0.1:$gateway_port" "$work/paths.lua" "$work/key-paths.txt")"
read -r n_seg_rps n_seg_p99 n_seg_mbps _ <<< "$(measure "http://127.0.0.1:$nginx_port/seg0.ts")"
read -r g_seg_rps g_seg_p99 g_seg_mbps _ <<< "$(measure "http://127.0.0.1:$gateway_port/v1/hls/clip/seg0.ts")"

printf '\n%-34s %12s %10s %10s\n' "" "requests/s" "p99 ms" "MB/s"
printf '%-34s %12.0f %10.2f %10s\n' "nginx, 16-byte file" "$n_key_rps" "$n_key_p99" "-"
printf '%-34s %12.0f %10.2f %10s\n' "gateway, key endpoint" "$g_key_rps" "$g_key_p99" "-"
printf '%-34s %12.0f %10.2f %10.1f\n' "nginx, 6 s segment" "$n_seg_rps" "$n_seg_p99" "$n_seg_mbps"
printf '%-34s %12.0f %10.2f %10.1f\n' "gateway, 6 s segment" "$g_seg_rps" "$g_seg_p99" "$g_seg_mbps"
key_ratio=$(awk -v g="$g_key_rps" -v n="$n_key_rps" 'BEGIN {printf "%.2f", g / n}')
seg_ratio=$(awk -v g="$g_seg_mbps" -v n="$n_seg_mbps" 'BEGIN {printf "%.2f", g / n}')
echo
echo "key endpoint: $(printf '%.0f' "$g_key_rps") req/s (goal >= 10000), p99 $g_key_p99 ms (goal < 10), ratio to nginx $key_ratio"
echo "segments: gateway/nginx MB/s ratio $seg_ratio (goal >= 0.5)"

if [ "$nodes" = nodes ]; then
    # A throwaway PostgreSQL cluster on a Unix socket in the work folder (as the postgres user when
    # root, since initdb refuses root), fsync on as in production.
    pg_bin=/usr/lib/postgresql/15/bin
    pg="$work/pg"
    mkdir -p "$pg"
    as_owner=()
    if [ "$(id -u)" = 0 ]; then chown postgres: "$pg"; as_owner=(runuser -u postgres --); fi
    "${as_owner[@]}" "$pg_bin/initdb" -D "$pg/data" -U postgres -A trust --no-instructions > "$pg/initdb.log"
    "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$pg/data" -l "$pg/server.log" -w \
        -o "-k $pg -p 5432 -c listen_addresses='' -c max_connections=100" start > /dev/null
    trap 'cleanup; "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$pg/data" -m fast -w stop > /dev/null' EXIT
    "$pg_bin/createdb" -h "$pg" -U postgres bench
    store="postgresql:///bench?host=$pg&user=postgres"
    # Node 1 is the one-node configuration, with one HTTP thread per core as the SQLite node has.
    # Nodes 2 and 3 are the two-node configuration: two nodes sharing the two cores get half the
    # threads each (and each its own wrk with half of wrk's threads), so both configurations run the
    # same number of HTTP and client threads and differ only in being one process or two. (With a
    # thread per core each, eight busy threads on two cores time-slice; see docs/PERFORMANCE.md.)
    half_threads=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
    pg_ports=()
    for node in 1 2 3; do
        port=$(free_port)
        node_threads=$(nproc)
        [ "$node" = 1 ] || node_threads=$half_threads
        # All nodes share one data directory, as nodes share their asset storage.
        "$binary" serve --store "$store" --data "$work/pgdata" --listen "127.0.0.1:$port" \
            --import-root "$work/imports" --threads "$node_threads" --drain 0 > "$work/pg$node.out" 2> "$work/pg$node.err" &
        pids+=($!)
        for _ in $(seq 100); do grep -q listening "$work/pg$node.out" 2>/dev/null && break; sleep 0.1; done
        pg_ports+=("$port")
    done
    pg_token=$("$binary" tokens create --scope admin --store "$store" --data "$work/pgdata" 2>/dev/null)
    curl -sf -X PUT -H "Authorization: Bearer $pg_token" "http://127.0.0.1:${pg_ports[0]}/v1/assets/clip" \
        -d "{\"directory\":\"$work/imports/clip\",\"keys\":[{\"kid\":\"$kid\",\"key\":\"$key_hex\"}]}" > /dev/null
    # Sessions made on node 1 serve keys on every node: the others read each from the database once.
    session_paths "${pg_ports[0]}" "$work/pg-key-paths.txt" "$pg_token"
    for port in "${pg_ports[@]}"; do
        check=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' \
            "http://127.0.0.1:$port$(head -1 "$work/pg-key-paths.txt")")
        [ "$check" = "200 16" ] || { echo "PostgreSQL node $port key check failed: $check" >&2; exit 1; }
    done

    # One configuration's run → "requests/s p99-ms", after a warm-up of the same configuration.
    run_sqlite() {
        seconds=2 measure "http://127.0.0.1:$gateway_port" "$work/paths.lua" "$work/key-paths.txt" > /dev/null
        local rps p99
        read -r rps p99 _ <<< "$(measure "http://127.0.0.1:$gateway_port" "$work/paths.lua" "$work/key-paths.txt")"
        echo "$rps $p99"
    }
    run_pg() {
        seconds=2 measure "http://127.0.0.1:${pg_ports[0]}" "$work/paths.lua" "$work/pg-key-paths.txt" > /dev/null
        local rps p99
        read -r rps p99 _ <<< "$(measure "http://127.0.0.1:${pg_ports[0]}" "$work/paths.lua" "$work/pg-key-paths.txt")"
        echo "$rps $p99"
    }
    # Nodes 2 and 3 at once, 32 connections each: requests/s summed, p99 the worse of the two.
    run_two() {
        local seconds_each waits
        for seconds_each in 2 "$duration"; do
            waits=()
            for node in 1 2; do
                seconds=$seconds_each conns=$((connections / 2)) wrk_threads=$(( threads / 2 > 0 ? threads / 2 : 1 )) \
                    measure "http://127.0.0.1:${pg_ports[$node]}" "$work/paths.lua" "$work/pg-key-paths.txt" \
                    > "$work/two-$node.txt" &
                waits+=($!)
            done
            for pid in "${waits[@]}"; do wait "$pid" || exit 1; done
        done
        local a_rps a_p99 b_rps b_p99
        read -r a_rps a_p99 _ < "$work/two-1.txt"
        read -r b_rps b_p99 _ < "$work/two-2.txt"
        awk -v a="$a_rps" -v b="$b_rps" -v p="$a_p99" -v q="$b_p99" 'BEGIN {print a + b, (p > q ? p : q)}'
    }

    # All CPU time, iowait and steal so far (jiffies, /proc/stat's first line): over a run, a share of
    # steal (the host running something else on this VM's cores) or iowait says the machine slowed
    # that round, not the configuration.
    cpu_times() { awk '/^cpu / {print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $6, $9}' /proc/stat; }
    share() { awk -v part="$1" -v all="$2" 'BEGIN {printf "%.1f", (all > 0 ? 100 * part / all : 0)}'; }

    rounds=${ROUNDS:-3}
    # A round in which the host took more than STEAL_MAX % of the CPU from any configuration's run
    # measured the host, not the gateway: it is printed but not counted, and run again, up to three
    # times ROUNDS attempts in all. STEAL_MAX=100 counts every round.
    steal_max=${STEAL_MAX:-2}
    order=(sqlite pg two)
    : > "$work/rounds.txt"
    printf '\nrounds counted: every configuration with steal at most %s %% (STEAL_MAX)\n' "$steal_max"
    printf '%-6s %-10s %12s %10s %8s %9s\n' "round" "config" "requests/s" "p99 ms" "steal %" "iowait %"
    kept=0
    attempt=0
    while [ "$kept" -lt "$rounds" ] && [ "$attempt" -lt $((rounds * 3)) ]; do
        attempt=$((attempt + 1))
        : > "$work/round.txt"
        clean=1
        for k in 0 1 2; do
            config=${order[$(( (attempt - 1 + k) % 3 ))]}
            read -r all_before wait_before steal_before <<< "$(cpu_times)"
            read -r rps p99 <<< "$(run_"$config")"
            read -r all_after wait_after steal_after <<< "$(cpu_times)"
            [ -n "$p99" ] || { echo "round $attempt, $config: the run failed" >&2; exit 1; }
            steal=$(share $((steal_after - steal_before)) $((all_after - all_before)))
            awk -v s="$steal" -v m="$steal_max" 'BEGIN {exit !(s > m)}' && clean=0
            echo "$config $rps $p99" >> "$work/round.txt"
            printf '%-6s %-10s %12.0f %10.2f %8s %9s\n' "$attempt" "$config" "$rps" "$p99" "$steal" \
                "$(share $((wait_after - wait_before)) $((all_after - all_before)))"
        done
        if [ "$clean" = 1 ]; then
            kept=$((kept + 1))
            awk -v r="$kept" '{print r, $0}' "$work/round.txt" >> "$work/rounds.txt"
        else
            echo "       round $attempt not counted: steal over $steal_max %"
        fi
    done
    if [ "$kept" -lt "$rounds" ]; then
        echo "only $kept of $attempt rounds had steal at most $steal_max %: the node goals are not judged in this run"
        [ "$kept" -gt 0 ] || exit 1
    fi
    # Median (and min–max) of column $2 (3 requests/s, 4 p99) for configuration $1.
    median() { awk -v c="$1" -v f="$2" '$2 == c {print $f}' "$work/rounds.txt" | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR]}'; }
    read -r s_rps s_min s_max <<< "$(median sqlite 3)"
    read -r p_rps p_min p_max <<< "$(median pg 3)"
    read -r t_rps t_min t_max <<< "$(median two 3)"
    read -r s_p99 s_p99_min s_p99_max <<< "$(median sqlite 4)"
    read -r p_p99 p_p99_min p_p99_max <<< "$(median pg 4)"
    read -r t_p99 t_p99_min t_p99_max <<< "$(median two 4)"

    printf '\n%-34s %12s %16s %10s %14s\n' "key endpoint, 64 connections" "requests/s" "(min-max)" "p99 ms" "(min-max)"
    printf '%-34s %12.0f %16s %10.2f %14s\n' "one node, SQLite" "$s_rps" "($(printf '%.0f-%.0f' "$s_min" "$s_max"))" "$s_p99" "($s_p99_min-$s_p99_max)"
    printf '%-34s %12.0f %16s %10.2f %14s\n' "one node, PostgreSQL" "$p_rps" "($(printf '%.0f-%.0f' "$p_min" "$p_max"))" "$p_p99" "($p_p99_min-$p_p99_max)"
    printf '%-34s %12.0f %16s %10.2f %14s\n' "two PostgreSQL nodes (32 + 32)" "$t_rps" "($(printf '%.0f-%.0f' "$t_min" "$t_max"))" "$t_p99" "($t_p99_min-$t_p99_max)"
    # Per round, the PostgreSQL/SQLite and two/one ratios of the runs of that round.
    per_round=$(awk '{r[$1 " " $2] = $3; p[$1 " " $2] = $4; n = ($1 > n ? $1 : n)} END {
        for (i = 1; i <= n; i++) printf "%s%.2f/%.2f ms/%.2f", (i > 1 ? ", " : ""), r[i " pg"] / r[i " sqlite"], p[i " pg"], r[i " two"] / r[i " pg"]
    }' "$work/rounds.txt")
    echo
    echo "medians of $kept counted rounds (of $attempt): PostgreSQL/SQLite per node: $(awk -v p="$p_rps" -v s="$s_rps" 'BEGIN {printf "%.2f", p / s}') (goal >= 0.9)," \
        "p99 $p_p99 ms (goal < 10); two nodes/one: $(awk -v t="$t_rps" -v p="$p_rps" 'BEGIN {printf "%.2f", t / p}') (goal >= 1)"
    echo "per round (PostgreSQL/SQLite, PostgreSQL p99, two/one): $per_round"
    # Does the audit trail keep up? Every grant the PostgreSQL nodes served (their own counters, so
    # the warm-ups and checks count too) against the rows written: at once, then once the queues
    # are empty.
    pg_audit() { psql -X -At -h "$pg" -U postgres -d bench -c "SELECT count(*) FROM audit WHERE action = 'key'"; }
    metric() { curl -sf -H "Authorization: Bearer $pg_token" "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
    served=0
    for port in "${pg_ports[@]}"; do
        served=$((served + $(metric "$port" 'guardplay_key_requests_total{outcome="granted"}' | cut -d. -f1)))
    done
    echo "key grants served by the PostgreSQL nodes: $served; audited at the end of the runs: $(pg_audit)"
    drain_start=$(date +%s.%N)
    for _ in $(seq 600); do
        backlog=0
        for port in "${pg_ports[@]}"; do backlog=$((backlog + $(metric "$port" guardplay_audit_backlog | cut -d. -f1))); done
        [ "$backlog" -gt 0 ] || break
        sleep 0.1
    done
    dropped=0
    for port in "${pg_ports[@]}"; do dropped=$((dropped + $(metric "$port" guardplay_audit_dropped_total | cut -d. -f1))); done
    echo "audited once the queues were empty ($(awk -v s="$drain_start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}') s later): $(pg_audit) of $served, backlog $backlog, dropped $dropped"
fi

# RSS over a longer run of keys and segments together.
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$gateway_pid/status"; }
rss_start=$(rss)
samples=()
wrk -t1 -c$((connections / 2)) -d"${rss_duration}s" -s "$work/paths.lua" "http://127.0.0.1:$gateway_port" \
    -- "$work/key-paths.txt" > "$work/rss-keys.txt" &
wrk_keys=$!
wrk -t1 -c$((connections / 2)) -d"${rss_duration}s" "http://127.0.0.1:$gateway_port/v1/hls/clip/seg0.ts" > "$work/rss-segments.txt" &
wrk_segments=$!
for _ in $(seq $((rss_duration / 5))); do sleep 5; samples+=("$(rss)"); done
wait "$wrk_keys" "$wrk_segments"
rss_end=$(rss)
first=${samples[0]}
last=${samples[${#samples[@]}-1]}
max=$(printf '%s\n' "${samples[@]}" | sort -n | tail -1)
echo
echo "RSS over ${rss_duration}s of keys + segments (KiB): before $rss_start, samples every 5 s: ${samples[*]}, after $rss_end"
echo "RSS from the first to the last sample: $first -> $last ($(awk -v a="$first" -v b="$last" 'BEGIN {printf "%+.1f%%", (b - a) * 100 / a}')), peak $max"
key_requests=$(awk '/requests in/ {print $1}' "$work/rss-keys.txt")
segment_requests=$(awk '/requests in/ {print $1}' "$work/rss-segments.txt")
echo "requests in the RSS run: $key_requests keys, $segment_requests segments"
audited=$(sqlite3 "$work/data/guardplay.db" "SELECT count(*) FROM audit WHERE action = 'key'" 2>/dev/null || echo "?")
echo "key grants audited so far: $audited"
