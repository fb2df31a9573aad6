"""A board's webhook delivers to a local receiver; the client checks its signature and parses it."""

from __future__ import annotations

import queue
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Dict, Tuple

import pytest

from podium_client import Client
from podium_client.webhooks import parse_delivery, sign, verify_signature

SECRET = "s3cret-s3cret-s3cret"


def test_webhook_delivery(client: Client, board: str) -> None:
    got: "queue.Queue[Tuple[bytes, Dict[str, str]]]" = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.put((body, {k.lower(): v for k, v in self.headers.items()}))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/hook"
        client.put_board(board, webhooks=[{"name": "h1", "url": url, "secret": SECRET, "top": 3}])
        assert "secret" not in client.board_info(board).config["webhooks"][0]
        client.submit(board, "ann", 5)
        body, headers = got.get(timeout=15)
        sig = headers.get("podium-signature")
        assert headers.get("podium-hook") == "h1"
        assert verify_signature(body, SECRET, sig)
        assert not verify_signature(body + b" ", SECRET, sig)
        assert not verify_signature(body, "another-secret-value", sig)
        assert sig == sign(body, SECRET.encode())
        d = parse_delivery(body, SECRET, sig)
        assert (d.board, d.hook) == (board, "h1")
        assert [(e.type, e.member, e.rank) for e in d.events if e.type == "enter"] == [("enter", "ann", 1)]
        with pytest.raises(ValueError):
            parse_delivery(body, SECRET, "sha256=00")
    finally:
        httpd.shutdown()
        client.delete_board(board)
