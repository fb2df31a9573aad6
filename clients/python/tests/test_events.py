"""Live events: typed events, resume after an id, and a subscription that survives a server restart."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

from conftest import Server, free_port

from podium_client import Client, Event, EventStream, Submission


class Collector:
    """Reads an event stream on a thread so a test can wait for events with a timeout."""

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream
        self.events: "queue.Queue[Event]" = queue.Queue()
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for e in self.stream:
                self.events.put(e)
        except BaseException as err:  # noqa: BLE001 - reported by next()
            self.error = err

    def next(self, timeout: float = 10.0) -> Event:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no event within {timeout} s (stream error: {self.error!r})") from None

    def until(self, type_: str, timeout: float = 15.0) -> List[Event]:
        """Events up to and including the first of that type."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            e = self.next(max(0.1, deadline - time.monotonic()))
            got.append(e)
            if e.type == type_:
                return got


    def until_all(self, wanted: "set[tuple[str, str]]", timeout: float = 15.0) -> List[Event]:
        """Events until every (type, member) wanted has come."""
        got = []
        deadline = time.monotonic() + timeout
        left = set(wanted)
        while left:
            e = self.next(max(0.1, deadline - time.monotonic()))
            got.append(e)
            left.discard((e.type, e.member or ""))
        return got


def test_events_every_change_and_resume(client: Client, board: str) -> None:
    client.put_board(board)
    col = Collector(client.events(board, snapshot=True))
    first = col.next()
    assert first.type in ("snapshot", "reload") or first.type
    client.submit(board, "a", 1, name="Ann")
    e = col.until("change")[-1]
    assert (e.type, e.board, e.member, e.rank, e.score, e.name) == ("change", board, "a", 1, 1.0, "Ann")
    last = e.id
    assert col.stream.last_event_id == last
    col.stream.close()

    # writes made while nobody listens on this filter... but it is kept: resume gives them with no gap
    client.submit(board, "b", 2)
    client.remove_member(board, "a")
    with client.events(board, since=last) as resumed:
        got = [next(resumed), next(resumed)]
    assert [(g.type, g.member) for g in got] == [("change", "b"), ("change", "a")]
    assert got[1].removed is True
    assert [g.id for g in got] == sorted([g.id for g in got], key=lambda i: tuple(map(int, i.split("-"))))


def test_events_top_and_members(client: Client, board: str) -> None:
    client.submit_many(board, [Submission("a", 3), Submission("b", 2)])
    col = Collector(client.events(board, top=2, snapshot=True))
    snap = col.next()
    assert snap.type == "snapshot" and snap.exists is True and snap.size == 2
    assert snap.top is not None and [x.member for x in snap.top] == ["a", "b"]
    mcol = Collector(client.events(board, members=["b", "ghost,with,commas"], snapshot=True))
    msnap = mcol.next()
    assert msnap.type == "snapshot" and msnap.members is not None
    assert [(m.member, m.rank, m.score) for m in msnap.members] == [("b", 2, 2.0), ("ghost,with,commas", None, None)]
    client.submit(board, "c", 5)
    evs = col.until_all({("enter", "c"), ("leave", "b"), ("move", "a")})
    assert evs[0].type == "leave"  # each write's leaves come first
    m = mcol.until("member")[-1]
    assert (m.member, m.rank, m.previous_rank, m.by) == ("b", 3, 2, "c")
    col.stream.close()
    mcol.stream.close()


def apply(state: Dict[str, int], e: Event) -> None:
    """Keeps a top-N view from a top filter's events."""
    if e.type == "snapshot":
        state.clear()
        for x in e.top or []:
            state[x.member] = x.rank
    elif e.type in ("enter", "move"):
        assert e.member is not None and e.rank is not None
        state[e.member] = e.rank
    elif e.type == "leave":
        assert e.member is not None
        state.pop(e.member, None)


def test_events_survive_a_server_restart(tmp_path: Path) -> None:
    srv = Server(tmp_path / "data", port=free_port()).start()
    board = "restart"
    try:
        c = Client(srv.url, retries=5)
        c.submit(board, "a", 1)
        stream = c.events(board, top=10, snapshot=True, max_reconnect_delay=0.2)
        col = Collector(stream)
        state: Dict[str, int] = {}
        apply(state, col.next())
        assert state == {"a": 1}
        c.submit(board, "b", 2)
        for e in col.until("move"):
            apply(state, e)
        assert state == {"b": 1, "a": 2}
        before = stream.last_event_id
        assert before is not None

        srv.kill()  # kill -9: no goodbye to the subscriber
        srv.start()  # the same data dir and port
        assert stream.last_event_id == before

        # A write right after the restart, maybe before the stream is back: the
        # subscriber sees it either as its own events (the resume continues
        # with no gap) or as a reload and a snapshot holding it (the restart
        # kept no events to resume from); never a state without it.
        c.submit(board, "c", 3)
        expected = {"c": 1, "b": 2, "a": 3}
        deadline = time.monotonic() + 20
        while state != expected:
            e = col.next(max(0.1, deadline - time.monotonic()))
            if e.type == "reload":
                assert e.after == before
            apply(state, e)
        assert stream.reconnects >= 1
        assert state == {m.member: m.rank for m in c.top(board).entries}

        c.submit(board, "d", 4)
        for e in col.until_all({("enter", "d"), ("move", "a")}):
            apply(state, e)
        assert state == {m.member: m.rank for m in c.top(board).entries} == {"d": 1, "c": 2, "b": 3, "a": 4}
        ids = [tuple(map(int, i.split("-"))) for i in (before, stream.last_event_id or "")]
        assert ids[1] > ids[0]  # ids keep growing across the restart
        stream.close()
        c.close()
    finally:
        srv.stop()


async def test_async_events_survive_a_server_restart(tmp_path: Path) -> None:
    import asyncio

    from podium_client import AsyncClient

    srv = Server(tmp_path / "data", port=free_port()).start()
    try:
        async with AsyncClient(srv.url) as c:
            await c.submit("b", "a", 1)
            stream = c.events("b", members=["a"], snapshot=True, max_reconnect_delay=0.2)
            snap = await asyncio.wait_for(stream.__anext__(), 10)
            assert snap.type == "snapshot" and snap.members is not None
            assert [m.member for m in snap.members] == ["a"]
            await c.submit("b", "a", 2)
            e = await asyncio.wait_for(stream.__anext__(), 10)
            assert (e.type, e.score, e.previous_score) == ("member", 2.0, 1.0)
            before = stream.last_event_id

            srv.kill()
            srv.start()
            await c.submit("b", "a", 3)  # maybe before the stream is back: no gap either way
            score: float = 2.0
            while score != 3.0:
                e = await asyncio.wait_for(stream.__anext__(), 20)
                if e.type == "reload":
                    assert e.after == before
                elif e.type == "snapshot":
                    assert e.members is not None and e.members[0].score is not None
                    score = e.members[0].score
                elif e.type == "member":
                    assert e.previous_score == score
                    assert e.score is not None
                    score = e.score
            await c.submit("b", "a", 4)
            e = await asyncio.wait_for(stream.__anext__(), 10)
            assert (e.type, e.score, e.previous_score) == ("member", 4.0, 3.0)
            assert stream.reconnects >= 1
            await stream.close()
    finally:
        srv.stop()


def test_events_errors(client: Client, board: str) -> None:
    import pytest

    from podium_client import InvalidRequest, TransportError

    client.submit(board, "a", 1)
    with pytest.raises(InvalidRequest) as e:
        next(client.events(board, top=0))  # refused before the stream starts: not retried
    assert e.value.status == 400
    with Client(f"http://127.0.0.1:{free_port()}") as nowhere:
        t = time.monotonic()
        with pytest.raises(TransportError):
            next(nowhere.events(board, max_attempts=2, max_reconnect_delay=0.05))
        assert time.monotonic() - t < 5
        with pytest.raises(TransportError):
            next(nowhere.events(board, reconnect=False))
