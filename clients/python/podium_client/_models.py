"""Typed results, and the JSON encoding of scores.

Scores are floats (``float("inf")`` for the infinities the server sends as
``"inf"``/``"-inf"``). The values of a board's sort keys (``scores``) are
kept exact: an ``int`` key's value is a Python ``int`` (JSON carries one
beyond 2^53 as a string, which is read back as an ``int``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

#: A score or a sort key's value as given to the server.
ScoreValue = Union[int, float, str]
#: A sort key's value as read back: an ``int`` for an ``int`` key, else a ``float``.
KeyValue = Union[int, float]

_INT = re.compile(r"^[+-]?[0-9]+$")
_EXACT = 2**53


def encode_score(value: ScoreValue) -> Union[int, float, str]:
    """A score or key value as JSON: infinities and integers beyond 2^53 as strings."""
    if isinstance(value, bool):
        raise TypeError("a score is a number, not a bool")
    if isinstance(value, int):
        return str(value) if abs(value) > _EXACT else value
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError("a score cannot be NaN")
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, str):
        return value
    raise TypeError(f"a score is a number, not {type(value).__name__}")


def encode_scores(scores: Mapping[str, ScoreValue]) -> Dict[str, Union[int, float, str]]:
    return {k: encode_score(v) for k, v in scores.items()}


def encode_bound(value: Optional[ScoreValue], default: str) -> str:
    """A ``min``/``max`` bound in the server's (Redis) syntax; ints stay exact."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise TypeError("a bound is a number, not a bool")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError("a bound cannot be NaN")
        if math.isinf(value):
            return "+inf" if value > 0 else "-inf"
        return repr(value)
    return value


def exclusive(value: ScoreValue) -> str:
    """An exclusive score bound, e.g. ``range_by_score(b, min=exclusive(10))``."""
    return "(" + encode_bound(value, "")


def decode_score(value: Any) -> float:
    if value is None:
        raise ValueError("missing score")
    if isinstance(value, str):
        return float(value)  # "inf", "-inf"
    return float(value)


def decode_opt_score(value: Any) -> Optional[float]:
    return None if value is None else decode_score(value)


def decode_key_value(value: Any) -> KeyValue:
    if isinstance(value, str):
        return int(value) if _INT.match(value) else float(value)
    if isinstance(value, bool):
        raise ValueError("a key value is a number")
    if isinstance(value, (int, float)):
        return value
    raise ValueError(f"not a key value: {value!r}")


def decode_scores(value: Any) -> Optional[Dict[str, KeyValue]]:
    if value is None:
        return None
    return {str(k): decode_key_value(v) for k, v in value.items()}


def _opt_int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


@dataclass(frozen=True)
class Entry:
    """One member's place on a board."""

    member: str
    score: float
    rank: int
    scores: Optional[Dict[str, KeyValue]] = None
    name: Optional[str] = None
    data: Optional[Dict[str, Any]] = None

    @property
    def display_name(self) -> str:
        return self.name if self.name else self.member

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Entry":
        return cls(
            member=d["member"],
            score=decode_score(d["score"]),
            rank=int(d["rank"]),
            scores=decode_scores(d.get("scores")),
            name=d.get("name"),
            data=d.get("data"),
        )


def _entries(value: Any) -> List[Entry]:
    return [Entry.from_json(e) for e in (value or [])]


@dataclass(frozen=True)
class Page:
    """A page of a board, best first (``top``)."""

    board: str
    ranking: str
    page: int
    page_size: int
    total: int
    total_pages: int
    entries: List[Entry]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Page":
        return cls(d["board"], d["ranking"], d["page"], d["page_size"], d["total"], d["total_pages"], _entries(d["entries"]))


@dataclass(frozen=True)
class Range:
    """Entries by rank or by score (``range_by_rank``, ``range_by_score``)."""

    board: str
    ranking: str
    total: int
    entries: List[Entry]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Range":
        return cls(d["board"], d["ranking"], d["total"], _entries(d["entries"]))


@dataclass(frozen=True)
class Around:
    """The page centred on a member."""

    board: str
    ranking: str
    member: str
    rank: int
    total: int
    entries: List[Entry]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Around":
        return cls(d["board"], d["ranking"], d["member"], d["rank"], d["total"], _entries(d["entries"]))


@dataclass(frozen=True)
class Ranks:
    """Ranks of a list of members, best first, and the ones not on the board."""

    board: str
    ranking: str
    entries: List[Entry]
    missing: List[str]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Ranks":
        return cls(d["board"], d["ranking"], _entries(d["entries"]), list(d["missing"]))


@dataclass(frozen=True)
class Rank:
    """A member's rank and score."""

    board: str
    ranking: str
    member: str
    rank: int
    score: float
    scores: Optional[Dict[str, KeyValue]] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Rank":
        return cls(d["board"], d["ranking"], d["member"], d["rank"], decode_score(d["score"]), decode_scores(d.get("scores")))


@dataclass(frozen=True)
class EntryInfo:
    """A member's rank, score, name, data, percentile and page."""

    board: str
    ranking: str
    member: str
    score: float
    rank: int
    percentile: float
    page: int
    total: int
    scores: Optional[Dict[str, KeyValue]] = None
    name: Optional[str] = None
    data: Optional[Dict[str, Any]] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "EntryInfo":
        return cls(
            d["board"], d["ranking"], d["member"], decode_score(d["score"]), d["rank"],
            float(d["percentile"]), d["page"], d["total"], decode_scores(d.get("scores")),
            d.get("name"), d.get("data"),
        )


@dataclass(frozen=True)
class SearchResult:
    board: str
    ranking: str
    query: str
    total: int
    offset: int
    limit: int
    entries: List[Entry]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SearchResult":
        return cls(d["board"], d["ranking"], d["query"], d["total"], d["offset"], d["limit"], _entries(d["entries"]))


@dataclass(frozen=True)
class SubmitResult:
    """What a submission did. ``score``/``rank`` are None when the member is not on the board."""

    member: str
    score: Optional[float]
    rank: Optional[int]
    previous: Optional[float]
    changed: bool
    created: bool
    applied: bool
    evicted: int
    scores: Optional[Dict[str, KeyValue]] = None
    previous_scores: Optional[Dict[str, KeyValue]] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SubmitResult":
        return cls(
            d["member"], decode_opt_score(d.get("score")), _opt_int(d.get("rank")),
            decode_opt_score(d.get("previous")), d["changed"], d["created"], d["applied"],
            d["evicted"], decode_scores(d.get("scores")), decode_scores(d.get("previous_scores")),
        )


@dataclass(frozen=True)
class SubmitFailure:
    """One entry of a ``submit_many`` batch the server refused; the rest went on."""

    member: str
    error: Any  # PodiumError; typed loosely to keep this module free of the errors module

    @property
    def code(self) -> str:
        return str(self.error.code)


@dataclass(frozen=True)
class Submission:
    """One entry of ``submit_many`` or ``import_records``: give ``score`` or ``scores``."""

    member: str
    score: Optional[ScoreValue] = None
    scores: Optional[Mapping[str, ScoreValue]] = None
    name: Optional[str] = None
    data: Optional[Mapping[str, Any]] = None
    op: Optional[str] = None
    only: Optional[str] = None
    cond: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"member": self.member}
        if self.score is not None:
            d["score"] = encode_score(self.score)
        if self.scores is not None:
            d["scores"] = encode_scores(self.scores)
        if self.name is not None:
            d["name"] = self.name
        if self.data is not None:
            d["data"] = dict(self.data)
        if self.op is not None:
            d["op"] = self.op
        if self.only is not None:
            d["only"] = self.only
        if self.cond is not None:
            d["cond"] = self.cond
        return d


@dataclass(frozen=True)
class BoardInfo:
    """A board's size and config (``config`` with every default filled in)."""

    board: str
    members: int
    read_only: bool
    heap_bytes: int
    config: Dict[str, Any]
    archive_of: Optional[str] = None
    period: Optional[str] = None
    created: Optional[bool] = None
    #: When the board's schedule resets it next (RFC 3339, UTC), on a board with one.
    next_reset: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "BoardInfo":
        return cls(
            d["board"], d["members"], d["read_only"], d["heap_bytes"], dict(d["config"]),
            d.get("archive_of"), d.get("period"), d.get("created"), d.get("next_reset"),
        )


@dataclass(frozen=True)
class BoardSummary:
    """A board of the list: its name, size and memory, and for an archive the board it archives."""

    board: str
    members: int
    archive_of: Optional[str] = None
    heap_bytes: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "BoardSummary":
        return cls(d["board"], d["members"], d.get("archive_of"), d.get("heap_bytes", 0))


@dataclass(frozen=True)
class ResetResult:
    board: str
    archive: str
    archived: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ResetResult":
        return cls(d["board"], d["archive"], d["archived"])


@dataclass(frozen=True)
class ResortStatus:
    board: str
    running: bool
    done: int
    total: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ResortStatus":
        return cls(d["board"], d["running"], d["done"], d["total"])


@dataclass(frozen=True)
class ImportError_:
    line: int
    member: Optional[str]
    code: str
    message: str


@dataclass(frozen=True)
class ImportResult:
    """Counts of an import and its first errors (a bad line fails alone)."""

    board: str
    imported: int
    failed: int
    errors: List[ImportError_]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ImportResult":
        errors = [
            ImportError_(e["line"], e.get("member"), e["error"]["code"], e["error"]["message"])
            for e in d.get("errors", [])
        ]
        return cls(d["board"], d["imported"], d["failed"], errors)


@dataclass(frozen=True)
class MemberState:
    """A watched member in a snapshot: rank and score are None when it is not on the board."""

    member: str
    rank: Optional[int] = None
    score: Optional[float] = None
    scores: Optional[Dict[str, KeyValue]] = None
    name: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "MemberState":
        return cls(d["member"], _opt_int(d.get("rank")), decode_opt_score(d.get("score")),
                   decode_scores(d.get("scores")), d.get("name"))


@dataclass(frozen=True)
class Event:
    """A live event of a board (docs/spec.md, Live events).

    ``type`` is one of change, enter, leave, move, member, reset, config,
    created, deleted, snapshot, reload, lagged; the fields of other types
    are None. ``raw`` holds the whole JSON object.
    """

    id: str
    type: str
    board: str
    member: Optional[str] = None
    rank: Optional[int] = None
    score: Optional[float] = None
    scores: Optional[Dict[str, KeyValue]] = None
    name: Optional[str] = None
    previous_rank: Optional[int] = None
    previous_score: Optional[float] = None
    previous_scores: Optional[Dict[str, KeyValue]] = None
    by: Optional[str] = None
    removed: bool = False
    archive: Optional[str] = None
    config: Optional[Dict[str, Any]] = None
    exists: Optional[bool] = None
    size: Optional[int] = None
    top: Optional[List[Entry]] = None
    members: Optional[List[MemberState]] = None
    after: Optional[str] = None
    resume: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Event":
        top = d.get("top")
        members = d.get("members")
        return cls(
            id=str(d.get("id", "")),
            type=str(d.get("type", "")),
            board=str(d.get("board", "")),
            member=d.get("member"),
            rank=_opt_int(d.get("rank")),
            score=decode_opt_score(d.get("score")),
            scores=decode_scores(d.get("scores")),
            name=d.get("name"),
            previous_rank=_opt_int(d.get("previous_rank")),
            previous_score=decode_opt_score(d.get("previous_score")),
            previous_scores=decode_scores(d.get("previous_scores")),
            by=d.get("by"),
            removed=bool(d.get("removed", False)),
            archive=d.get("archive"),
            config=d.get("config"),
            exists=d.get("exists"),
            size=_opt_int(d.get("size")),
            top=_entries(top) if isinstance(top, list) else None,
            members=[MemberState.from_json(m) for m in members] if isinstance(members, list) else None,
            after=d.get("after"),
            resume=d.get("resume"),
            raw=dict(d),
        )
