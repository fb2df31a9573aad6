"""The synchronous client."""

from __future__ import annotations

import itertools
import json
import os
import socket
import threading
import time
from types import TracebackType
from typing import (
    IO, Any, Callable, Dict, Generator, Iterable, Iterator, List, Mapping, Optional, Sequence, Type, TypeVar, Union,
)

import httpx

from . import _ops as ops
from . import _rpc
from ._common import (
    DEFAULT_TIMEOUT, EVENTS_READ_TIMEOUT, backoff, default_api_key, default_base_url, default_rpc,
    error_from_response,
    is_retryable_status, shutdown_stream, transport_error, user_agent,
)
from ._errors import PodiumError, TransportError
from ._models import (
    Around, BoardInfo, BoardSummary, Entry, EntryInfo, Event, ImportResult, Page, Range, Rank, Ranks,
    ResetResult, ResortStatus, ScoreValue, SearchResult, SubmitFailure, SubmitResult, Submission,
)
from ._sse import SseParser

T = TypeVar("T")
PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]


class Client:
    """A podium server over HTTP/JSON, with pooled keep-alive connections.

    ``base_url`` defaults to ``$PODIUM_URL`` (else ``http://127.0.0.1:7070``),
    ``api_key`` to ``$PODIUM_API_KEY``. Reads (GET) are retried ``retries``
    times with exponential backoff on connection errors and 503 answers.
    ``rpc`` (default ``$PODIUM_RPC_ADDR``), the ``host:port`` of the server's
    MessagePack-RPC listener, sends ``import_records`` over it: several times
    faster from Python (needs ``pip install 'podium-client[rpc]'``).
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = 2,
        backoff_base: float = 0.1,
        transport: Optional[httpx.BaseTransport] = None,
        rpc: Optional[str] = None,
    ) -> None:
        self.base_url = (base_url or default_base_url()).rstrip("/")
        self.rpc = rpc if rpc is not None else default_rpc()
        if self.rpc:
            _rpc.require_msgpack()
            _rpc.parse_address(self.rpc)
        self.api_key = api_key if api_key is not None else default_api_key()
        self.timeout = timeout
        self.retries = retries
        self.backoff_base = backoff_base
        headers = {"User-Agent": user_agent(), "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout, transport=transport)

    # --- plumbing -------------------------------------------------------------

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def _request(self, method: str, path: str, *, params: Any = None, json_body: Any = None,
                 has_json: bool = False, content: Any = None, headers: Optional[Dict[str, str]] = None,
                 retry: Optional[bool] = None) -> httpx.Response:
        retry = (method == "GET") if retry is None else retry
        attempt = 0
        while True:
            try:
                if has_json:
                    resp = self._http.request(method, path, params=params, json=json_body, headers=headers)
                else:
                    resp = self._http.request(method, path, params=params, content=content, headers=headers)
            except httpx.TransportError as e:
                if retry and attempt < self.retries:
                    time.sleep(backoff(self.backoff_base, attempt))
                    attempt += 1
                    continue
                raise transport_error(e) from e
            if resp.status_code >= 400:
                if retry and is_retryable_status(resp.status_code) and attempt < self.retries:
                    time.sleep(backoff(self.backoff_base, attempt))
                    attempt += 1
                    continue
                raise error_from_response(resp)
            return resp

    def _run(self, call: "ops.Call[T]") -> T:
        resp = self._request(call.method, call.path, params=call.params, json_body=call.json,
                             has_json=call.has_json)
        return call.parse(resp.json())

    # --- server -----------------------------------------------------------------

    def healthz(self) -> Dict[str, Any]:
        """``{"status": "ok", "backend": ..., "version": ..., "commit": ...}`` while the server and its storage are up."""
        return self._run(ops.healthz())

    def readyz(self) -> Dict[str, Any]:
        """``{"status": "ready"}`` while the server serves; :class:`Unavailable` (``not_ready``) while it
        recovers its data or shuts down."""
        return self._run(ops.readyz())

    def key_info(self) -> Dict[str, Any]:
        """``{"keys": bool, "scope": "read"|"write"|"admin"}``: the scope of this client's key
        (``admin`` on a server without keys)."""
        return self._run(ops.key_info())

    def openapi(self) -> Dict[str, Any]:
        """The server's OpenAPI document."""
        return self._run(ops.openapi())

    def metrics(self) -> str:
        """The Prometheus metrics text."""
        return self._request("GET", "/metrics").text

    # --- boards -------------------------------------------------------------------

    def boards(self) -> List[BoardSummary]:
        """Every board, archives included."""
        return self._run(ops.boards())

    def archives(self, board: str) -> List[BoardSummary]:
        """The archives a board's resets made."""
        return self._run(ops.archives(board))

    def board_info(self, board: str) -> BoardInfo:
        """A board's size and config."""
        return self._run(ops.board_info(board))

    def put_board(self, board: str, config: Optional[Mapping[str, Any]] = None, *,
                  confirm_rerank: bool = False, **fields: Any) -> BoardInfo:
        """Create a board with this config, or replace its whole config (``created`` tells which).

        The config is a mapping of the fields of docs/spec.md §1 (``order``,
        ``ranking``, ``update``, ``sort``, ...); keyword arguments add to it.
        A field left out takes its default, on an existing board too: to
        change some fields and keep the others, use :meth:`patch_board`. A
        change that re-ranks an existing board (``order``, ``ranking``,
        ``tiebreak``, ``sort``) raises :class:`Conflict`
        (``confirm_rerank_required``) unless ``confirm_rerank=True``.
        """
        return self._run(ops.put_board(board, config, fields, confirm_rerank))

    def patch_board(self, board: str, patch: Optional[Mapping[str, Any]] = None, *,
                    confirm_rerank: bool = False, **fields: Any) -> BoardInfo:
        """Change the config fields named and keep the others (HTTP PATCH, a JSON merge patch).

        ``patch_board("weekly", keep_archives=8)``; a field set to ``None``
        goes back to its default. A change that re-ranks the board raises
        :class:`Conflict` (``confirm_rerank_required``) unless
        ``confirm_rerank=True``; a missing board raises :class:`BoardNotFound`.
        """
        return self._run(ops.patch_board(board, patch, fields, confirm_rerank))

    def delete_board(self, board: str) -> bool:
        """Delete a board."""
        return self._run(ops.delete_board(board))

    def reset(self, board: str) -> ResetResult:
        """Archive the board now and empty it."""
        return self._run(ops.reset(board))

    def merge(self, board: str, sources: Sequence[str], *, weights: Optional[Sequence[float]] = None,
              aggregate: Optional[str] = None) -> int:
        """Union of boards into ``board`` (aggregate sum, min or max); its new size."""
        return self._run(ops.combine("merge", board, sources, weights, aggregate))

    def intersect(self, board: str, sources: Sequence[str], *, weights: Optional[Sequence[float]] = None,
                  aggregate: Optional[str] = None) -> int:
        """Intersection of boards into ``board``; its new size."""
        return self._run(ops.combine("intersect", board, sources, weights, aggregate))

    def resort_status(self, board: str) -> ResortStatus:
        """How far a re-ranking reconfiguration has gone."""
        return self._run(ops.resort_status(board))

    # --- writes ---------------------------------------------------------------------

    def submit(self, board: str, member: str, score: Optional[ScoreValue] = None, *,
               scores: Optional[Mapping[str, ScoreValue]] = None, name: Optional[str] = None,
               data: Optional[Mapping[str, Any]] = None, op: Optional[str] = None,
               only: Optional[str] = None, cond: Optional[str] = None) -> SubmitResult:
        """Submit one score (or, on a board with sort keys, ``scores``).

        ``op`` (set, best, incr) overrides the board's update; ``only`` is
        ``new`` or ``existing``; ``cond`` is ``gt`` or ``lt``.
        """
        return self._run(ops.submit(board, Submission(member, score, scores, name, data, op, only, cond)))

    def submit_many(self, board: str, entries: Iterable[ops.SubmissionLike]
                    ) -> List[Union[SubmitResult, SubmitFailure]]:
        """Submit a batch in order, one durable commit; each entry answers its result or its own error."""
        return self._run(ops.submit_many(board, entries))

    def remove(self, board: str, members: Sequence[str]) -> int:
        """Remove members; how many were there."""
        return self._run(ops.remove(board, members))

    def remove_member(self, board: str, member: str) -> int:
        """Remove one member (``MemberNotFound`` if it was not there)."""
        return self._run(ops.remove_member(board, member))

    def remove_range_by_rank(self, board: str, start: int, stop: int) -> int:
        """Remove the entries at ranks start..=stop."""
        return self._run(ops.remove_range_by_rank(board, start, stop))

    def remove_range_by_score(self, board: str, min: Optional[ScoreValue] = None,
                              max: Optional[ScoreValue] = None) -> int:
        """Remove the entries scored between min and max (None: no bound)."""
        return self._run(ops.remove_range_by_score(board, min, max))

    def set_data(self, board: str, member: str, data: Optional[Mapping[str, Any]] = None, *,
                 name: Optional[str] = None) -> bool:
        """Set a member's data (replacing it; ``{}`` empties it) and/or display name ("" clears it); None leaves a field as it is."""
        return self._run(ops.set_data(board, member, data, name))

    def set_name(self, board: str, member: str, name: str) -> bool:
        """Set a member's display name ("" clears it)."""
        return self._run(ops.set_data(board, member, None, name))

    # --- reads ----------------------------------------------------------------------

    def top(self, board: str, page: int = 1, page_size: Optional[int] = None, *,
            with_data: bool = False) -> Page:
        """Page ``page`` of the board, best first."""
        return self._run(ops.top(board, page, page_size, with_data))

    def rank(self, board: str, member: str) -> Rank:
        """A member's rank and score."""
        return self._run(ops.rank(board, member))

    def score(self, board: str, member: str) -> float:
        """A member's score."""
        return self._run(ops.rank(board, member)).score

    def entry(self, board: str, member: str, *, page_size: Optional[int] = None) -> EntryInfo:
        """A member's rank, score, name, data, percentile and page."""
        return self._run(ops.entry(board, member, page_size))

    def around(self, board: str, member: str, page_size: Optional[int] = None, *,
               with_data: bool = False) -> Around:
        """The page centred on a member."""
        return self._run(ops.around(board, member, page_size, with_data))

    def ranks(self, board: str, members: Sequence[str], *, with_data: bool = False) -> Ranks:
        """Ranks of a list of members (e.g. friends), best first, and the missing ones."""
        return self._run(ops.ranks(board, members, with_data))

    def count(self, board: str, min: Optional[ScoreValue] = None, max: Optional[ScoreValue] = None) -> int:
        """Members, all or scored between min and max."""
        return self._run(ops.count(board, min, max))

    def range_by_rank(self, board: str, start: int, stop: int, *, from_worst: bool = False,
                      with_data: bool = False) -> Range:
        """The entries at ranks start..=stop (counted from the worst end with ``from_worst``)."""
        return self._run(ops.range_by_rank(board, start, stop, from_worst, with_data))

    def range_by_score(self, board: str, min: Optional[ScoreValue] = None, max: Optional[ScoreValue] = None, *,
                       offset: Optional[int] = None, limit: Optional[int] = None, from_worst: bool = False,
                       with_data: bool = False) -> Range:
        """Entries scored between min and max (``exclusive(x)`` for an open bound)."""
        return self._run(ops.range_by_score(board, min, max, offset, limit, from_worst, with_data))

    def percentile(self, board: str, member: str) -> float:
        """The share of the board (0-100) the member is at least as good as."""
        return self._run(ops.percentile(board, member))

    def score_at_percentile(self, board: str, p: float) -> Optional[Entry]:
        """The entry at percentile p (0-100); None on an empty board."""
        return self._run(ops.score_at_percentile(board, p))

    def search(self, board: str, q: str, *, limit: Optional[int] = None, offset: Optional[int] = None,
               with_data: bool = False) -> SearchResult:
        """Find members by name (docs/spec.md §3)."""
        return self._run(ops.search(board, q, limit, offset, with_data))

    # --- import and export ------------------------------------------------------------

    def import_file(self, board: str, source: PathOrFile, *, format: Optional[str] = None) -> ImportResult:
        """Bulk load from an NDJSON or CSV file (a path or a binary file), streamed.

        The format defaults to csv for a path ending in .csv, else ndjson.
        """
        if isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            fmt = format or ops.guess_format(path)
            with open(path, "rb") as f:
                return self._import(board, _file_chunks(f), fmt)
        return self._import(board, _file_chunks(source), format or "ndjson")

    def import_records(self, board: str, records: Iterable[ops.SubmissionLike]) -> ImportResult:
        """Bulk load from submissions (``Submission`` or dicts), streamed as NDJSON
        (as MessagePack-RPC ``import`` calls when the client has an ``rpc`` address)."""
        if self.rpc:
            return self._import_rpc(board, records)
        return self._import(board, ops.record_chunks(records), "ndjson")

    def _import_rpc(self, board: str, records: Iterable[ops.SubmissionLike]) -> ImportResult:
        batches = _rpc.Batches(board, self.api_key)
        it = iter(records)
        try:
            with socket.create_connection(_rpc.parse_address(self.rpc or ""), timeout=self.timeout) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                auth = batches.auth_frame()
                if auth is not None:
                    s.sendall(auth)
                while True:
                    chunk = list(itertools.islice(it, _rpc.BATCH))
                    if not chunk:
                        break
                    s.sendall(batches.frame(chunk))
                    while batches.pending >= _rpc.IN_FLIGHT:
                        batches.feed(s.recv(1 << 16))
                while batches.pending:
                    batches.feed(s.recv(1 << 16))
        except OSError as e:
            raise TransportError(f"MessagePack-RPC {self.rpc}: {e}") from e
        return batches.result()

    def _import(self, board: str, chunks: Iterator[bytes], fmt: str) -> ImportResult:
        resp = self._request("POST", ops.board_path(board, "import"), params=ops.import_params(fmt),
                             content=chunks, headers={"Content-Type": ops.import_content_type(fmt)}, retry=False)
        return ops.parse_import(resp.json())

    def export(self, board: str) -> Iterator[Entry]:
        """Every entry, best first, streamed."""
        with self._http.stream("GET", ops.board_path(board, "export")) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise error_from_response(resp)
            try:
                for line in resp.iter_lines():
                    e = ops.parse_export_line(line.encode())
                    if e is not None:
                        yield e
            except httpx.TransportError as err:
                raise transport_error(err) from err

    def backup_to_file(self, dest: PathOrFile) -> int:
        """Write a consistent copy of the server's data directory (an admin key) to a path or a binary
        file, as the tar stream ``GET /v1/backup`` sends (the files, then ``MANIFEST.json`` with their
        sizes and SHA-256; ``podium restore`` checks and restores it once unpacked); how many bytes."""
        return _write_to(dest, self._backup_raw)

    def _backup_raw(self, out: IO[bytes]) -> int:
        written = 0
        with self._http.stream("GET", "/v1/backup") as resp:
            if resp.status_code >= 400:
                resp.read()
                raise error_from_response(resp)
            try:
                for chunk in resp.iter_bytes():
                    out.write(chunk)
                    written += len(chunk)
            except httpx.TransportError as err:
                raise transport_error(err) from err
        return written

    def export_to_file(self, board: str, dest: PathOrFile) -> int:
        """Write the board's NDJSON export to a path or a binary file; how many entries."""
        return _write_to(dest, lambda f: self._export_raw(board, f))

    def _export_raw(self, board: str, out: IO[bytes]) -> int:
        lines = 0
        with self._http.stream("GET", ops.board_path(board, "export")) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise error_from_response(resp)
            try:
                for chunk in resp.iter_bytes():
                    out.write(chunk)
                    lines += chunk.count(b"\n")
            except httpx.TransportError as err:
                raise transport_error(err) from err
        return lines

    # --- live events --------------------------------------------------------------------

    def events(self, board: str, *, top: Optional[int] = None, members: Optional[Sequence[str]] = None,
               snapshot: bool = False, since: Optional[str] = None, reconnect: bool = True,
               max_reconnect_delay: float = 5.0, max_attempts: Optional[int] = None) -> "EventStream":
        """Subscribe to a board's live events (Server-Sent Events).

        The stream reconnects by itself when the connection drops (or the
        server restarts) and resumes after the last event received
        (``Last-Event-ID``): the events in between follow with no gap while
        the server keeps them, else a ``reload`` event (and, with a filter,
        a snapshot) says to read the state again. ``max_attempts`` bounds
        consecutive failed reconnections (None: no bound).
        """
        return EventStream(self, board, top, members, snapshot, since, reconnect, max_reconnect_delay, max_attempts)


def _file_chunks(f: IO[bytes], size: int = 64 * 1024) -> Iterator[bytes]:
    while True:
        chunk = f.read(size)
        if not chunk:
            return
        yield chunk


class EventStream(Iterator[Event]):
    """An iterator of a board's live events; ``last_event_id`` is the id to resume after."""

    def __init__(self, client: Client, board: str, top: Optional[int], members: Optional[Sequence[str]],
                 snapshot: bool, since: Optional[str], reconnect: bool, max_delay: float,
                 max_attempts: Optional[int]) -> None:
        self.board = board
        self.last_event_id: Optional[str] = since
        self.reconnects = 0
        self._client = client
        self._top = top
        self._members = list(members) if members is not None else None
        self._snapshot = snapshot
        self._reconnect = reconnect
        self._max_delay = max_delay
        self._max_attempts = max_attempts
        self._closed = False
        self._wake = threading.Event()
        self._resp: Optional[httpx.Response] = None
        self._gen: Generator[Event, None, None] = self._run()

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Event:
        return next(self._gen)

    def close(self) -> None:
        """End the subscription and its connection (from any thread)."""
        self._closed = True
        self._wake.set()
        resp = self._resp
        if resp is not None:
            shutdown_stream(resp)  # wakes a reader blocked on another thread or task
            try:
                resp.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        try:
            self._gen.close()
        except ValueError:
            pass  # iterated on another thread: it ends at its next step

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def _run(self) -> Generator[Event, None, None]:
        c = self._client
        failures = 0
        first = True
        while not self._closed:
            headers: Dict[str, str] = {"Accept": "text/event-stream"}
            if self.last_event_id is not None:
                headers["Last-Event-ID"] = self.last_event_id
            # A snapshot is asked for once: a resume that cannot continue sends its own.
            params = ops.events_params(self._top, self._members, self._snapshot and first, None)
            timeout = httpx.Timeout(c.timeout, read=EVENTS_READ_TIMEOUT)
            error: Optional[BaseException] = None
            try:
                with c._http.stream("GET", ops.board_path(self.board, "events"), params=params,
                                    headers=headers, timeout=timeout) as resp:
                    self._resp = resp
                    if resp.status_code >= 400:
                        resp.read()
                        err = error_from_response(resp)
                        if not is_retryable_status(resp.status_code):
                            raise err
                        error = err
                    else:
                        first = False
                        parser = SseParser()
                        buf = ""
                        for text in resp.iter_text():
                            buf += text
                            *lines, buf = buf.split("\n")
                            for line in lines:
                                msg = parser.feed(line[:-1] if line.endswith("\r") else line)
                                if msg is None:
                                    continue
                                if msg.id:
                                    self.last_event_id = msg.id
                                failures = 0  # backoff starts over once a stream delivers
                                yield Event.from_json(json.loads(msg.data))
            except Exception as e:
                if self._closed:
                    return
                if not isinstance(e, httpx.TransportError):
                    raise
                error = e
            finally:
                self._resp = None
            if self._closed:
                return
            if not self._reconnect:
                if error is not None and not isinstance(error, PodiumError):
                    raise transport_error(error)
                if isinstance(error, PodiumError):
                    raise error
                return
            failures += 1
            if self._max_attempts is not None and failures > self._max_attempts:
                if isinstance(error, PodiumError):
                    raise error
                raise transport_error(error) if error is not None else PodiumError(
                    "transport", "the event stream ended")
            self.reconnects += 1
            self._wake.wait(min(self._max_delay, backoff(0.05, failures - 1)))


def _write_to(dest: PathOrFile, write: Callable[[IO[bytes]], int]) -> int:
    """Runs `write` on the binary file `dest`, or on the file at the path `dest` (created)."""
    if isinstance(dest, (str, os.PathLike)):
        with open(os.fspath(dest), "wb") as f:
            return write(f)
    return write(dest)
