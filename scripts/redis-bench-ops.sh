#!/usr/bin/env bash
# Side-by-side benchmark of podium's Redis port against redis-server 7 beyond
# the sorted-set figures of scripts/redis-bench.sh: a leaderboard Lua script
# through EVALSHA, string commands, and clients blocked in BZPOPMAX. Results
# go to stdout as Markdown rows.
#
#   scripts/redis-bench-ops.sh [evalsha] [strings] [blocked]   # default: all three
#
# - evalsha: redis-benchmark, CLIENTS clients, EVALSHA of a script that
#   reads a member's score, ZADDs when the new one is higher and returns its
#   ZREVRANK, on one board preloaded with PRELOAD members; members and
#   scores are __rand_int__ over KEYSPACE; unpipelined and -P 16.
# - strings: GET, SET and INCR on __rand_int__ keys over KEYSPACE, -P 16.
# - blocked: BLOCKED clients each blocked in BZPOPMAX on a key of its own
#   plus SHARED on one key (scripts/blocked-clients.py): resident memory per
#   blocked client, then one push wakes exactly the right client.
#
# Environment: PODIUM (binary, default target/release/podium), ROUNDS (5):
# each throughput figure is measured ROUNDS times, podium and Redis in
# turn, and the median is printed; CLIENTS (50), REQUESTS (requests per
# run, 200000), KEYSPACE (100000), PRELOAD (100000), BLOCKED (10000),
# SHARED (5).
#
# Both servers are durable the same way: podium `--fsync everysec`, Redis
# `--appendonly yes --appendfsync everysec`, RDB snapshots off, each started
# on an empty data directory of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

PODIUM=${PODIUM:-target/release/podium}
ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-200000}
KEYSPACE=${KEYSPACE:-100000}
PRELOAD=${PRELOAD:-100000}
BLOCKED=${BLOCKED:-10000}
SHARED=${SHARED:-5}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(evalsha strings blocked)

[ -x "$PODIUM" ] || cargo build --release -p podium-server
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || {
    echo "redis-server and redis-benchmark are needed (apt-get install redis-server redis-tools)" >&2
    exit 1
}

# Ten thousand connections need as many descriptors, in both servers and
# in the driver.
ulimit -n $((BLOCKED + SHARED + 1024)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

WORK_PREFIX=podium-redis-bench-ops
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

MAXCLIENTS=$((BLOCKED + SHARED + 100))

start_redis() { # PORT DIR
    mkdir -p "$2"
    redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly yes \
        --appendfsync everysec --dir "$2" --maxclients "$MAXCLIENTS" \
        --daemonize no --loglevel warning >"$2/log" 2>&1 &
    PIDS+=($!)
    wait_port "$1"
}

start_podium() { # PORT DIR
    mkdir -p "$2"
    "$PODIUM" serve --data-dir "$2/data" --http off --rpc off \
        --resp "127.0.0.1:$1" --fsync everysec --maxclients "$MAXCLIENTS" >"$2/log" 2>&1 &
    PIDS+=($!)
    wait_port "$1"
}

# rps PORT PIPELINE CMD... -> requests per second (redis-benchmark's own figure)
rps() {
    local port=$1 p=$2
    shift 2
    redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$p" -r "$KEYSPACE" --csv "$@" 2>/dev/null |
        tail -n 1 | awk -F'","' '{print $2}' | tr -d '"'
}

median() { # VALUES... -> the median (the mean of the middle two for an even count)
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
        if (NR == 0) { print "n/a"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

row() { # LABEL REDIS PODIUM [lower]: the ratio is how many times better
    # podium did (podium/Redis for rates; Redis/podium when lower is better)
    local ratio=n/a
    if [[ $2 =~ ^[0-9.]+$ && $3 =~ ^[0-9.]+$ ]]; then
        if [ "${4:-}" = lower ]; then
            ratio=$(awk -v a="$2" -v b="$3" 'BEGIN{printf "%.2f×", a/b}')
        else
            ratio=$(awk -v a="$3" -v b="$2" 'BEGIN{printf "%.2f×", a/b}')
        fi
    fi
    echo "| $1 | $2 | $3 | $ratio |"
}

# The leaderboard write of a game: keep the best score, answer the rank.
SCRIPT="local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not old or tonumber(ARGV[2]) > tonumber(old) then
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
end
return redis.call('ZREVRANK', KEYS[1], ARGV[1])"

# Throughput scenarios run on one pair of servers, started here.
RPORT=$(free_port)
start_redis "$RPORT" "$WORK/redis"
PPORT=$(free_port)
start_podium "$PPORT" "$WORK/podium"

# compare LABEL PIPELINE CMD...: ROUNDS runs on each server in turn, then
# the row of medians.
compare() {
    local label=$1 p=$2 r=() q=()
    shift 2
    for _ in $(seq 1 "$ROUNDS"); do
        q+=("$(rps "$PPORT" "$p" "${@//@SHA@/$PSHA}")")
        r+=("$(rps "$RPORT" "$p" "${@//@SHA@/$RSHA}")")
    done
    row "$label" "$(median "${r[@]}")" "$(median "${q[@]}")"
}

header() {
    echo
    echo "## $1"
    echo
    echo "| figure | Redis 7 | podium | podium vs Redis (× better) |"
    echo "|---|---|---|---|"
}

echo "# redis-benchmark, $CLIENTS clients, median of $ROUNDS runs a figure, fsync everysec; $(redis-server --version | cut -d' ' -f1-3); podium $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
RSHA=$(redis-cli -p "$RPORT" SCRIPT LOAD "$SCRIPT")
PSHA=$(redis-cli -p "$PPORT" SCRIPT LOAD "$SCRIPT")
for s in "${SCENARIOS[@]}"; do
    case $s in
    evalsha)
        # The same board on both: PRELOAD random members, pipelined.
        for port in "$RPORT" "$PPORT"; do
            redis-benchmark -p "$port" -c "$CLIENTS" -n "$PRELOAD" -P 64 -r "$KEYSPACE" \
                ZADD lb __rand_int__ m:__rand_int__ >/dev/null 2>&1
        done
        header "EVALSHA: ZSCORE, compare, ZADD if higher, ZREVRANK (one board, Redis $(redis-cli -p "$RPORT" ZCARD lb) members, podium $(redis-cli -p "$PPORT" ZCARD lb))"
        compare "evalsha_p1 (req/s)" 1 EVALSHA @SHA@ 1 lb m:__rand_int__ __rand_int__
        compare "evalsha_p16 (req/s)" 16 EVALSHA @SHA@ 1 lb m:__rand_int__ __rand_int__
        ;;
    strings)
        header "strings, -P 16"
        compare "set_p16 (req/s)" 16 SET key:__rand_int__ value-of-16-bytes
        compare "get_p16 (req/s)" 16 GET key:__rand_int__
        compare "incr_p16 (req/s)" 16 INCR counter:__rand_int__
        ;;
    blocked)
        # Fresh servers of their own: the figure is resident memory.
        declare -A B=()
        for kind in redis podium; do
            port=$(free_port)
            "start_$kind" "$port" "$WORK/blocked-$kind"
            pid=${PIDS[-1]}
            set +e
            out=$(python3 scripts/blocked-clients.py --port "$port" --pid "$pid" \
                --clients "$BLOCKED" --shared "$SHARED" 2>&1)
            rc=$?
            set -e
            case $rc in
            0)
                B[$kind]=$(sed -n 's/.*bytes_per_client=\([0-9.]*\).*/\1/p' <<<"$out")
                B[$kind-wake]="right client woke, $((BLOCKED + SHARED - 2)) still blocked"
                ;;
            2) B[$kind]="n/a (no BZPOPMAX)" B[$kind-wake]="n/a" ;;
            *)
                B[$kind]="failed"
                B[$kind-wake]="FAILED: $(tail -n 1 <<<"$out")"
                ;;
            esac
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            unset 'PIDS[-1]'
        done
        header "$BLOCKED clients blocked in BZPOPMAX on keys of their own, $SHARED on one shared key"
        row "RSS per blocked client (bytes)" "${B[redis]}" "${B[podium]}" lower
        echo "| one push to one key | ${B[redis-wake]} | ${B[podium-wake]} | |"
        unset B
        ;;
    *)
        echo "unknown scenario $s (evalsha, strings, blocked)" >&2
        exit 2
        ;;
    esac
done
