"""Bulk imports over MessagePack-RPC (``rpc=``): the same result as over
HTTP, failures at their position in the whole stream, sync and async."""

from __future__ import annotations

from typing import AsyncIterator, Dict, Iterator, List

import pytest
from conftest import Server

from podium_client import AsyncClient, Client, Submission, TransportError
from podium_client import _rpc

N = 25_000  # three import calls of up to 10,000


def records(n: int, bad: List[int]) -> Iterator[Dict[str, object]]:
    for i in range(n):
        score: object = "not a number" if i in bad else i
        yield {"member": f"m{i:06d}", "score": score}


def test_import_over_rpc_matches_http(server: Server, board: str) -> None:
    bad = [3, 10_004, 24_999]  # in the first, second and third call
    with Client(server.url, rpc=server.rpc) as c, Client(server.url) as h:
        over_rpc = c.import_records(board, records(N, bad))
        over_http = h.import_records(board + "-http", records(N, bad))
        assert (over_rpc.imported, over_rpc.failed) == (N - 3, 3)
        assert [(e.line, e.member, e.code) for e in over_rpc.errors] == \
            [(e.line, e.member, e.code) for e in over_http.errors] == \
            [(4, "m000003", "invalid_score"), (10_005, "m010004", "invalid_score"),
             (25_000, "m024999", "invalid_score")]
        assert c.count(board) == N - 3
        assert c.top(board, page_size=1).entries[0].member == "m024998"
        # Submissions with names, and integers beyond 2^53 exactly, on a board of an int key.
        c.put_board(board + "-int", sort=[{"key": "pts", "type": "int"}])
        big = 2**62 + 1
        res = c.import_records(board + "-int", [Submission("ann", scores={"pts": big}, name="Ann"),
                                                {"member": "bob", "scores": {"pts": -big}}])
        assert (res.imported, res.failed) == (2, 0)
        e = c.entry(board + "-int", "ann")
        assert (e.scores, e.name) == ({"pts": big}, "Ann")
        assert c.entry(board + "-int", "bob").scores == {"pts": -big}
        assert c.import_records(board, []).imported == 0


def test_refusals_and_unreachable_servers(server: Server, board: str) -> None:
    with Client(server.url, rpc=server.rpc) as c:
        c.put_board(board, sort=[{"key": "pts", "type": "int"}])
        res = c.import_records(board, [{"member": "a", "scores": {"pts": 1.5}}])
        assert (res.imported, res.failed) == (0, 1)
        with pytest.raises(TransportError):
            with Client(server.url, rpc=f"127.0.0.1:{_free_port()}") as dead:
                dead.import_records(board, [{"member": "a", "score": 1}])
    with pytest.raises(ValueError):
        Client(server.url, rpc="no-port")


async def test_async_import_over_rpc(server: Server, board: str) -> None:
    async def agen() -> AsyncIterator[Dict[str, object]]:
        for r in records(N, [20_000]):
            yield r

    async with AsyncClient(server.url, rpc=server.rpc) as c:
        res = await c.import_records(board, agen())
        assert (res.imported, res.failed) == (N - 1, 1)
        assert res.errors[0].line == 20_001
        res = await c.import_records(board + "-2", records(N, []))
        assert (res.imported, res.failed) == (N, 0)
        assert await c.count(board + "-2") == N


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_answers_out_of_order_keep_failures_in_stream_order() -> None:
    import msgpack  # type: ignore[import-untyped]

    b = _rpc.Batches("b", None)
    b.frame([{"member": "a", "score": 1}] * 3)
    b.frame([{"member": "a", "score": 1}] * 3)

    def answer(msgid: int, line: int) -> bytes:
        err = {"line": line, "member": "a", "error": {"code": "invalid_score", "message": "m"}}
        out: bytes = msgpack.packb([1, msgid, None, {"board": "b", "imported": 2, "failed": 1, "errors": [err]}])
        return out

    # The second call answered first (the Redis backend runs pipelined calls side by side).
    b.feed(answer(2, 1) + answer(1, 3))
    r = b.result()
    assert (r.imported, r.failed, b.pending) == (4, 2, 0)
    assert [e.line for e in r.errors] == [3, 4]
