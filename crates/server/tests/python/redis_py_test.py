#!/usr/bin/env python3
"""podium's Redis protocol driven by redis-py, as applications do.

Usage: redis_py_test.py PORT [--redis-port RPORT]

Runs the same scenario over RESP2 (protocol=2) and RESP3 (protocol=3):
sorted sets and hashes through redis-py's own API (zadd with a mapping
and flags, zrange withscores, zrevrank, zincrby, hset/hgetall,
expire/ttl, scan iterators), pipelines with transaction=True and False,
keyspace notifications through redis-py's PubSub,
and a leaderboard flow as the Redis leaderboard libraries implement it
(rank_member, score_for, rank_for, leaders pages, around_me via zrevrank +
zrevrange, member data in a hash).

Every result is checked against the value a Redis server gives; with
--redis-port, the whole scenario also runs against that real redis-server
and every recorded result (as redis-py returns it: types included) must
be equal on both. Exits 1 with a message on the first failed check,
0 when all pass.
"""

import argparse
import math
import sys
import time
import warnings

try:
    import redis
except ImportError:
    sys.exit(
        "redis-py is not installed: run scripts/test.sh (it installs it) "
        "or python3 -m pip install 'redis>=5'"
    )


class Mismatch(Exception):
    pass


def check(label, got, want):
    if got != want:
        raise Mismatch(f"{label}: expected {want!r}, got {got!r}")


def pairs(result):
    """zrange-style withscores results as [(member, score)], whatever the
    protocol's shape (tuples in RESP2, lists in RESP3, and a flat
    [member, score] for ZPOPMIN/ZPOPMAX without a count in RESP3)."""
    result = list(result)
    if len(result) == 2 and not isinstance(result[0], (list, tuple)):
        result = [result]
    return [(m, float(s)) for m, s in result]


class Leaderboard:
    """The operations of the Redis leaderboard libraries (leaderboard-python,
    the leaderboard Ruby gem, node leaderboards): a sorted set holds the
    scores, highest first; a hash `NAME:member_data` holds member data;
    ranks are 1-based."""

    def __init__(self, r, name, page_size=3):
        self.r = r
        self.name = name
        self.data_key = f"{name}:member_data"
        self.page_size = page_size

    def rank_member(self, member, score, member_data=None):
        with self.r.pipeline(transaction=True) as p:
            p.zadd(self.name, {member: score})
            if member_data is not None:
                p.hset(self.data_key, member, member_data)
            return p.execute()

    def rank_members(self, members_and_scores):
        with self.r.pipeline(transaction=True) as p:
            for member, score in members_and_scores:
                p.zadd(self.name, {member: score})
            return p.execute()

    def rank_member_if_higher(self, member, score):
        return self.r.zadd(self.name, {member: score}, gt=True, ch=True)

    def change_score_for(self, member, delta):
        return self.r.zincrby(self.name, delta, member)

    def score_for(self, member):
        return self.r.zscore(self.name, member)

    def rank_for(self, member):
        rank = self.r.zrevrank(self.name, member)
        return None if rank is None else rank + 1

    def score_and_rank_for(self, member):
        with self.r.pipeline(transaction=False) as p:
            p.zscore(self.name, member)
            p.zrevrank(self.name, member)
            score, rank = p.execute()
        return {
            "member": member,
            "score": score,
            "rank": None if rank is None else rank + 1,
        }

    def total_members(self):
        return self.r.zcard(self.name)

    def total_pages(self):
        return max(1, math.ceil(self.total_members() / self.page_size))

    def total_members_in_score_range(self, lo, hi):
        return self.r.zcount(self.name, lo, hi)

    def member_data_for(self, member):
        return self.r.hget(self.data_key, member)

    def _entries(self, raw):
        members = [m for m, _ in raw]
        data = self.r.hmget(self.data_key, members) if members else []
        out = []
        for (member, score), d in zip(raw, data):
            out.append(
                {
                    "member": member,
                    "score": float(score),
                    "rank": self.r.zrevrank(self.name, member) + 1,
                    "member_data": d,
                }
            )
        return out

    def leaders(self, page):
        page = max(1, min(page, self.total_pages()))
        start = (page - 1) * self.page_size
        end = start + self.page_size - 1
        raw = self.r.zrevrange(self.name, start, end, withscores=True)
        return self._entries(raw)

    def around_me(self, member):
        rank = self.r.zrevrank(self.name, member)
        if rank is None:
            return []
        start = max(0, rank - self.page_size // 2)
        end = start + self.page_size - 1
        raw = self.r.zrevrange(self.name, start, end, withscores=True)
        return self._entries(raw)

    def members_from_score_range(self, hi, lo):
        raw = self.r.zrevrangebyscore(self.name, hi, lo, withscores=True)
        return self._entries(raw)

    def page_for(self, member):
        rank = self.r.zrevrank(self.name, member)
        rank = 0 if rank is None else rank + 1
        return max(1, math.ceil(rank / self.page_size))

    def remove_member(self, member):
        with self.r.pipeline(transaction=True) as p:
            p.zrem(self.name, member)
            p.hdel(self.data_key, member)
            return p.execute()

    def delete_leaderboard(self):
        with self.r.pipeline(transaction=True) as p:
            p.delete(self.name)
            p.delete(self.data_key)
            return p.execute()


def scenario(r, log, redis_72=True):
    """Runs everything against client `r`; `log(label, value)` records a
    deterministic result for the cross-server comparison. `redis_72`: the
    server has what Redis 7.2 added (ZRANK/ZREVRANK WITHSCORE), as podium
    does and Debian's Redis 7.0 does not."""
    check("ping", r.ping(), True)
    check("echo", r.echo("hello"), "hello")
    r.flushall()
    check("dbsize after flushall", r.dbsize(), 0)
    r.client_setname("redis-py-test")
    check("client_getname", r.client_getname(), "redis-py-test")

    # --- sorted sets through redis-py's API
    check("zadd mapping", log("zadd", r.zadd("lb", {"alice": 10, "bob": 20, "carol": 15})), 3)
    check("zadd existing", r.zadd("lb", {"alice": 10}), 0)
    check("zadd nx", log("zadd nx", r.zadd("lb", {"alice": 99, "dave": 5}, nx=True)), 1)
    check("zscore after nx", r.zscore("lb", "alice"), 10.0)
    check("zadd xx ch", log("zadd xx ch", r.zadd("lb", {"alice": 12, "zed": 1}, xx=True, ch=True)), 1)
    check("zscore zed", r.zscore("lb", "zed"), None)
    check("zadd gt ch", log("zadd gt ch", r.zadd("lb", {"alice": 11, "bob": 25}, gt=True, ch=True)), 1)
    check("zadd lt ch", log("zadd lt ch", r.zadd("lb", {"carol": 14, "dave": 6}, lt=True, ch=True)), 1)
    check("zadd incr", log("zadd incr", r.zadd("lb", {"dave": 2.5}, incr=True)), 7.5)
    check("zadd incr nx existing", log("zadd incr nx", r.zadd("lb", {"dave": 1}, incr=True, nx=True)), None)
    check(
        "zrange withscores",
        pairs(log("zrange ws", r.zrange("lb", 0, -1, withscores=True))),
        [("dave", 7.5), ("alice", 12.0), ("carol", 14.0), ("bob", 25.0)],
    )
    check("zrange", log("zrange", r.zrange("lb", 0, 1)), ["dave", "alice"])
    check("zrange desc", log("zrange desc", r.zrange("lb", 0, 1, desc=True)), ["bob", "carol"])
    check(
        "zrange byscore limit",
        log("zrange byscore", r.zrange("lb", "(7.5", "+inf", byscore=True, offset=1, num=2)),
        ["carol", "bob"],
    )
    check(
        "zrevrange withscores",
        pairs(log("zrevrange ws", r.zrevrange("lb", 0, 1, withscores=True))),
        [("bob", 25.0), ("carol", 14.0)],
    )
    check(
        "zrangebyscore",
        pairs(log("zrangebyscore", r.zrangebyscore("lb", 10, "(25", withscores=True))),
        [("alice", 12.0), ("carol", 14.0)],
    )
    check(
        "zrevrangebyscore limit",
        log("zrevrangebyscore", r.zrevrangebyscore("lb", "+inf", "-inf", start=1, num=2)),
        ["carol", "alice"],
    )
    check("zrank", log("zrank", r.zrank("lb", "alice")), 1)
    check("zrevrank", log("zrevrank", r.zrevrank("lb", "bob")), 0)
    check("zrevrank missing", log("zrevrank missing", r.zrevrank("lb", "nobody")), None)
    if redis_72:
        # redis-py before 6 leaves the score a string over RESP2.
        def rank_score(v):
            return None if v is None else [v[0], float(v[1])]

        check("zrevrank withscore", rank_score(r.zrevrank("lb", "carol", withscore=True)), [1, 14.0])
        check("zrank withscore", rank_score(r.zrank("lb", "dave", withscore=True)), [0, 7.5])
        check("zrevrank withscore missing", r.zrevrank("lb", "nobody", withscore=True), None)
    check("zincrby", log("zincrby", r.zincrby("lb", 1.5, "alice")), 13.5)
    check("zincrby new", r.zincrby("lb", -2, "erin"), -2.0)
    check("zscore", log("zscore", r.zscore("lb", "carol")), 14.0)
    check("zmscore", log("zmscore", r.zmscore("lb", ["bob", "nobody", "erin"])), [25.0, None, -2.0])
    check("zcard", r.zcard("lb"), 5)
    check("zcount", log("zcount", r.zcount("lb", "(0", 14)), 3)
    check("zrem", r.zrem("lb", "erin", "nobody"), 1)
    r.zadd("tmp", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    check("zpopmin", pairs(log("zpopmin", r.zpopmin("tmp"))), [("a", 1.0)])
    check("zpopmax 2", pairs(log("zpopmax", r.zpopmax("tmp", 2))), [("e", 5.0), ("d", 4.0)])
    check("zremrangebyrank", r.zremrangebyrank("tmp", 0, 0), 1)
    check("zremrangebyscore", r.zremrangebyscore("tmp", "-inf", "+inf"), 1)
    check("exists after emptying", r.exists("tmp"), 0)
    r.zadd("w1", {"a": 1, "b": 2})
    r.zadd("w2", {"b": 10, "c": 20})
    check("zunionstore weights", r.zunionstore("u", {"w1": 2, "w2": 1}), 3)
    check("zunion result", pairs(log("zunion", r.zrange("u", 0, -1, withscores=True))),
          [("a", 2.0), ("b", 14.0), ("c", 20.0)])
    check("zinterstore max", r.zinterstore("i", ["w1", "w2"], aggregate="MAX"), 1)
    check("zinter result", pairs(r.zrange("i", 0, -1, withscores=True)), [("b", 10.0)])
    check("zscan_iter", sorted(pairs(r.zscan_iter("w2"))), [("b", 10.0), ("c", 20.0)])
    check("zrange of a missing key", r.zrange("nokey", 0, -1), [])

    # --- scores as Redis formats them reach redis-py intact
    r.zadd("fmt", {"tenth": 0.1, "big": 1e300, "top": float("inf"), "bottom": float("-inf")})
    check("zscore 0.1", r.zscore("fmt", "tenth"), 0.1)
    check("zscore 1e300", r.zscore("fmt", "big"), 1e300)
    check("zscore inf", r.zscore("fmt", "top"), float("inf"))
    check("zrange -inf first", r.zrange("fmt", 0, 0, withscores=True)[0][1], float("-inf"))

    # --- hashes
    check("hset mapping", r.hset("user:1", mapping={"name": "Alice", "country": "FR"}), 2)
    check("hset one", r.hset("user:1", "level", 7), 1)
    check("hget", r.hget("user:1", "name"), "Alice")
    check("hmget", r.hmget("user:1", ["name", "nope", "level"]), ["Alice", None, "7"])
    check("hgetall", log("hgetall", r.hgetall("user:1")),
          {"name": "Alice", "country": "FR", "level": "7"})
    check("hexists", r.hexists("user:1", "country"), True)
    check("hexists missing", r.hexists("user:1", "zip"), False)
    check("hlen", r.hlen("user:1"), 3)
    check("hkeys", sorted(r.hkeys("user:1")), ["country", "level", "name"])
    check("hvals", sorted(r.hvals("user:1")), ["7", "Alice", "FR"])
    check("hdel", r.hdel("user:1", "level", "nope"), 1)
    check("hgetall missing", r.hgetall("nokey"), {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check("hmset", r.hmset("user:2", {"name": "Bob"}), True)

    # --- keys and expiry
    check("type zset", r.type("lb"), "zset")
    check("type hash", r.type("user:1"), "hash")
    check("type none", r.type("nokey"), "none")
    check("exists", r.exists("lb", "user:1", "nokey"), 2)
    check("keys", sorted(r.keys("user:*")), ["user:1", "user:2"])
    check("scan_iter", sorted(r.scan_iter(match="w*")), ["w1", "w2"])
    check("scan_iter count", sorted(r.scan_iter(count=2)), sorted(r.keys("*")))
    check("ttl no expiry", r.ttl("lb"), -1)
    check("ttl missing", r.ttl("nokey"), -2)
    check("expire", r.expire("user:2", 100), True)
    ttl = r.ttl("user:2")
    if not 98 <= ttl <= 100:
        raise Mismatch(f"ttl after expire 100: {ttl}")
    pttl = r.pttl("user:2")
    if not 97_000 <= pttl <= 100_000:
        raise Mismatch(f"pttl after expire 100: {pttl}")
    check("expire nx on a key with a ttl", r.expire("user:2", 50, nx=True), False)
    check("expire gt", r.expire("user:2", 200, gt=True), True)
    check("persist", r.persist("user:2"), True)
    check("ttl after persist", r.ttl("user:2"), -1)
    check("pexpire", r.pexpire("user:2", 50), True)
    time.sleep(0.3)
    check("expired key gone", r.exists("user:2"), 0)
    check("expired hget", r.hget("user:2", "name"), None)
    check("expireat", r.expireat("w1", int(time.time()) + 1000), True)
    ttl = r.ttl("w1")
    if not 990 <= ttl <= 1000:
        raise Mismatch(f"ttl after expireat now+1000: {ttl}")
    check("delete", r.delete("w1", "w2", "nokey"), 2)
    check("unlink", r.unlink("u", "i"), 2)

    # --- errors surface as redis-py exceptions with Redis's text
    try:
        r.hset("lb", "f", "v")
        raise Mismatch("hset on a sorted set did not fail")
    except redis.exceptions.ResponseError as e:
        check("WRONGTYPE text", str(e), "WRONGTYPE Operation against a key holding the wrong kind of value")
    try:
        r.zadd("lb", {"x": "abc"})
        raise Mismatch("zadd with a non-float score did not fail")
    except redis.exceptions.ResponseError as e:
        check("float error text", str(e), "value is not a valid float")
    try:
        r.execute_command("NOSUCHCOMMAND", "a")
        raise Mismatch("an unknown command did not fail")
    except redis.exceptions.ResponseError as e:
        check("unknown command text", str(e),
              "unknown command 'NOSUCHCOMMAND', with args beginning with: 'a' ")
    check("connection usable after errors", r.ping(), True)

    # --- pipelines
    with r.pipeline(transaction=True) as p:
        p.zadd("p", {"a": 1, "b": 2})
        p.zincrby("p", 5, "a")
        p.zrange("p", 0, -1, withscores=True)
        p.zrevrank("p", "a")
        p.hset("ph", "f", "v")
        p.hgetall("ph")
        res = p.execute()
    log("multi pipeline", res)
    check("multi pipeline zadd", res[0], 2)
    check("multi pipeline zincrby", res[1], 6.0)
    check("multi pipeline zrange", pairs(res[2]), [("b", 2.0), ("a", 6.0)])
    check("multi pipeline zrevrank", res[3], 0)
    check("multi pipeline hset", res[4], 1)
    check("multi pipeline hgetall", res[5], {"f": "v"})

    with r.pipeline(transaction=False) as p:
        for i in range(500):
            p.zadd("pipe", {f"m{i}": i % 50})
        p.zcard("pipe")
        p.zrevrange("pipe", 0, 2, withscores=True)
        res = p.execute()
    check("plain pipeline adds", sum(res[:500]), 500)
    check("plain pipeline zcard", res[500], 500)
    top = sorted((f"m{i}" for i in range(500) if i % 50 == 49), reverse=True)[:3]
    check("plain pipeline top (ties by member, reversed)", pairs(res[501]), [(m, 49.0) for m in top])
    log("plain pipeline tail", res[500:])

    # An error inside MULTI/EXEC: the other commands still run.
    with r.pipeline(transaction=True) as p:
        p.zadd("tx", {"a": 1})
        p.hset("tx", "f", "v")
        p.zcard("tx")
        res = p.execute(raise_on_error=False)
    check("exec with an error: zadd", res[0], 1)
    if not isinstance(res[1], redis.exceptions.ResponseError):
        raise Mismatch(f"exec with an error: expected a ResponseError, got {res[1]!r}")
    check("exec with an error: zcard", res[2], 1)

    # --- a leaderboard, as the leaderboard libraries drive it
    lb = Leaderboard(r, "highscores", page_size=3)
    lb.delete_leaderboard()
    for i, (m, s) in enumerate(
        [("ann", 120), ("ben", 95), ("cat", 130), ("dan", 95), ("eve", 80), ("fay", 150), ("gus", 60)]
    ):
        lb.rank_member(m, s, f'{{"id": {i}}}')
    check("total_members", lb.total_members(), 7)
    check("total_pages", lb.total_pages(), 3)
    check("score_for", lb.score_for("cat"), 130.0)
    check("score_for missing", lb.score_for("zoe"), None)
    check("rank_for", lb.rank_for("fay"), 1)
    check("rank_for tie (member order, reversed)", (lb.rank_for("dan"), lb.rank_for("ben")), (4, 5))
    check("rank_for missing", lb.rank_for("zoe"), None)
    check("score_and_rank_for", lb.score_and_rank_for("ann"), {"member": "ann", "score": 120.0, "rank": 3})
    check("member_data_for", lb.member_data_for("eve"), '{"id": 4}')
    leaders = lb.leaders(1)
    log("leaders page 1", leaders)
    check("leaders page 1", [(e["member"], e["score"], e["rank"]) for e in leaders],
          [("fay", 150.0, 1), ("cat", 130.0, 2), ("ann", 120.0, 3)])
    check("leaders page 1 data", leaders[0]["member_data"], '{"id": 5}')
    check("leaders page 3", [e["member"] for e in lb.leaders(3)], ["gus"])
    check("leaders page past the end", [e["member"] for e in lb.leaders(9)], ["gus"])
    around = lb.around_me("dan")
    log("around_me", around)
    check("around_me", [(e["member"], e["rank"]) for e in around], [("ann", 3), ("dan", 4), ("ben", 5)])
    check("around_me top", [e["member"] for e in lb.around_me("fay")], ["fay", "cat", "ann"])
    check("around_me missing", lb.around_me("zoe"), [])
    check("page_for", (lb.page_for("fay"), lb.page_for("dan"), lb.page_for("gus")), (1, 2, 3))
    check("members_from_score_range", [e["member"] for e in lb.members_from_score_range(130, 95)],
          ["cat", "ann", "dan", "ben"])
    check("total_members_in_score_range", lb.total_members_in_score_range(90, 125), 3)
    check("change_score_for", lb.change_score_for("gus", 100), 160.0)
    check("rank after change", lb.rank_for("gus"), 1)
    check("rank_member_if_higher lower", lb.rank_member_if_higher("fay", 10), 0)
    check("rank_member_if_higher higher", lb.rank_member_if_higher("eve", 200), 1)
    check("rank after if_higher", lb.rank_for("eve"), 1)
    check("rank_members", lb.rank_members([("hal", 1), ("ivy", 2)]), [1, 1])
    check("remove_member", lb.remove_member("cat"), [1, 1])
    check("removed", (lb.rank_for("cat"), lb.member_data_for("cat")), (None, None))
    check("total after remove", lb.total_members(), 8)
    log("final board", r.zrevrange("highscores", 0, -1, withscores=True))
    check("delete_leaderboard", lb.delete_leaderboard(), [1, 1])

    # --- INFO as tools read it
    info = r.info()
    for key in ["redis_version", "connected_clients", "used_memory"]:
        if key not in info:
            raise Mismatch(f"INFO has no {key}: {sorted(info)[:20]}")
    r.zadd("counted", {"a": 1})
    ks = r.info("keyspace")
    if "db0" not in ks or ks["db0"].get("keys", 0) < 1:
        raise Mismatch(f"INFO keyspace: {ks!r}")
    check("select 0", r.select(0), True)

    # --- keyspace notifications through redis-py's PubSub
    check("config set notify-keyspace-events", r.config_set("notify-keyspace-events", "KEA"), True)
    check("config get notify-keyspace-events", r.config_get("notify-keyspace-events"),
          {"notify-keyspace-events": "AKE"})
    p = r.pubsub()
    p.psubscribe("__keyspace@0__:ks:*")
    # The confirmation first: the writes must come after the subscription.
    check("psubscribe", p.get_message(timeout=5)["type"], "psubscribe")
    r.zadd("ks:z", {"a": 1})
    r.zincrby("ks:z", 2, "a")
    r.zrem("ks:z", "a")
    r.hset("ks:h", "f", "v")
    r.set("ks:s", 1, ex=100)
    r.incr("ks:s")
    r.delete("ks:h", "ks:s")
    want = [
        ("ks:z", "zadd"), ("ks:z", "zincr"), ("ks:z", "zrem"), ("ks:z", "del"),
        ("ks:h", "hset"), ("ks:s", "set"), ("ks:s", "expire"), ("ks:s", "incrby"),
        ("ks:h", "del"), ("ks:s", "del"),
    ]
    events = []
    deadline = time.time() + 10
    while len(events) < len(want) and time.time() < deadline:
        m = p.get_message(timeout=1)
        if m and m["type"] == "pmessage":
            events.append((m["channel"].removeprefix("__keyspace@0__:"), m["data"]))
    log("keyspace events", events)
    check("keyspace events", events, want)
    p.close()
    check("notifications off", r.config_set("notify-keyspace-events", ""), True)


def run(port, protocol, redis_72=True):
    r = redis.Redis(host="127.0.0.1", port=port, protocol=protocol, decode_responses=True,
                    socket_timeout=30)
    results = []

    def log(label, value):
        results.append((label, value))
        return value

    scenario(r, log, redis_72)
    r.close()
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--redis-port", type=int)
    args = ap.parse_args()
    failed = False
    for protocol in (2, 3):
        try:
            got = run(args.port, protocol)
        except Mismatch as e:
            print(f"FAIL (protocol={protocol}): {e}", file=sys.stderr)
            failed = True
            continue
        except Exception as e:  # a crash of the client or the server
            print(f"FAIL (protocol={protocol}): {type(e).__name__}: {e}", file=sys.stderr)
            failed = True
            continue
        if args.redis_port:
            want = run(args.redis_port, protocol, redis_72=False)
            for (label, g), (_, w) in zip(got, want):
                if g != w:
                    print(
                        f"FAIL (protocol={protocol}): {label}: redis-server gives {w!r}, "
                        f"podium gives {g!r}",
                        file=sys.stderr,
                    )
                    failed = True
        print(f"redis-py {redis.__version__} protocol={protocol}: scenario passed")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
