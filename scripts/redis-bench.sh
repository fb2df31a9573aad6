#!/usr/bin/env bash
# Side-by-side redis-benchmark of podium's Redis port against redis-server 7:
# the same commands, clients and pipelining against each server
# in turn, on the same machine in the same run, then used_memory per member
# from INFO on both. Results go to stdout as Markdown rows.
#
#   scripts/redis-bench.sh [MEMBERS...]        # default: 1000000 10000000
#
# Environment: PODIUM (binary, default target/release/podium), CLIENTS (8),
# FSYNC_MODES ("everysec always"), LOAD_FACTOR (ZADD requests per member
# of keyspace for the pipelined load, 2), READS_P64 / READS_P1 / WRITES_P1
# (requests per read test, default 2000000 / 200000 / 200000).
#
# Both servers are durable the same way: podium `--fsync MODE`, Redis
# `--appendonly yes --appendfsync MODE`, RDB snapshots off. Each (size, mode)
# starts fresh servers with empty data directories.
set -euo pipefail
cd "$(dirname "$0")/.."

PODIUM=${PODIUM:-target/release/podium}
CLIENTS=${CLIENTS:-8}
FSYNC_MODES=${FSYNC_MODES:-"everysec always"}
LOAD_FACTOR=${LOAD_FACTOR:-2}
READS_P64=${READS_P64:-2000000}
READS_P1=${READS_P1:-200000}
WRITES_P1=${WRITES_P1:-200000}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000 10000000)

[ -x "$PODIUM" ] || cargo build --release -p podium-server
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || {
    echo "redis-server and redis-benchmark are needed (apt-get install redis-server redis-tools)" >&2
    exit 1
}

WORK_PREFIX=podium-redis-bench
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

start_redis() { # PORT MODE DIR
    mkdir -p "$3"
    redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly yes \
        --appendfsync "$2" --dir "$3" --daemonize no --loglevel warning >"$3/log" 2>&1 &
    PIDS+=($!)
    wait_port "$1"
}

start_podium() { # PORT MODE DIR
    mkdir -p "$3"
    "$PODIUM" serve --data-dir "$3/data" --http off --rpc off \
        --resp "127.0.0.1:$1" --fsync "$2" >"$3/log" 2>&1 &
    PIDS+=($!)
    wait_port "$1"
}

stop_last() {
    local p=${PIDS[-1]}
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    unset 'PIDS[-1]'
}

# rps PORT N PIPELINE KEYSPACE CMD... -> requests per second (redis-benchmark's own figure)
rps() {
    local port=$1 n=$2 p=$3 r=$4
    shift 4
    redis-benchmark -p "$port" -c "$CLIENTS" -n "$n" -P "$p" -r "$r" --csv "$@" 2>/dev/null |
        tail -n 1 | awk -F'","' '{print $2}' | tr -d '"'
}

info_field() { # PORT FIELD
    redis-cli -p "$1" INFO memory | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'
}

busy() { # PORT -> "0" once no snapshot / AOF rewrite / RDB save runs
    redis-cli -p "$1" INFO persistence | tr -d '\r' |
        awk -F: '$1 == "aof_rewrite_in_progress" || $1 == "rdb_bgsave_in_progress" {n += $2} END {print n + 0}'
}

# Waits (at most 120 s) until no snapshot (podium) or AOF rewrite (Redis)
# runs, as either holds a second copy of the data for a while, and
# used_memory then holds still for 2 s.
settle() { # PORT
    local a b
    a=$(info_field "$1" used_memory)
    for _ in $(seq 1 60); do
        sleep 2
        b=$(info_field "$1" used_memory)
        [ "$a" = "$b" ] && [ "$(busy "$1")" = 0 ] && return 0
        a=$b
    done
}

run_server() { # KIND PORT SIZE MODE -> lines "figure value"
    local kind=$1 port=$2 size=$3 mode=$4
    local base used card
    base=$(info_field "$port" used_memory)
    echo "zadd_p64 $(rps "$port" $((size * LOAD_FACTOR)) 64 "$size" ZADD lb __rand_int__ m:__rand_int__)"
    settle "$port"
    used=$(info_field "$port" used_memory)
    card=$(redis-cli -p "$port" ZCARD lb)
    echo "members $card"
    echo "bytes_per_member $(awk -v u="$used" -v b="$base" -v c="$card" 'BEGIN{printf "%.1f", (u - b) / c}')"
    echo "rss_per_member $(awk -v r="$(info_field "$port" used_memory_rss)" -v c="$card" 'BEGIN{printf "%.1f", r / c}')"
    echo "zadd_p1 $(rps "$port" "$WRITES_P1" 1 "$size" ZADD lb __rand_int__ m:__rand_int__)"
    [ "$mode" = everysec ] || return 0
    for p in 64 1; do
        local n=$READS_P64
        [ $p = 1 ] && n=$READS_P1
        echo "zrevrank_p$p $(rps "$port" "$n" $p "$size" ZREVRANK lb m:__rand_int__)"
        echo "zscore_p$p $(rps "$port" "$n" $p "$size" ZSCORE lb m:__rand_int__)"
        echo "top_p$p $(rps "$port" "$n" $p "$size" ZREVRANGE lb 0 24 WITHSCORES)"
        # A page of 25 at a random position: redis-benchmark draws each
        # __rand_int__ independently, so `start stop` cannot be a page; a
        # random score as the upper bound with LIMIT 0 25 is one
        # (O(log n + 25) on both servers).
        echo "page_p$p $(rps "$port" "$n" $p "$size" ZREVRANGEBYSCORE lb __rand_int__ -inf WITHSCORES LIMIT 0 25)"
    done
}

echo "# redis-benchmark, $CLIENTS clients; $(redis-server --version | cut -d' ' -f1-3); podium $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
for size in "${SIZES[@]}"; do
    for mode in $FSYNC_MODES; do
        declare -A R=() P=()
        port=$(free_port)
        start_redis "$port" "$mode" "$WORK/redis-$size-$mode"
        while read -r k v; do R[$k]=$v; done < <(run_server redis "$port" "$size" "$mode")
        stop_last
        port=$(free_port)
        start_podium "$port" "$mode" "$WORK/podium-$size-$mode"
        while read -r k v; do P[$k]=$v; done < <(run_server podium "$port" "$size" "$mode")
        stop_last
        echo
        echo "## keyspace $size, fsync $mode (Redis ${R[members]} members, podium ${P[members]})"
        echo
        echo "| figure | Redis 7 | podium | podium / Redis |"
        echo "|---|---|---|---|"
        for k in zadd_p64 zadd_p1 zrevrank_p64 zrevrank_p1 zscore_p64 zscore_p1 top_p64 top_p1 page_p64 page_p1; do
            [ -n "${R[$k]:-}" ] || continue
            echo "| $k (req/s) | ${R[$k]} | ${P[$k]} | $(awk -v a="${P[$k]}" -v b="${R[$k]}" 'BEGIN{printf "%.2f×", a/b}') |"
        done
        for k in bytes_per_member rss_per_member; do
            echo "| $k | ${R[$k]} | ${P[$k]} | $(awk -v a="${P[$k]}" -v b="${R[$k]}" 'BEGIN{printf "%.3f×", a/b}') |"
        done
        unset R P
    done
done
