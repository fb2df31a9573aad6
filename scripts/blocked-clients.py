#!/usr/bin/env python3
"""Memory per client blocked in BZPOPMAX, and who a push wakes.

Opens CLIENTS connections to a Redis-protocol server, each blocked in
`BZPOPMAX bz:I 0` on a key of its own, plus SHARED connections blocked one
after another on `bz:shared`. Reads the server's resident memory (VmRSS in
/proc/PID/status) before the connections open and once all are blocked,
and prints the growth per blocked client. Then pushes one member to one
client's own key and one to the shared key, and checks that exactly the
right client woke each time (the only one on its key; the first blocked on
the shared key) with Redis's reply, and that every other stays blocked.

    scripts/blocked-clients.py --port PORT --pid PID [--clients 10000] [--shared 5]

Prints one line of `name=value` fields (rss_before, rss_after,
bytes_per_client, wake) for scripts/redis-bench-ops.sh and exits 0; exits 1
with the reason when a check fails, 2 when the server has no BZPOPMAX.
Standard library only: raw RESP over asyncio streams.
"""

import argparse
import asyncio
import resource
import sys
import time


def command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


async def read_reply(reader):
    """One RESP2 reply as bytes (the whole frame), enough for what is used here."""
    line = await reader.readuntil(b"\r\n")
    kind = line[:1]
    if kind in (b"+", b"-", b":"):
        return line
    if kind == b"$":
        n = int(line[1:-2])
        return line if n < 0 else line + await reader.readexactly(n + 2)
    if kind == b"*":
        n = int(line[1:-2])
        parts = [line]
        for _ in range(max(n, 0)):
            parts.append(await read_reply(reader))
        return b"".join(parts)
    raise ValueError("not RESP2: %r" % line)


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS for pid %d" % pid)


class Control:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    async def call(self, *args):
        self.writer.write(command(*args))
        await self.writer.drain()
        return await read_reply(self.reader)

    async def blocked(self):
        """INFO's blocked_clients, or None when the server does not count them."""
        info = await self.call("INFO", "clients")
        for line in info.split(b"\r\n"):
            if line.startswith(b"blocked_clients:"):
                return int(line.split(b":")[1])
        return None


async def wait_blocked(ctl, want, timeout):
    """Waits until the server counts `want` blocked clients; when it never
    does (a server that does not count them), waits `timeout` and goes on."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await ctl.blocked() == want:
            return True
        await asyncio.sleep(0.02)
    return False


async def connect(host, port):
    for attempt in range(50):
        try:
            return await asyncio.open_connection(host, port, limit=1 << 16)
        except OSError:
            # A full accept queue: the server is still accepting the last batch.
            await asyncio.sleep(0.05 * (attempt + 1))
    raise RuntimeError("cannot connect to %s:%d" % (host, port))


async def nothing_arrives(conns, within):
    """The connections (reader, writer) on which no byte arrives within `within` s."""
    tasks = [asyncio.ensure_future(r.read(1)) for r, _ in conns]
    done, pending = await asyncio.wait(tasks, timeout=within)
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return [i for i, t in enumerate(tasks) if t in done]


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True, help="the server's process id")
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--shared", type=int, default=5)
    a = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.clients + a.shared + 64
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(need, soft), hard), hard))
        if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < need:
            sys.exit("need %d file descriptors, the limit is %d (ulimit -n)" % (need, hard))

    ctl = Control(*await connect(a.host, a.port))
    await ctl.call("DEL", "bz:shared", *("bz:%d" % i for i in range(a.clients)))
    # A non-blocking probe: an unknown command means no blocking pops yet.
    probe = await ctl.call("BZPOPMAX", "bz:probe", "0.01")
    if probe.startswith(b"-"):
        print("BZPOPMAX not supported: %s" % probe.decode(errors="replace").strip(),
              file=sys.stderr)
        sys.exit(2)
    base = await ctl.blocked() or 0
    time.sleep(0.5)
    before = rss_bytes(a.pid)

    own = []
    for start in range(0, a.clients, 500):
        batch = await asyncio.gather(*(connect(a.host, a.port)
                                       for _ in range(start, min(start + 500, a.clients))))
        for i, (r, w) in enumerate(batch, start):
            w.write(command("BZPOPMAX", "bz:%d" % i, "0"))
        await asyncio.gather(*(w.drain() for _, w in batch))
        own.extend(batch)
    counted = await wait_blocked(ctl, base + a.clients, 60)
    # One after another on the shared key: the order of blocking is the
    # order of service.
    shared = []
    for j in range(a.shared):
        r, w = await connect(a.host, a.port)
        w.write(command("BZPOPMAX", "bz:shared", "0"))
        await w.drain()
        shared.append((r, w))
        if counted:
            await wait_blocked(ctl, base + a.clients + j + 1, 10)
        else:
            await asyncio.sleep(0.1)
    if not counted:
        await asyncio.sleep(2)
    time.sleep(1)
    after = rss_bytes(a.pid)
    total = a.clients + a.shared

    # One member on one client's own key: that client, and only it, wakes.
    k = a.clients // 2
    if (await ctl.call("ZADD", "bz:%d" % k, "7", "solo")) != b":1\r\n":
        sys.exit("ZADD bz:%d failed" % k)
    got = await asyncio.wait_for(read_reply(own[k][0]), 10)
    if got != command("bz:%d" % k, "solo", "7"):
        sys.exit("client %d woke with %r" % (k, got))
    # Then the shared key: the first blocked on it, and only it, wakes.
    if (await ctl.call("ZADD", "bz:shared", "1", "m")) != b":1\r\n":
        sys.exit("ZADD bz:shared failed")
    got = await asyncio.wait_for(read_reply(shared[0][0]), 10)
    if got != command("bz:shared", "m", "1"):
        sys.exit("the first client on bz:shared woke with %r" % got)
    rest = own[:k] + own[k + 1:] + shared[1:]
    woke = await nothing_arrives(rest, 1.0)
    if woke:
        sys.exit("%d other clients got a reply (the first: #%d)" % (len(woke), woke[0]))
    still = await ctl.blocked()
    if still is not None and counted and still != base + total - 2:
        sys.exit("blocked_clients is %d after two wake-ups, %d expected"
                 % (still, base + total - 2))
    if (await ctl.call("ZCARD", "bz:shared")) != b":0\r\n":
        sys.exit("the popped member is still on bz:shared")

    for _, w in own + shared:
        w.close()
    ctl.writer.close()
    print("clients=%d rss_before=%d rss_after=%d bytes_per_client=%.0f wake=ok blocked_counted=%s"
          % (total, before, after, (after - before) / total, "yes" if counted else "no"))


if __name__ == "__main__":
    asyncio.run(main())
