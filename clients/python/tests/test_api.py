"""The client covers the server's routes; both clients offer the same methods; auth and retries."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Dict, List

import httpx
import pytest

from conftest import Server

from podium_client import AsyncClient, Client, Forbidden, PodiumError, TransportError, Unauthorized, Unavailable

# Each operation of /openapi.json, by operationId, and the client methods that perform it.
OPERATIONS: Dict[str, List[str]] = {
    "healthz": ["healthz"],
    "readyz": ["readyz"],
    "backup": ["backup_to_file"],
    "key_info": ["key_info"],
    "metrics": ["metrics"],
    "openapi": ["openapi"],
    "boards": ["boards", "archives"],
    "board_delete": ["delete_board"],
    "board_info": ["board_info"],
    "board_put": ["put_board"],
    "board_patch": ["patch_board"],
    "around": ["around"],
    "count": ["count"],
    "subscribe": ["events"],
    "export": ["export", "export_to_file"],
    "import": ["import_file", "import_records"],
    "intersect": ["intersect"],
    "remove_member": ["remove_member"],
    "entry": ["entry"],
    "set_data": ["set_data", "set_name"],
    "merge": ["merge"],
    "percentile": ["percentile"],
    "remove_range_by_rank": ["remove_range_by_rank"],
    "remove_range_by_score": ["remove_range_by_score"],
    "range_by_rank": ["range_by_rank"],
    "range_by_score": ["range_by_score"],
    "rank": ["rank", "score"],
    "ranks": ["ranks"],
    "remove": ["remove"],
    "reset": ["reset"],
    "resort_status": ["resort_status"],
    "score_at_percentile": ["score_at_percentile"],
    "submit": ["submit", "submit_many"],
    "search": ["search"],
    "top": ["top"],
    # The member in the query: what these methods send for "." and "..".
    "entry_by_query": ["entry"],
    "set_data_by_query": ["set_data", "set_name"],
    "remove_member_by_query": ["remove_member"],
    "rank_by_query": ["rank", "score"],
    "percentile_by_query": ["percentile"],
    "around_by_query": ["around"],
}


def public_methods(cls: type) -> Dict[str, inspect.Signature]:
    return {n: inspect.signature(f) for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}


def test_every_route_has_a_method(client: Client) -> None:
    ops = {o["operationId"] for path in client.openapi()["paths"].values() for m, o in path.items()
           if isinstance(o, dict) and "operationId" in o}
    assert ops == set(OPERATIONS), "routes of /openapi.json the client does not know (or no longer exist)"
    methods = public_methods(Client)
    for names in OPERATIONS.values():
        for n in names:
            assert n in methods


def test_async_client_has_the_same_methods() -> None:
    sync, asyn = public_methods(Client), public_methods(AsyncClient)
    assert set(sync) == set(asyn)
    for name, sig in sync.items():
        assert list(sig.parameters) == list(asyn[name].parameters), name
        for p, q in zip(sig.parameters.values(), asyn[name].parameters.values()):
            assert (p.kind, p.default) == (q.kind, q.default), (name, p.name)
        if name not in ("close",):
            assert inspect.iscoroutinefunction(getattr(AsyncClient, name)) or name in ("events", "export"), name


def test_env_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODIUM_URL", "http://127.0.0.1:1/")
    monkeypatch.setenv("PODIUM_API_KEY", "k" * 16)
    c = Client()
    assert c.base_url == "http://127.0.0.1:1" and c.api_key == "k" * 16
    c.close()
    monkeypatch.delenv("PODIUM_URL")
    monkeypatch.delenv("PODIUM_API_KEY")
    c = Client()
    assert c.base_url == "http://127.0.0.1:7070" and c.api_key is None
    c.close()


def test_env_rpc_address_has_one_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    from podium_client._common import default_rpc
    monkeypatch.delenv("PODIUM_RPC", raising=False)
    monkeypatch.setenv("PODIUM_RPC_ADDR", "127.0.0.1:7071")
    assert default_rpc() == "127.0.0.1:7071"
    monkeypatch.delenv("PODIUM_RPC_ADDR")
    assert default_rpc() is None
    # The old spelling is still read, with a deprecation warning.
    monkeypatch.setenv("PODIUM_RPC", "127.0.0.1:7072")
    with pytest.warns(DeprecationWarning, match="PODIUM_RPC_ADDR"):
        assert default_rpc() == "127.0.0.1:7072"


def test_reads_are_retried_on_503_writes_are_not() -> None:
    calls: List[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(req.method)
        if len(calls) < 3:
            return httpx.Response(503, json={"error": {"code": "storage_unavailable", "message": "down"}})
        return httpx.Response(200, json={"board": "b", "count": 7})

    c = Client("http://podium.test", retries=3, backoff_base=0.001, transport=httpx.MockTransport(handler))
    assert c.count("b") == 7 and calls == ["GET"] * 3
    calls.clear()
    with pytest.raises(Unavailable) as e:
        c.submit("b", "m", 1)
    assert calls == ["POST"] and e.value.code == "storage_unavailable" and e.value.status == 503


def test_connection_errors() -> None:
    attempts: List[int] = []

    def handler(req: httpx.Request) -> httpx.Response:
        attempts.append(1)
        raise httpx.ConnectError("refused", request=req)

    c = Client("http://podium.test", retries=2, backoff_base=0.001, transport=httpx.MockTransport(handler))
    with pytest.raises(TransportError) as e:
        c.top("b")
    assert len(attempts) == 3 and e.value.code == "transport" and isinstance(e.value, PodiumError)


def test_api_keys(tmp_path: Path) -> None:
    read, write, admin = "r" * 20, "w" * 20, "a" * 20
    srv = Server(tmp_path / "data", api_keys=[f"{read}:read", f"{write}:write", f"{admin}:admin"]).start()
    try:
        with Client(srv.url, admin) as a, Client(srv.url, write) as w, Client(srv.url, read) as r, \
                Client(srv.url, api_key="") as anon:
            assert anon.healthz()["status"] == "ok"  # open
            with pytest.raises(Unauthorized) as e:
                anon.boards()
            assert (e.value.code, e.value.status) == ("unauthorized", 401)
            with pytest.raises(Unauthorized):
                Client(srv.url, "x" * 20).boards()
            assert [c.key_info()["scope"] for c in (r, w, a)] == ["read", "write", "admin"]
            with pytest.raises(Unauthorized):
                anon.key_info()
            a.put_board("b")
            w.submit("b", "ann", 1)
            assert r.top("b").entries[0].member == "ann"
            with pytest.raises(Forbidden) as f:
                r.submit("b", "bob", 2)
            assert (f.value.code, f.value.status) == ("forbidden", 403)
            with pytest.raises(Forbidden):
                w.reset("b")
            with pytest.raises(Forbidden):
                r.import_records("b", [{"member": "x", "score": 1}])
            # The same keys over MessagePack-RPC.
            with Client(srv.url, read, rpc=srv.rpc) as rr, Client(srv.url, write, rpc=srv.rpc) as wr, \
                    Client(srv.url, api_key="", rpc=srv.rpc) as anon_rpc:
                with pytest.raises(Forbidden):
                    rr.import_records("b", [{"member": "x", "score": 1}])
                with pytest.raises(Unauthorized):
                    anon_rpc.import_records("b", [{"member": "x", "score": 1}])
                assert wr.import_records("b", [{"member": "y", "score": 1}]).imported == 1
                w.remove("b", ["y"])
            with r.events("b", snapshot=True) as s:
                assert next(s).type == "snapshot"
            with pytest.raises(Unauthorized):
                next(iter(anon.events("b")))
            assert r.count("b") == 1
    finally:
        srv.stop()


async def test_async_api_keys(tmp_path: Path) -> None:
    read = "r" * 20
    srv = Server(tmp_path / "data", api_keys=[f"{read}:read"]).start()
    try:
        async with AsyncClient(srv.url, read) as r:
            with pytest.raises(Forbidden):
                await r.submit("b", "x", 1)
            with pytest.raises(PodiumError) as e:
                await r.top("b")
            assert e.value.code == "board_not_found"
    finally:
        srv.stop()


def test_example_program(server: Server, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"
    env = dict(os.environ, PODIUM_URL=server.url)
    env.pop("PODIUM_API_KEY", None)
    out = subprocess.run([sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "1. Bea" in out.stdout
    json.dumps(out.stdout)
