"""Every method of AsyncClient against a real server (the same calls as test_sync)."""

from __future__ import annotations

import asyncio
import io
import math
from pathlib import Path
from typing import AsyncIterator

import httpx
import pytest

from podium_client import (
    AsyncClient, BoardNotFound, Conflict, MemberNotFound, SubmitFailure, SubmitResult, Submission, exclusive,
)


async def test_async_server_and_boards(aclient: AsyncClient, board: str) -> None:
    assert (await aclient.healthz())["status"] == "ok"
    assert "paths" in await aclient.openapi()
    assert "podium_boards" in await aclient.metrics()
    info = await aclient.put_board(board, {"order": "asc"}, ranking="dense")
    assert info.created and info.config["ranking"] == "dense"
    assert (await aclient.board_info(board)).config["order"] == "asc"
    assert board in [b.board for b in await aclient.boards()]
    assert (await aclient.resort_status(board)).running is False
    assert await aclient.delete_board(board)
    with pytest.raises(BoardNotFound):
        await aclient.board_info(board)


async def test_async_writes_and_reads(aclient: AsyncClient, board: str) -> None:
    c = aclient
    r = await c.submit(board, "ann", 10, name="Ann", data={"k": 1})
    assert r.created and r.rank == 1
    await c.submit(board, "bob", 20, op="set", only="new")
    await c.submit(board, "cy", 5, cond="gt")
    await c.submit(board, "top", math.inf)
    results = await c.submit_many(board, [Submission("dee", 1), {"member": "eve", "score": 2}])
    assert all(isinstance(x, SubmitResult) for x in results)
    page = await c.top(board, 1, 2, with_data=True)
    assert [e.member for e in page.entries] == ["top", "bob"] and page.total == 6
    assert (await c.rank(board, "ann")).rank == 3
    assert await c.score(board, "top") == math.inf
    info = await c.entry(board, "ann", page_size=2)
    assert info.data == {"k": 1} and info.page == 2
    assert (await c.around(board, "ann", 3, with_data=True)).entries[1].member == "ann"
    ranks = await c.ranks(board, ["ann", "zz"], with_data=True)
    assert ranks.missing == ["zz"] and ranks.entries[0].member == "ann"
    assert await c.count(board) == 6
    assert await c.count(board, exclusive(5), 20) == 2
    assert [e.member for e in (await c.range_by_rank(board, 1, 2, from_worst=True)).entries] == ["dee", "eve"]
    assert [e.member for e in (await c.range_by_score(board, 5, 10, offset=0, limit=5, with_data=True)).entries] == [
        "ann", "cy"]
    assert await c.percentile(board, "top") == 100.0
    at = await c.score_at_percentile(board, 100)
    assert at is not None and at.member == "top"
    assert (await c.search(board, "ann", limit=3, offset=0, with_data=True)).total == 1
    assert await c.set_data(board, "ann", {"k": 2}, name="Annie")
    assert await c.set_name(board, "ann", "Anne")
    got = await c.entry(board, "ann")
    assert (got.name, got.data) == ("Anne", {"k": 2})
    assert await c.remove(board, ["dee"]) == 1
    assert await c.remove_member(board, "eve") == 1
    assert await c.remove_range_by_rank(board, 1, 1) == 1
    assert await c.remove_range_by_score(board, None, 5) == 1
    with pytest.raises(MemberNotFound) as e:
        await c.rank(board, "cy")
    assert e.value.code == "member_not_found" and e.value.status == 404


async def test_async_batch_failure(aclient: AsyncClient, board: str) -> None:
    await aclient.put_board(board, max_submits_per_member={"count": 1, "per": 60})
    results = await aclient.submit_many(board, [Submission("a", 1), Submission("a", 2)])
    assert isinstance(results[1], SubmitFailure) and results[1].code == "rate_limited"


async def test_async_reset_merge_intersect(aclient: AsyncClient, board: str) -> None:
    c = aclient
    await c.submit_many(board + "-1", [Submission("a", 1), Submission("b", 2)])
    await c.submit_many(board + "-2", [Submission("b", 3)])
    assert await c.merge(board, [board + "-1", board + "-2"], aggregate="sum") == 2
    assert await c.intersect(board + "-i", [board + "-1", board + "-2"], weights=[2, 1]) == 1
    assert await c.score(board + "-i", "b") == 7.0
    res = await c.reset(board)
    assert res.archived == 2
    assert [a.board for a in await c.archives(board)] == [res.archive]
    with pytest.raises(Conflict):
        await c.submit(res.archive, "x", 1)


async def test_async_int64(aclient: AsyncClient, board: str) -> None:
    await aclient.put_board(board, sort=[{"key": "n", "type": "int"}])
    v = -(2**62) - 12345
    r = await aclient.submit(board, "a", scores={"n": v})
    assert r.scores == {"n": v}
    assert [e.scores for e in (await aclient.top(board)).entries] == [{"n": v}]


async def test_async_import_export(aclient: AsyncClient, board: str, tmp_path: Path) -> None:
    async def records() -> AsyncIterator[Submission]:
        for i in range(50):
            yield Submission(f"m{i}", i)
            await asyncio.sleep(0)

    assert (await aclient.import_records(board, records())).imported == 50
    assert (await aclient.import_records(board, [{"member": "x", "score": 100}])).imported == 1
    p = tmp_path / "a.csv"
    p.write_text("member,score\ny,200\n")
    assert (await aclient.import_file(board, p)).imported == 1
    assert (await aclient.import_file(board, io.BytesIO(b"z,300\n"), format="csv")).imported == 1
    members = [e.member async for e in aclient.export(board)]
    assert members[:4] == ["z", "y", "x", "m49"] and len(members) == 53
    out = tmp_path / "out.ndjson"
    assert await aclient.export_to_file(board, out) == 53
    assert (await aclient.import_file(board + "-copy", out)).imported == 53


async def test_async_events(aclient: AsyncClient, board: str) -> None:
    await aclient.submit(board, "a", 1)
    stream = aclient.events(board, top=5, snapshot=True)
    snap = await asyncio.wait_for(stream.__anext__(), 10)
    assert snap.type == "snapshot" and snap.top is not None and snap.top[0].member == "a"
    await aclient.submit(board, "b", 2)
    seen: "set[tuple[str, str]]" = set()
    while seen != {("enter", "b"), ("move", "a")}:
        e = await asyncio.wait_for(stream.__anext__(), 10)
        seen.add((e.type, e.member or ""))
    last = stream.last_event_id
    await stream.close()
    await aclient.submit(board, "c", 0)
    async with aclient.events(board, top=5, since=last) as resumed:
        e = await asyncio.wait_for(resumed.__anext__(), 10)
        assert (e.type, e.member, e.rank) == ("enter", "c", 3)
    async with aclient.events(board, members=["a"]) as m:
        task = asyncio.ensure_future(m.__anext__())
        await asyncio.sleep(0.2)
        await aclient.submit(board, "a", 5)
        e = await asyncio.wait_for(task, 10)
        assert (e.type, e.member, e.rank, e.previous_rank) == ("member", "a", 1, 2)


async def test_requests_beyond_max_in_flight_wait_in_the_client() -> None:
    now, most = 0, 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal now, most
        now += 1
        most = max(most, now)
        await asyncio.sleep(0.01)
        now -= 1
        return httpx.Response(200, json={"status": "ok"})

    for limit in (1, 3):
        most = 0
        async with AsyncClient("http://podium.test", transport=httpx.MockTransport(handler),
                               max_in_flight=limit) as c:
            await asyncio.gather(*(c.healthz() for _ in range(20)))
        assert most == limit
    with pytest.raises(ValueError):
        AsyncClient("http://podium.test", max_in_flight=0)
