"""The Python client's rates against a running podium (clients/bench/run.sh):
submit one at a time (sync), 64 in flight (async), submit_many batches of
1,000, and a bulk import of N entries (over HTTP, then over MessagePack-RPC). Prints one JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Dict, Iterator, Optional

from podium_client import AsyncClient, Client

SECONDS = 5.0


def name(i: int) -> str:
    return f"player-{i:07d}"


def sync_submits(url: str) -> float:
    with Client(url) as c:
        n, end = 0, time.monotonic() + SECONDS
        t = time.monotonic()
        while time.monotonic() < end:
            c.submit("py-sync", name(n % 100_000), n)
            n += 1
        return n / (time.monotonic() - t)


async def async_submits(url: str, in_flight: int = 64) -> float:
    async with AsyncClient(url) as c:
        end = time.monotonic() + SECONDS
        done = 0

        async def worker(w: int) -> None:
            nonlocal done
            i = w
            while time.monotonic() < end:
                await c.submit("py-async", name(i % 100_000), i)
                done += 1
                i += in_flight

        t = time.monotonic()
        await asyncio.gather(*(worker(w) for w in range(in_flight)))
        return done / (time.monotonic() - t)


def batches(url: str, size: int = 1000) -> float:
    with Client(url) as c:
        n, end = 0, time.monotonic() + SECONDS
        t = time.monotonic()
        while time.monotonic() < end:
            c.submit_many("py-batch", [{"member": name((n + k) % 100_000), "score": n + k}
                                       for k in range(size)])
            n += size
        return n / (time.monotonic() - t)


def rows(n: int) -> Iterator[Dict[str, object]]:
    for i in range(n):
        yield {"member": name(i), "score": (i * 7919) % 1_000_003}


def bulk_import(url: str, n: int, rpc: Optional[str] = None) -> float:
    with Client(url, timeout=600, rpc=rpc) as c:
        t = time.monotonic()
        res = c.import_records("py-import-rpc" if rpc else "py-import", rows(n))
        assert res.imported == n, res
        return n / (time.monotonic() - t)


def main() -> None:
    url, n, rpc = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    print(json.dumps({
        "submit_sync": sync_submits(url),
        "submit_async_64": asyncio.run(async_submits(url)),
        "submit_many_1000": batches(url),
        "import": bulk_import(url, n),
        "import_rpc": bulk_import(url, n, rpc),
    }))


if __name__ == "__main__":
    main()
