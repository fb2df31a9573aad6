"""A 1M-entry import and its export through the client with bounded
memory: the client streams both ways, so its peak RSS (measured in a
process of its own) stays under 100 MB whatever the board's size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Server

N = 1_000_000


@pytest.mark.parametrize("transport", ["http", "rpc"])
def test_a_million_entries_in_and_out_in_bounded_memory(server: Server, board: str, transport: str) -> None:
    script = Path(__file__).with_name("bulk_rss.py")
    args = [sys.executable, str(script), server.url, board, str(N)]
    if transport == "rpc":
        args.append(server.rpc)
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=900)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert (r["imported"], r["failed"], r["exported"]) == (N, 0, N), r
    assert r["peak_rss_mb"] < 100, r
    print(f"{transport}: 1M import {r['import_s']:.1f} s, export {r['export_s']:.1f} s, "
          f"client peak RSS {r['peak_rss_mb']:.0f} MB")
