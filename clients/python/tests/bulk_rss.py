"""A bulk import and export through the client in a process of its own,
for test_bulk.py: imports N generated entries (streamed as NDJSON, or as
MessagePack-RPC batches when an RPC address is given; never held), exports the board back entry by entry, and prints one JSON line
with the counts, the seconds each took and the process's peak RSS."""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Dict, Iterator

from podium_client import Client


def rows(n: int) -> Iterator[Dict[str, object]]:
    for i in range(n):
        yield {"member": f"player-{i:07d}", "score": (i * 7919) % 1_000_003}


def main() -> None:
    url, board, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rpc = sys.argv[4] if len(sys.argv) > 4 else None
    with Client(url, timeout=600, rpc=rpc) as c:
        t = time.monotonic()
        res = c.import_records(board, rows(n))
        imported_s = time.monotonic() - t
        t = time.monotonic()
        exported = sum(1 for _ in c.export(board))
        exported_s = time.monotonic() - t
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "imported": res.imported, "failed": res.failed, "import_s": imported_s,
        "exported": exported, "export_s": exported_s, "peak_rss_mb": peak_kb / 1024,
    }))


if __name__ == "__main__":
    main()
