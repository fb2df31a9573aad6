"""podium's MessagePack-RPC frontend driven by a client podium did not write:
the `msgpack` package's Packer and Unpacker over a plain socket, framing
requests as the MessagePack-RPC spec says ([0, msgid, method, params]).

Usage: msgpack_rpc_test.py HOST:PORT   (run by crates/server/tests/integration/rpc.rs)
"""

import math
import socket
import sys

import msgpack


class Rpc:
    """A generic MessagePack-RPC client: pipelined requests, answers matched
    by msgid (they may come in any order)."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.packer = msgpack.Packer(use_bin_type=True)
        self.unpacker = msgpack.Unpacker(raw=False, max_buffer_size=1 << 30)
        self.next_id = 0
        self.answers = {}
        # Live event notifications read while waiting for an answer.
        self.events = []

    def send(self, method, params):
        msgid = self.next_id
        self.next_id += 1
        self.sock.sendall(self.packer.pack([0, msgid, method, params]))
        return msgid

    def notify(self, method, params):
        self.sock.sendall(self.packer.pack([2, method, params]))

    def _read_one(self):
        while True:
            for msg in self.unpacker:
                return msg
            data = self.sock.recv(1 << 16)
            if not data:
                raise EOFError("server closed the connection")
            self.unpacker.feed(data)

    def wait(self, msgid):
        while msgid not in self.answers:
            msg = self._read_one()
            if msg[0] == 2:
                self.events.append(self._event(msg))
                continue
            kind, got, error, result = msg
            assert kind == 1, f"not a response: {kind}"
            assert got not in self.answers, f"msgid {got} answered twice"
            self.answers[got] = (error, result)
        return self.answers.pop(msgid)

    @staticmethod
    def _event(msg):
        kind, method, params = msg
        assert (kind, method) == (2, "event"), msg
        sub, event = params
        return sub, event

    def next_event(self):
        if self.events:
            return self.events.pop(0)
        return self._event(self._read_one())

    def call(self, method, *params):
        error, result = self.wait(self.send(method, list(params)))
        if error is not None:
            raise RuntimeError(f"{method}: {error}")
        return result


def main():
    rpc = Rpc(sys.argv[1])

    # Generic clients announce themselves with a notification: ignored.
    rpc.notify("client_hello", [{"name": "python-msgpack", "version": msgpack.version}])

    # Pipelined: every request sent before any answer is read.
    ids = [rpc.send("board_create", ["py", {"order": "desc", "ranking": "dense"}])]
    entries = [{"member": f"p{i:03}", "score": float(i % 50), "name": f"Player {i}"} for i in range(300)]
    ids.append(rpc.send("submit_many", ["py", entries]))
    ids.append(rpc.send("submit", ["py", {"member": "top", "score": math.inf, "data": {"team": "red"}}]))
    ids.append(rpc.send("rank", ["py", "top"]))
    ids.append(rpc.send("top", ["py", {"page_size": 5, "with_data": True}]))
    ids.append(rpc.send("nope", []))
    ids.append(rpc.send("rank", ["py", "nobody"]))
    ids.append(rpc.send("submit", ["py", {"member": "x", "score": math.nan}]))
    ids.append(rpc.send("count", ["py", {"min": 10, "max": "(20"}]))
    answers = [rpc.wait(i) for i in ids]

    err, board = answers[0]
    assert err is None and board["board"] == "py", answers[0]
    assert board["config"]["ranking"] == "dense", board
    err, many = answers[1]
    assert err is None and len(many["results"]) == 300, err
    err, sub = answers[2]
    assert err is None and sub["score"] == math.inf and sub["rank"] == 1, answers[2]
    err, rank = answers[3]
    assert err is None, err
    assert rank == {"board": "py", "ranking": "dense", "member": "top", "rank": 1, "score": math.inf}, rank
    err, top = answers[4]
    assert err is None and top["total"] == 301 and len(top["entries"]) == 5, answers[4]
    assert top["entries"][0]["data"] == {"team": "red"}, top["entries"][0]
    # Dense ranking: the six members scoring 49 share rank 2.
    assert [e["rank"] for e in top["entries"]] == [1, 2, 2, 2, 2], top["entries"]
    err, _ = answers[5]
    assert err == ["not_found", 'unknown method "nope"'], err
    err, _ = answers[6]
    assert err[0] == "member_not_found", err
    err, _ = answers[7]
    assert err[0] == "invalid_score", err
    err, count = answers[8]
    assert err is None and count == {"board": "py", "count": 60}, answers[8]

    # A notification that writes, then a read behind it on the same connection.
    rpc.notify("submit", ["py", {"member": "late", "score": -1}])
    assert rpc.call("score", "py", "late")["score"] == -1.0

    # export: every entry, best first, as one array.
    export = rpc.call("export", "py")
    assert len(export) == 302, len(export)
    assert export[0]["member"] == "top" and export[0]["score"] == math.inf, export[0]
    assert export[-1]["member"] == "late", export[-1]
    assert all(set(e) >= {"member", "score", "rank"} for e in export)

    # Round trip: export's entries import as they are.
    imp = rpc.call("import", "copy", export)
    assert imp["imported"] == 302 and imp["failed"] == 0, imp
    assert rpc.call("board_info", "copy")["members"] == 302

    # Live events: subscribe answers an id; the events follow as
    # notifications [2, "event", [id, event]], between the answers.
    sid = rpc.call("subscribe", "live", {"top": 2, "members": ["me"], "snapshot": True})
    assert isinstance(sid, int), sid
    rpc.call("submit", "live", {"member": "me", "score": 5})
    rpc.call("submit", "live", {"member": "a", "score": 9})
    got = []
    while not (got and got[-1]["type"] == "enter" and got[-1]["member"] == "a"):
        sub, event = rpc.next_event()
        assert sub == sid, (sub, sid)
        got.append(event)
    snap = got[0]
    assert list(snap)[:3] == ["id", "type", "board"], snap
    assert snap["type"] == "snapshot" and snap["exists"] is False, snap
    assert snap["members"] == [{"member": "me", "rank": None, "score": None}], snap
    enter = got[-1]
    assert enter["rank"] == 1 and isinstance(enter["rank"], int), got
    assert enter["score"] == 9.0, enter
    passed = [e for e in got if e["type"] == "member" and e["rank"] == 2]
    assert passed and passed[0]["by"] == "a" and passed[0]["previous_rank"] == 1, got
    ids = [tuple(map(int, e["id"].split("-"))) for e in got]
    assert ids[1:] == sorted(set(ids[1:])) and ids[0] < ids[1], ids
    assert rpc.call("unsubscribe", sid) is True
    assert rpc.call("unsubscribe", sid) is False

    print("msgpack-rpc OK")


if __name__ == "__main__":
    main()
