"""Bulk loads over the server's MessagePack-RPC listener (docs/rpc.md).

Encoding a million records as NDJSON costs Python a ``json.dumps`` each;
MessagePack packs a whole batch in C. So when a client is given the RPC
address (``rpc="host:port"``), ``import_records`` sends its records as
``import`` calls of ``BATCH`` records, ``IN_FLIGHT`` of them pipelined on one
connection, and adds up the answers into one ``ImportResult`` as the HTTP
import reports it (error ``line`` = 1-based position in the whole stream, at
most ``MAX_ERRORS`` listed). The protocol state lives in ``Batches``; the
sync and async clients only move its bytes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import _ops as ops
from ._errors import PodiumError, TransportError, error_from
from ._models import ImportError_, ImportResult

#: Records per ``import`` call (the CLI's batch).
BATCH = 10_000
#: Calls sent before the first answer is awaited: the server works on one
#: while the next is packed and sent.
IN_FLIGHT = 4
#: Errors kept in the result, as the HTTP import keeps.
MAX_ERRORS = 100

try:  # msgpack is optional: ``pip install podium-client[rpc]``.
    import msgpack as _msgpack  # type: ignore[import-untyped]  # (msgpack ships no type hints)
except ImportError:  # pragma: no cover - exercised only without the extra
    _msgpack = None


def require_msgpack() -> Any:
    if _msgpack is None:
        raise ImportError("rpc= needs the msgpack package: pip install 'podium-client[rpc]'")
    return _msgpack


def parse_address(rpc: str) -> Tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) of the RPC listener."""
    host, sep, port = rpc.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"rpc address must be host:port, got {rpc!r}")
    return host.strip("[]"), int(port)


class Batches:
    """One import's calls and answers: records in, frames out, answers in, a result out."""

    def __init__(self, board: str, api_key: Optional[str]) -> None:
        mp = require_msgpack()
        self.board = board
        self._packer = mp.Packer()
        self.unpacker = mp.Unpacker(raw=False)
        self._api_key = api_key
        self._next_id = 0
        # msgid -> 1-based position of the call's first record.
        self._first_line: Dict[int, int] = {}
        self._sent = 0
        self.imported = 0
        self.failed = 0
        self.errors: List[ImportError_] = []

    @property
    def pending(self) -> int:
        """Calls sent and not yet answered."""
        return len(self._first_line)

    def auth_frame(self) -> Optional[bytes]:
        """The ``auth`` call to send first, when the client has an API key."""
        if not self._api_key:
            return None
        self._next_id += 1
        self._first_line[self._next_id] = -1
        frame: bytes = self._packer.pack([0, self._next_id, "auth", [self._api_key]])
        return frame

    def frame(self, chunk: List[ops.SubmissionLike]) -> bytes:
        """The ``import`` call of ``chunk`` (at most ``BATCH`` records), counted as pending."""
        records = [ops.submission_json(r) for r in chunk]
        self._next_id += 1
        self._first_line[self._next_id] = self._sent + 1
        self._sent += len(records)
        frame: bytes = self._packer.pack([0, self._next_id, "import", [self.board, records, {}]])
        return frame

    def feed(self, data: bytes) -> None:
        """Takes in the answers in ``data`` (raising the first failure)."""
        if not data:
            raise closed_early()
        self.unpacker.feed(data)
        for msg in self.unpacker:
            if not (isinstance(msg, list) and len(msg) == 4 and msg[0] == 1):
                raise TransportError(f"unexpected MessagePack-RPC message: {msg!r:.200}")
            _, msgid, err, result = msg
            first = self._first_line.pop(msgid, None)
            if first is None:
                raise TransportError(f"answer to an unknown call {msgid}")
            if err is not None:
                code, message = (list(err) + ["", ""])[:2] if isinstance(err, list) else ("rpc_error", err)
                raise error_from(str(code), str(message), None)
            if first > 0:
                self._add(first, result)

    def _add(self, first: int, result: Any) -> None:
        self.imported += int(result["imported"])
        self.failed += int(result["failed"])
        for e in result.get("errors", []):
            err = e["error"]
            self.errors.append(ImportError_(first + int(e["line"]) - 1, e.get("member"), err["code"],
                                            err["message"]))
        # Pipelined calls may be answered out of order (the Redis backend
        # runs them side by side): the first MAX_ERRORS by position are kept.
        self.errors.sort(key=lambda x: x.line)
        del self.errors[MAX_ERRORS:]

    def result(self) -> ImportResult:
        return ImportResult(self.board, self.imported, self.failed, self.errors)


def closed_early() -> PodiumError:
    return TransportError("the RPC connection closed before every answer arrived")
