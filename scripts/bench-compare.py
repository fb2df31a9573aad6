#!/usr/bin/env python3
"""Two podium binaries side by side on the headline scenarios: the guard
that shows a regression of speed or memory before it lands.

    scripts/bench-compare.py --baseline OLD [--new NEW] [--rounds 3]
                             [--only resp,evalsha,...] [--quick] [--json FILE]

Each scenario runs ROUNDS times on each binary, alternating which goes
first, on fresh data directories; the table gives each figure's median for
both, the new/old ratio, and whether that is better or worse (by the unit:
rates are better higher, times and bytes lower). The same goes to FILE as
JSON, one record per figure with every run's values.

Scenarios (the sizes `--quick` uses in brackets, for trying the tool):
- resp: redis-benchmark `zadd lb __rand_int__ m:__rand_int__`, 8 clients,
  -P 64, 2M requests over 1M ids [200k over 100k]; after 4 s idle,
  `used_memory` and VmRSS per member; then ZREVRANK unpipelined and -P 16
  (50 clients, 200k requests [50k]). With each redis-benchmark figure,
  the server's CPU time per request (`_server_cpu`, user + system from
  /proc): steadier than the rate on a shared host.
- evalsha: the leaderboard script of scripts/redis-bench-ops.sh (ZSCORE,
  compare, ZADD when higher, ZREVRANK) through EVALSHA on a board of 100k
  members [20k], 50 clients, unpipelined and -P 16, 200k requests [50k].
- rank10m: `podium bench rank10m --members 1M --no-redis` [100k].
- http-updates: `podium bench http-updates --no-redis`, 64 clients, 10 s [3 s].
- search-http: `podium bench search`, the HTTP figures only (1M names
  [100k]; the in-process part runs on the driver's engine, the same for
  both, at its smallest size).
- events: `podium bench events --filters top --subscribers 0,1000
  --no-latency --no-redis` [100k members, subscribers 0,100].

The `podium bench` scenarios run from the podium-bench beside NEW with
`--podium BINARY`, so one client makes the load and only the server
differs. Both servers run with `--fsync everysec`. Needs redis-benchmark
and redis-cli (redis-tools) for resp and evalsha.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

LEADERBOARD_SCRIPT = """local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not old or tonumber(ARGV[2]) > tonumber(old) then
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
end
return redis.call('ZREVRANK', KEYS[1], ARGV[1])"""

SCENARIOS = ["resp", "evalsha", "rank10m", "http-updates", "search-http", "events"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`podium serve` on a fresh data directory, Redis protocol only."""

    def __init__(self, binary, work):
        self.dir = tempfile.mkdtemp(prefix="serve-", dir=work)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--data-dir", os.path.join(self.dir, "data"),
             "--http", "off", "--rpc", "off", "--resp", f"127.0.0.1:{self.port}",
             "--fsync", "everysec"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{binary} did not start (log in {self.dir}/log)")

    def cli(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port), *args],
                              check=True, capture_output=True, text=True).stdout.strip()

    def info(self, field):
        for line in self.cli("INFO", "memory").splitlines():
            k, _, v = line.strip().partition(":")
            if k == field:
                return float(v)
        raise RuntimeError(f"INFO memory has no {field}")

    def rss(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return float(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def cpu_seconds(self):
        """The server's user + system CPU time so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            # Fields after the command name (which may hold spaces).
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def bench_cpu(self, clients, requests, pipeline, keyspace, *cmd):
        """redis-benchmark's requests per second for one command, and the
        server's CPU time per request in µs: on a shared host the rate
        swings with what else runs, the CPU a request costs much less."""
        before = self.cpu_seconds()
        rate = self.bench(clients, requests, pipeline, keyspace, *cmd)
        return rate, (self.cpu_seconds() - before) * 1e6 / requests

    def bench(self, clients, requests, pipeline, keyspace, *cmd):
        """redis-benchmark's requests per second for one command."""
        out = subprocess.run(
            ["redis-benchmark", "-p", str(self.port), "-c", str(clients), "-n", str(requests),
             "-P", str(pipeline), "-r", str(keyspace), "--csv", *cmd],
            check=True, capture_output=True, text=True).stdout
        last = [l for l in out.splitlines() if l.strip()][-1]
        return float(last.split('","')[1].strip('"'))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def scenario_resp(binary, work, quick):
    n, ids, reads = (200_000, 100_000, 50_000) if quick else (2_000_000, 1_000_000, 200_000)
    s = Server(binary, work)
    try:
        out = {}
        rate, cpu = s.bench_cpu(8, n, 64, ids, "zadd", "lb", "__rand_int__", "m:__rand_int__")
        out[("zadd_p64", "req/s")] = rate
        out[("zadd_p64_server_cpu", "µs")] = cpu
        time.sleep(4)
        members = float(s.cli("ZCARD", "lb"))
        out[("used_memory_per_member", "B/member")] = s.info("used_memory") / members
        out[("rss_per_member", "B/member")] = s.rss() / members
        for p in (1, 16):
            rate, cpu = s.bench_cpu(50, reads, p, ids, "zrevrank", "lb", "m:__rand_int__")
            out[(f"zrevrank_p{p}", "req/s")] = rate
            out[(f"zrevrank_p{p}_server_cpu", "µs")] = cpu
        return out
    finally:
        s.stop()


def scenario_evalsha(binary, work, quick):
    preload, ids, requests = (20_000, 20_000, 50_000) if quick else (100_000, 100_000, 200_000)
    s = Server(binary, work)
    try:
        s.bench(50, preload, 64, ids, "zadd", "lb", "__rand_int__", "m:__rand_int__")
        sha = s.cli("SCRIPT", "LOAD", LEADERBOARD_SCRIPT)
        out = {}
        for p in (1, 16):
            rate, cpu = s.bench_cpu(
                50, requests, p, ids, "EVALSHA", sha, "1", "lb", "m:__rand_int__", "__rand_int__")
            out[(f"evalsha_p{p}", "req/s")] = rate
            out[(f"evalsha_p{p}_server_cpu", "µs")] = cpu
        return out
    finally:
        s.stop()


def bench_records(driver, binary, work, args, keep=lambda r: True):
    """Runs `podium-bench --podium BINARY --json F ARGS` (the bench binary
    beside NEW) and returns its podium figures."""
    path = tempfile.mktemp(suffix=".json", dir=work)
    subprocess.run([driver, "--podium", binary, "--json", path, *args],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    with open(path) as f:
        records = json.load(f)
    os.unlink(path)
    return {(r["figure"], r["unit"]): r["podium"] for r in records
            if r.get("podium") is not None and keep(r)}


def scenario_rank10m(binary, work, quick, driver):
    members = "100k" if quick else "1M"
    return bench_records(driver, binary, work, ["rank10m", "--members", members, "--no-redis"])


def scenario_http_updates(binary, work, quick, driver):
    seconds = "3" if quick else "10"
    return bench_records(driver, binary, work, ["http-updates", "--no-redis", "--seconds", seconds])


def scenario_search_http(binary, work, quick, driver):
    members = "100k" if quick else "1M"
    return bench_records(driver, binary, work,
                         ["search", "--members", "10k", "--queries", "1k", "--http-members", members],
                         keep=lambda r: "http" in r["figure"])


def scenario_events(binary, work, quick, driver):
    extra = ["--members", "100k", "--watched", "10k", "--subscribers", "0,100"] if quick \
        else ["--subscribers", "0,1000"]
    return bench_records(driver, binary, work,
                         ["events", "--filters", "top", "--no-latency", "--no-redis", *extra])


def better_when(unit):
    """'higher', 'lower' or None, from a figure's unit."""
    if "/s" in unit:
        return "higher"
    if re.fullmatch(r"(ns|us|µs|ms|s|B|KB|MB|bytes|B/member|bytes/member|KB/subscriber|µs/write|us/write)", unit):
        return "lower"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="the older podium binary")
    ap.add_argument("--new", default="target/release/podium", help="the newer podium binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=",".join(SCENARIOS))
    ap.add_argument("--quick", action="store_true", help="small sizes, to try the tool")
    ap.add_argument("--json")
    a = ap.parse_args()

    old, new = os.path.abspath(a.baseline), os.path.abspath(a.new)
    for b in (old, new):
        if not os.access(b, os.X_OK):
            sys.exit(f"bench-compare: {b} is not an executable")
    chosen = [s.strip() for s in a.only.split(",") if s.strip()]
    for s in chosen:
        if s not in SCENARIOS:
            sys.exit(f"bench-compare: unknown scenario {s} ({', '.join(SCENARIOS)})")
    if {"resp", "evalsha"} & set(chosen) and not shutil.which("redis-benchmark"):
        sys.exit("bench-compare: resp and evalsha need redis-benchmark and redis-cli (redis-tools)")

    driver = os.path.join(os.path.dirname(new), "podium-bench")
    if set(chosen) - {"resp", "evalsha"} and not os.access(driver, os.X_OK):
        sys.exit(f"bench-compare: no podium-bench beside {new} (cargo build --release -p podium-bench)")
    runs = {
        "resp": lambda b, w: scenario_resp(b, w, a.quick),
        "evalsha": lambda b, w: scenario_evalsha(b, w, a.quick),
        "rank10m": lambda b, w: scenario_rank10m(b, w, a.quick, driver),
        "http-updates": lambda b, w: scenario_http_updates(b, w, a.quick, driver),
        "search-http": lambda b, w: scenario_search_http(b, w, a.quick, driver),
        "events": lambda b, w: scenario_events(b, w, a.quick, driver),
    }
    values = {}  # (scenario, figure, unit) -> {"old": [...], "new": [...]}
    work = tempfile.mkdtemp(prefix="podium-bench-compare-")
    try:
        for s in chosen:
            for r in range(a.rounds):
                order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
                for side, binary in order:
                    t = time.time()
                    figures = runs[s](binary, work)
                    print(f"  {s} round {r + 1} {side}: {len(figures)} figures in {time.time() - t:.0f} s",
                          file=sys.stderr)
                    for (figure, unit), v in figures.items():
                        values.setdefault((s, figure, unit), {"old": [], "new": []})[side].append(v)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    records = []
    print(f"| scenario | figure | unit | old (median) | new (median) | new/old | |")
    print("|---|---|---|---|---|---|---|")
    for (s, figure, unit), v in values.items():
        if not v["old"] or not v["new"]:
            continue
        mo, mn = statistics.median(v["old"]), statistics.median(v["new"])
        ratio = mn / mo if mo else None
        way = better_when(unit)
        verdict = ""
        if ratio is not None and way:
            gain = ratio if way == "higher" else 1 / ratio if ratio else None
            verdict = "better" if gain > 1.02 else "worse" if gain < 0.98 else "same"
        print(f"| {s} | {figure} | {unit} | {mo:,.2f} | {mn:,.2f} | "
              f"{'n/a' if ratio is None else f'{ratio:.3f}'} | {verdict} |")
        records.append({"scenario": s, "figure": figure, "unit": unit, "better": way,
                        "old": v["old"], "new": v["new"], "old_median": mo, "new_median": mn,
                        "ratio": ratio, "verdict": verdict or None})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"baseline": old, "new": new, "rounds": a.rounds, "quick": a.quick,
                       "figures": records}, f, indent=1)


if __name__ == "__main__":
    main()
