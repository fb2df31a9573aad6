"""A representative subset of the suite against `podium serve --backend
redis://…` on a redis-server of the tests' own: the same calls, the same
answers, whichever store holds the boards."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest
import test_async
import test_events
import test_rpc
import test_sync
from conftest import Server

from podium_client import AsyncClient, Client

#: test_sync's cases run on both stores.
CASES: List[Callable[..., None]] = [
    test_sync.test_server_routes,
    test_sync.test_boards,
    test_sync.test_submit_and_reads,
    test_sync.test_member_ids_are_percent_encoded,
    test_sync.test_members_named_dot_and_dot_dot,
    test_sync.test_submit_many,
    test_sync.test_removals_and_data,
    test_sync.test_reset_and_archives,
    test_sync.test_merge_intersect,
    test_sync.test_int64_round_trip,
    test_sync.test_import_export,
    test_sync.test_errors,
    test_events.test_events_every_change_and_resume,
    test_events.test_events_top_and_members,
    test_events.test_events_errors,
    test_rpc.test_import_over_rpc_matches_http,
]
#: test_async's cases run on both stores.
ASYNC_CASES: List[Callable[..., Any]] = [
    test_async.test_async_writes_and_reads,
    test_async.test_async_import_export,
    test_async.test_async_events,
    test_rpc.test_async_import_over_rpc,
]


@pytest.fixture
def rclient(redis_server: Server) -> Iterator[Client]:
    with Client(redis_server.url, rpc=redis_server.rpc) as c:
        yield c


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_on_the_redis_backend(case: Callable[..., None], rclient: Client, redis_server: Server, board: str,
                              tmp_path: Path) -> None:
    given = {"client": rclient, "server": redis_server, "board": board, "tmp_path": tmp_path}
    case(**{name: given[name] for name in inspect.signature(case).parameters})


@pytest.mark.parametrize("case", ASYNC_CASES, ids=[c.__name__ for c in ASYNC_CASES])
async def test_async_on_the_redis_backend(case: Callable[..., Any], redis_server: Server, board: str,
                                          tmp_path: Path) -> None:
    async with AsyncClient(redis_server.url, rpc=redis_server.rpc) as c:
        given = {"aclient": c, "server": redis_server, "board": board, "tmp_path": tmp_path}
        await case(**{name: given[name] for name in inspect.signature(case).parameters})
