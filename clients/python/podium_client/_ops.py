"""Each operation as a request and the parse of its answer, shared by both clients."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import (
    Any, Callable, Dict, Generic, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union,
)
from urllib.parse import quote

from ._errors import error_from
from ._models import (
    Around, BoardInfo, BoardSummary, Entry, EntryInfo, ImportResult, Page, Range, Rank, Ranks,
    ResetResult, ResortStatus, ScoreValue, SearchResult, SubmitFailure, SubmitResult, Submission,
    encode_bound, encode_score, encode_scores,
)

T = TypeVar("T")
Params = Dict[str, Union[str, int, float, List[str]]]
SubmissionLike = Union[Submission, Mapping[str, Any]]
Config = Mapping[str, Any]


@dataclass
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    params: Optional[Params] = None
    json: Any = None
    has_json: bool = False


def seg(value: str) -> str:
    """A path segment, percent-encoded ('/' as %2F)."""
    return quote(value, safe="")


def board_path(board: str, *rest: str) -> str:
    return "/v1/boards/" + seg(board) + "".join("/" + r for r in rest)


def member_route(board: str, route: str, member: str, params: Optional[Params] = None) -> Tuple[str, Params]:
    """A member's route (members, rank, percentile, around): the member as a path segment, or in the
    query for "." and "..", dot segments that URL parsers (httpx's too) drop from a path (the server
    answers both forms alike; the path keeps other URLs readable)."""
    params = dict(params or {})
    if member in (".", ".."):
        params["member"] = member
        return board_path(board, route), params
    return board_path(board, route, seg(member)), params


def submission_json(s: SubmissionLike) -> Dict[str, Any]:
    if isinstance(s, Submission):
        return s.to_json()
    d = dict(s)
    if "score" in d and d["score"] is not None:
        d["score"] = encode_score(d["score"])
    if "scores" in d and d["scores"] is not None:
        d["scores"] = encode_scores(d["scores"])
    return d


def _flag(v: bool) -> str:
    return "true" if v else "false"


# --- boards -------------------------------------------------------------------


def healthz() -> Call[Dict[str, Any]]:
    return Call("GET", "/healthz", dict)


def readyz() -> Call[Dict[str, Any]]:
    return Call("GET", "/readyz", dict)


def key_info() -> Call[Dict[str, Any]]:
    return Call("GET", "/v1/key", dict)


def openapi() -> Call[Dict[str, Any]]:
    return Call("GET", "/openapi.json", dict)


def boards() -> Call[List[BoardSummary]]:
    return Call("GET", "/v1/boards", lambda d: [BoardSummary.from_json(b) for b in d["boards"]])


def archives(board: str) -> Call[List[BoardSummary]]:
    return Call(
        "GET", "/v1/boards",
        lambda d: [s for s in (BoardSummary.from_json(b) for b in d["boards"]) if s.archive_of == board],
    )


def board_info(board: str) -> Call[BoardInfo]:
    return Call("GET", board_path(board), BoardInfo.from_json)


def _config_body(config: Optional[Config], fields: Mapping[str, Any], confirm_rerank: bool) -> Dict[str, Any]:
    body: Dict[str, Any] = dict(config or {})
    body.update(fields)
    for k in ("min_score", "max_score"):
        if body.get(k) is not None:
            body[k] = encode_score(body[k])
    if confirm_rerank:
        body["confirm_rerank"] = True
    return body


def put_board(board: str, config: Optional[Config], fields: Mapping[str, Any],
              confirm_rerank: bool = False) -> Call[BoardInfo]:
    body = _config_body(config, fields, confirm_rerank)
    return Call("PUT", board_path(board), BoardInfo.from_json, json=body, has_json=True)


def patch_board(board: str, patch: Optional[Config], fields: Mapping[str, Any],
                confirm_rerank: bool = False) -> Call[BoardInfo]:
    body = _config_body(patch, fields, confirm_rerank)
    if not body or list(body) == ["confirm_rerank"]:
        raise ValueError("patch_board: nothing to change (name the config fields to change)")
    return Call("PATCH", board_path(board), BoardInfo.from_json, json=body, has_json=True)


def delete_board(board: str) -> Call[bool]:
    return Call("DELETE", board_path(board), lambda d: bool(d["deleted"]))


def reset(board: str) -> Call[ResetResult]:
    return Call("POST", board_path(board, "reset"), ResetResult.from_json)


def combine(kind: str, board: str, sources: Sequence[str], weights: Optional[Sequence[float]],
            aggregate: Optional[str]) -> Call[int]:
    body: Dict[str, Any] = {"sources": list(sources)}
    if weights is not None:
        body["weights"] = list(weights)
    if aggregate is not None:
        body["aggregate"] = aggregate
    return Call("POST", board_path(board, kind), lambda d: int(d["members"]), json=body, has_json=True)


def resort_status(board: str) -> Call[ResortStatus]:
    return Call("GET", board_path(board, "resort"), ResortStatus.from_json)


# --- writes ---------------------------------------------------------------------


def submit(board: str, s: Submission) -> Call[SubmitResult]:
    if s.score is None and s.scores is None:
        raise ValueError("submit needs score or scores")
    return Call("POST", board_path(board, "scores"), SubmitResult.from_json, json=s.to_json(), has_json=True)


def _batch_results(d: Any) -> List[Union[SubmitResult, SubmitFailure]]:
    out: List[Union[SubmitResult, SubmitFailure]] = []
    for r in d["results"]:
        if "error" in r:
            err = r["error"]
            out.append(SubmitFailure(r["member"], error_from(str(err.get("code")), str(err.get("message", "")), None)))
        else:
            out.append(SubmitResult.from_json(r))
    return out


def submit_many(board: str, entries: Iterable[SubmissionLike]) -> Call[List[Union[SubmitResult, SubmitFailure]]]:
    body = [submission_json(e) for e in entries]
    return Call("POST", board_path(board, "scores"), _batch_results, json=body, has_json=True)


def remove(board: str, members: Sequence[str]) -> Call[int]:
    if isinstance(members, str):
        raise TypeError("remove takes a list of members; use remove_member for one")
    return Call("POST", board_path(board, "remove"), lambda d: int(d["removed"]),
                json={"members": list(members)}, has_json=True)


def remove_member(board: str, member: str) -> Call[int]:
    path, params = member_route(board, "members", member)
    return Call("DELETE", path, lambda d: int(d["removed"]), params=params)


def _count(start: int, stop: int) -> int:
    """The places `start`..`stop` (inclusive) as the HTTP API counts them; a stop before the start
    is 0 places, which the server refuses as it refuses such a range."""
    return max(stop - start + 1, 0)


def remove_range_by_rank(board: str, start: int, stop: int) -> Call[int]:
    return Call("DELETE", board_path(board, "range", "rank"), lambda d: int(d["removed"]),
                params={"start": start, "count": _count(start, stop)})


def remove_range_by_score(board: str, min: Optional[ScoreValue], max: Optional[ScoreValue]) -> Call[int]:
    return Call("DELETE", board_path(board, "range", "score"), lambda d: int(d["removed"]),
                params={"min": encode_bound(min, "-inf"), "max": encode_bound(max, "+inf")})


def set_data(board: str, member: str, data: Optional[Mapping[str, Any]], name: Optional[str]) -> Call[bool]:
    body: Dict[str, Any] = {}
    if data is not None:
        body["data"] = dict(data)
    if name is not None:
        body["name"] = name
    path, params = member_route(board, "members", member)
    return Call("PATCH", path, lambda d: bool(d["found"]), params=params, json=body, has_json=True)


# --- reads --------------------------------------------------------------------


def top(board: str, page: int, page_size: Optional[int], with_data: bool) -> Call[Page]:
    params: Params = {"page": page}
    if page_size is not None:
        params["page_size"] = page_size
    if with_data:
        params["with_data"] = "true"
    return Call("GET", board_path(board, "top"), Page.from_json, params=params)


def rank(board: str, member: str) -> Call[Rank]:
    path, params = member_route(board, "rank", member)
    return Call("GET", path, Rank.from_json, params=params)


def entry(board: str, member: str, page_size: Optional[int]) -> Call[EntryInfo]:
    path, params = member_route(board, "members", member, {} if page_size is None else {"page_size": page_size})
    return Call("GET", path, EntryInfo.from_json, params=params)


def around(board: str, member: str, page_size: Optional[int], with_data: bool) -> Call[Around]:
    params: Params = {}
    if page_size is not None:
        params["page_size"] = page_size
    if with_data:
        params["with_data"] = "true"
    path, params = member_route(board, "around", member, params)
    return Call("GET", path, Around.from_json, params=params)


def ranks(board: str, members: Sequence[str], with_data: bool) -> Call[Ranks]:
    if isinstance(members, str):
        raise TypeError("ranks takes a list of members")
    body: Dict[str, Any] = {"members": list(members)}
    if with_data:
        body["with_data"] = True
    return Call("POST", board_path(board, "ranks"), Ranks.from_json, json=body, has_json=True)


def count(board: str, min: Optional[ScoreValue], max: Optional[ScoreValue]) -> Call[int]:
    params: Params = {}
    if min is not None:
        params["min"] = encode_bound(min, "-inf")
    if max is not None:
        params["max"] = encode_bound(max, "+inf")
    return Call("GET", board_path(board, "count"), lambda d: int(d["count"]), params=params)


def range_by_rank(board: str, start: int, stop: int, from_worst: bool, with_data: bool) -> Call[Range]:
    params: Params = {"start": start, "count": _count(start, stop)}
    if from_worst:
        params["from"] = "worst"
    if with_data:
        params["with_data"] = "true"
    return Call("GET", board_path(board, "range", "rank"), Range.from_json, params=params)


def range_by_score(board: str, min: Optional[ScoreValue], max: Optional[ScoreValue], offset: Optional[int],
                   limit: Optional[int], from_worst: bool, with_data: bool) -> Call[Range]:
    params: Params = {}
    if min is not None:
        params["min"] = encode_bound(min, "-inf")
    if max is not None:
        params["max"] = encode_bound(max, "+inf")
    if offset is not None:
        params["offset"] = offset
    if limit is not None:
        params["limit"] = limit
    if from_worst:
        params["from"] = "worst"
    if with_data:
        params["with_data"] = "true"
    return Call("GET", board_path(board, "range", "score"), Range.from_json, params=params)


def percentile(board: str, member: str) -> Call[float]:
    path, params = member_route(board, "percentile", member)
    return Call("GET", path, lambda d: float(d["percentile"]), params=params)


def score_at_percentile(board: str, p: float) -> Call[Optional[Entry]]:
    return Call("GET", board_path(board, "score_at_percentile"),
                lambda d: None if d.get("entry") is None else Entry.from_json(d["entry"]), params={"p": p})


def search(board: str, q: str, limit: Optional[int], offset: Optional[int], with_data: bool) -> Call[SearchResult]:
    params: Params = {"q": q}
    if limit is not None:
        params["limit"] = limit
    if offset is not None:
        params["offset"] = offset
    if with_data:
        params["with_data"] = "true"
    return Call("GET", board_path(board, "search"), SearchResult.from_json, params=params)


# --- import, export, events -------------------------------------------------------


def import_params(format: Optional[str]) -> Params:
    return {} if format is None else {"format": format}


def import_content_type(format: Optional[str]) -> str:
    return "text/csv" if format == "csv" else "application/x-ndjson"


def guess_format(path: str) -> str:
    return "csv" if path.lower().endswith(".csv") else "ndjson"


def record_line(record: SubmissionLike) -> bytes:
    return (json.dumps(submission_json(record), separators=(",", ":")) + "\n").encode()


#: Bytes of NDJSON gathered before a chunk of an import's body is sent: one
#: chunk a record would cost a write (and a chunk header) per line.
IMPORT_CHUNK = 64 * 1024


def record_chunks(records: Iterable[SubmissionLike]) -> Iterator[bytes]:
    """Records as NDJSON, in chunks of about ``IMPORT_CHUNK`` bytes."""
    buf: List[bytes] = []
    size = 0
    for r in records:
        line = record_line(r)
        buf.append(line)
        size += len(line)
        if size >= IMPORT_CHUNK:
            yield b"".join(buf)
            buf, size = [], 0
    if buf:
        yield b"".join(buf)


def parse_import(d: Any) -> ImportResult:
    return ImportResult.from_json(d)


def parse_export_line(line: bytes) -> Optional[Entry]:
    line = line.strip()
    if not line:
        return None
    return Entry.from_json(json.loads(line))


def events_params(top: Optional[int], members: Optional[Sequence[str]], snapshot: bool,
                  since: Optional[str]) -> Params:
    params: Params = {}
    if top is not None:
        params["top"] = top
    if members is not None:
        if isinstance(members, str):
            raise TypeError("members is a list of member ids")
        params["member"] = list(members)  # one `member=` each: ids may hold commas
    if snapshot:
        params["snapshot"] = _flag(snapshot)
    if since is not None:
        params["since"] = since
    return params
