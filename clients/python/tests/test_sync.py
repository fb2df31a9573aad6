"""Every method of Client against a real server."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from podium_client import _ops as ops
from podium_client import (
    BoardNotFound, Client, Conflict, InvalidRequest, MemberNotFound, PodiumError, SubmitFailure,
    SubmitResult, Submission, exclusive,
)


def test_server_routes(client: Client) -> None:
    assert client.healthz()["status"] == "ok"
    assert "/v1/boards/{board}/top" in client.openapi()["paths"]
    assert "podium_boards" in client.metrics()


def test_boards(client: Client, board: str) -> None:
    info = client.put_board(board, {"order": "asc", "ranking": "dense"}, search_fields=["name"])
    assert info.created is True and info.config["order"] == "asc" and info.config["ranking"] == "dense"
    with pytest.raises(Conflict) as c:
        client.put_board(board, {"order": "asc", "ranking": "competition"})
    assert c.value.code == "confirm_rerank_required" and c.value.status == 409
    again = client.put_board(board, {"order": "asc", "ranking": "competition"}, confirm_rerank=True)
    assert again.created is False
    patched = client.patch_board(board, keep_archives=8)
    assert patched.config["keep_archives"] == 8 and patched.config["ranking"] == "competition"
    assert patched.config["order"] == "asc"
    assert client.patch_board(board, {"keep_archives": None}).config["keep_archives"] is None
    with pytest.raises(Conflict):
        client.patch_board(board, order="desc")
    assert client.patch_board(board, order="desc", confirm_rerank=True).config["order"] == "desc"
    with pytest.raises(ValueError):
        client.patch_board(board)
    got = client.board_info(board)
    assert got.board == board and got.members == 0 and not got.read_only
    assert got.config["ranking"] == "competition"
    assert board in [b.board for b in client.boards()]
    assert client.resort_status(board).running is False
    assert client.delete_board(board) is True
    with pytest.raises(BoardNotFound) as e:
        client.board_info(board)
    assert e.value.code == "board_not_found" and e.value.status == 404


def test_submit_and_reads(client: Client, board: str) -> None:
    r = client.submit(board, "ann", 10, name="Ann Lee", data={"country": "fr"})
    assert isinstance(r, SubmitResult) and r.created and r.rank == 1 and r.score == 10.0
    client.submit(board, "bob", 20)
    client.submit(board, "cy", 5)
    r = client.submit(board, "cy", 3, op="best")
    assert not r.applied and r.score == 5.0
    r = client.submit(board, "cy", 2, op="incr")
    assert r.score == 7.0 and r.previous == 5.0
    assert not client.submit(board, "dee", 1, only="existing").applied
    assert not client.submit(board, "bob", 15, cond="gt").applied
    assert client.submit(board, "bob", 25, cond="gt").score == 25.0
    r = client.submit(board, "inf", float("inf"))
    assert r.score == math.inf and r.rank == 1

    page = client.top(board, page_size=2, with_data=True)
    assert page.total == 4 and page.total_pages == 2 and page.page == 1 and page.ranking == "unique"
    assert [e.member for e in page.entries] == ["inf", "bob"]
    assert [e.member for e in client.top(board, 2, 2, with_data=True).entries] == ["ann", "cy"]
    assert client.top(board, 2, 2, with_data=True).entries[0].data == {"country": "fr"}

    assert client.rank(board, "ann").rank == 3
    assert client.score(board, "bob") == 25.0
    info = client.entry(board, "ann", page_size=2)
    assert (info.rank, info.page, info.name, info.data) == (3, 2, "Ann Lee", {"country": "fr"})
    assert client.around(board, "ann", 3).entries[1].member == "ann"
    ranks = client.ranks(board, ["cy", "ann", "nobody"], with_data=True)
    assert [e.member for e in ranks.entries] == ["ann", "cy"] and ranks.missing == ["nobody"]
    assert client.count(board) == 4
    assert client.count(board, 7, 25) == 3
    assert client.count(board, exclusive(7), None) == 3
    by_rank = client.range_by_rank(board, 2, 3)
    assert [e.member for e in by_rank.entries] == ["bob", "ann"]
    assert [e.member for e in client.range_by_rank(board, 1, 2, from_worst=True).entries] == ["cy", "ann"]
    by_score = client.range_by_score(board, 5, 30, limit=1, offset=1)
    assert [e.member for e in by_score.entries] == ["ann"]
    assert [e.member for e in client.range_by_score(board, from_worst=True, with_data=True).entries] == [
        "cy", "ann", "bob", "inf"]
    assert client.percentile(board, "inf") == 100.0
    at = client.score_at_percentile(board, 100)
    assert at is not None and at.member == "inf"
    found = client.search(board, "ann", limit=5, offset=0, with_data=True)
    assert [e.member for e in found.entries] == ["ann"] and found.total == 1


def test_member_ids_are_percent_encoded(client: Client, board: str) -> None:
    member = "a/b c?d#e%f@ü"
    client.submit(board, member, 1)
    assert client.rank(board, member).member == member
    assert client.entry(board, member).member == member
    assert client.remove_member(board, member) == 1


def test_members_named_dot_and_dot_dot(client: Client, board: str) -> None:
    # Dot segments to every URL parser (httpx drops them from a path): the
    # client names these two in the query.
    client.submit_many(board, [Submission(".", 3), Submission("..", 2), Submission("x", 1)])
    for member, rank in ((".", 1), ("..", 2)):
        assert client.set_data(board, member, {"dots": len(member)}, name="Dot")
        info = client.entry(board, member)
        assert (info.member, info.rank, info.name, info.data) == (member, rank, "Dot", {"dots": len(member)})
        assert client.rank(board, member).rank == rank and client.score(board, member) == 4 - rank
        assert 0 < client.percentile(board, member) <= 100
        around = client.around(board, member, 3, with_data=True)
        assert around.rank == rank and [e.member for e in around.entries] == [".", "..", "x"]
        assert around.entries[rank - 1].data == {"dots": len(member)}
    assert client.percentile(board, ".") == 100
    for member in (".", ".."):
        assert client.remove_member(board, member) == 1
        with pytest.raises(MemberNotFound):
            client.rank(board, member)
        with pytest.raises(MemberNotFound):
            client.remove_member(board, member)
    assert [e.member for e in client.top(board).entries] == ["x"]
    # Only those two: any other id keeps the readable path.
    dots = ops.rank(board, "..")
    assert (dots.path, dots.params) == (f"/v1/boards/{board}/rank", {"member": ".."})
    x = ops.around(board, "x", 3, False)
    assert (x.path, x.params) == (f"/v1/boards/{board}/around/x", {"page_size": 3})


def test_submit_many(client: Client, board: str) -> None:
    client.put_board(board, max_submits_per_member={"count": 1, "per": "1m"})
    results = client.submit_many(board, [
        Submission("a", 1, name="A"),
        {"member": "b", "score": 2},
        {"member": "a", "score": 3},
        Submission("d", float("-inf")),
    ])
    assert isinstance(results[0], SubmitResult) and results[0].created
    assert isinstance(results[2], SubmitFailure) and results[2].code == "rate_limited"
    assert isinstance(results[3], SubmitResult) and results[3].score == -math.inf
    assert client.count(board) == 3


def test_removals_and_data(client: Client, board: str) -> None:
    client.submit_many(board, [Submission(m, s) for m, s in zip("abcdefg", range(1, 8))])
    assert client.remove(board, ["a", "zz"]) == 1
    assert client.remove_member(board, "b") == 1
    assert client.remove_range_by_rank(board, 1, 1) == 1  # g
    assert client.remove_range_by_score(board, 3, exclusive(5)) == 2  # c, d
    assert [e.member for e in client.top(board).entries] == ["f", "e"]
    assert client.set_data(board, "e", {"x": 1}, name="Eve") is True
    assert client.entry(board, "e").data == {"x": 1}
    assert client.set_name(board, "e", "Eva") is True
    info = client.entry(board, "e")
    assert info.name == "Eva" and info.data == {"x": 1}
    assert client.set_data(board, "e", {}) is True
    assert client.entry(board, "e").data == {}
    with pytest.raises(MemberNotFound):
        client.set_name(board, "nobody", "x")


def test_reset_and_archives(client: Client, board: str) -> None:
    client.submit(board, "a", 1)
    res = client.reset(board)
    assert res.archived == 1 and res.archive.startswith(board + "@")
    assert client.count(board) == 0
    archives = client.archives(board)
    assert [a.board for a in archives] == [res.archive]
    assert client.board_info(res.archive).read_only
    assert client.top(res.archive).entries[0].member == "a"
    with pytest.raises(Conflict) as e:
        client.submit(res.archive, "b", 1)
    assert e.value.code == "read_only"


def test_merge_intersect(client: Client, board: str) -> None:
    s1, s2 = board + "-1", board + "-2"
    client.submit_many(s1, [Submission("a", 1), Submission("b", 2)])
    client.submit_many(s2, [Submission("b", 10), Submission("c", 3)])
    assert client.merge(board + "-u", [s1, s2]) == 3
    assert client.score(board + "-u", "b") == 12.0
    assert client.intersect(board + "-i", [s1, s2], weights=[1, 2], aggregate="max") == 1
    assert client.score(board + "-i", "b") == 20.0


def test_int64_round_trip(client: Client, board: str) -> None:
    client.put_board(board, sort=[{"key": "pts", "type": "int"}, {"key": "t", "order": "asc"}])
    big = 2**63 - 1
    beyond = 2**53 + 1
    r = client.submit(board, "a", scores={"pts": beyond, "t": 1.5})
    assert r.scores == {"pts": beyond, "t": 1.5}
    client.submit(board, "b", scores={"pts": big, "t": 2})
    client.submit(board, "c", scores={"pts": -(2**63), "t": 0})
    top = client.top(board)
    assert [(e.member, e.scores) for e in top.entries] == [
        ("b", {"pts": big, "t": 2.0}), ("a", {"pts": beyond, "t": 1.5}), ("c", {"pts": -(2**63), "t": 0.0})]
    assert isinstance(top.entries[0].scores and top.entries[0].scores["pts"], int)
    assert client.count(board, beyond, None) == 2
    assert client.count(board, beyond + 1, None) == 1
    assert [e.member for e in client.range_by_score(board, beyond, beyond).entries] == ["a"]
    r = client.submit(board, "a", scores={"pts": 1}, op="incr")
    assert r.scores is not None and r.scores["pts"] == beyond + 1
    exported = list(client.export(board))
    assert exported[1].scores == {"pts": beyond + 1, "t": 1.5}


def test_import_export(client: Client, board: str, tmp_path: Path) -> None:
    csv = tmp_path / "in.csv"
    csv.write_text("member,score,name\nann,3,Ann\nbob,zz\ncy,1\n")
    res = client.import_file(board, csv)
    assert (res.imported, res.failed) == (2, 1)
    assert res.errors[0].line == 3 and res.errors[0].code == "invalid_score"
    res = client.import_file(board, io.BytesIO(b'{"member":"dee","score":2}\n'), format="ndjson")
    assert res.imported == 1
    res = client.import_records(board, ({"member": f"m{i}", "score": i} for i in range(100, 1100)))
    assert res.imported == 1000
    res = client.import_records(board, [Submission("eve", 2.5, name="Eve")])
    assert res.imported == 1 and client.entry(board, "eve").name == "Eve"

    entries = list(client.export(board))
    assert len(entries) == 1004 and entries[0].member == "m1099" and entries[-1].member == "cy"
    out = tmp_path / "out.ndjson"
    assert client.export_to_file(board, out) == 1004
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["member"] == "m1099"
    buf = io.BytesIO()
    assert client.export_to_file(board, buf) == 1004
    # an export imports back as it was
    copy = board + "-copy"
    assert client.import_file(copy, out).imported == 1004
    assert [e.member for e in client.export(copy)] == [e.member for e in entries]


def test_errors(client: Client, board: str) -> None:
    with pytest.raises(BoardNotFound):
        client.top(board)
    client.submit(board, "a", 1)
    with pytest.raises(MemberNotFound) as e:
        client.rank(board, "nobody")
    assert (e.value.code, e.value.status) == ("member_not_found", 404)
    assert "nobody" in e.value.message
    with pytest.raises(PodiumError) as e2:
        client.remove_member(board, "nobody")
    assert e2.value.code == "member_not_found"
    with pytest.raises(InvalidRequest) as e3:
        client.submit(board, "a", "not-a-number")
    assert e3.value.code == "invalid_score" and e3.value.status == 400
    with pytest.raises(ValueError):
        client.submit(board, "a", float("nan"))
    with pytest.raises(InvalidRequest) as e4:
        client.put_board(board, {"order": "sideways"})
    assert e4.value.status == 400


def test_readyz_and_a_backup_that_matches_its_manifest(client: Client, tmp_path: Path) -> None:
    import hashlib
    import tarfile

    assert client.readyz() == {"status": "ready"}
    client.submit("backup-board", "ann", 5)
    dest = tmp_path / "backup.tar"
    written = client.backup_to_file(dest)
    assert written == dest.stat().st_size > 0
    with tarfile.open(dest) as tar:
        names = tar.getnames()
        assert names[-1] == "MANIFEST.json", names
        manifest = json.load(tar.extractfile("MANIFEST.json"))  # type: ignore[arg-type]
        assert manifest["format"] == "podium-backup"
        for f in manifest["files"]:
            data = tar.extractfile(f["name"]).read()  # type: ignore[union-attr]
            assert (len(data), hashlib.sha256(data).hexdigest()) == (f["bytes"], f["sha256"])
