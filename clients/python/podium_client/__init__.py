"""Python client for the podium leaderboard server.

>>> from podium_client import Client
>>> with Client() as c:                        # $PODIUM_URL, $PODIUM_API_KEY
...     c.submit("weekly", "ann", 120, name="Ann")
...     page = c.top("weekly")
"""

from ._async import AsyncClient, AsyncEventStream
from ._errors import (
    BoardNotFound, Conflict, Forbidden, InvalidRequest, MemberNotFound, NotFound, PodiumError,
    RateLimited, TransportError, Unauthorized, Unavailable,
)
from ._models import (
    Around, BoardInfo, BoardSummary, Entry, EntryInfo, Event, ImportError_ as ImportLineError,
    ImportResult, KeyValue, MemberState, Page, Range, Rank, Ranks, ResetResult, ResortStatus, ScoreValue,
    SearchResult, SubmitFailure, SubmitResult, Submission, exclusive,
)
from ._sync import Client, EventStream

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "EventStream", "AsyncEventStream",
    "PodiumError", "InvalidRequest", "Unauthorized", "Forbidden", "NotFound", "BoardNotFound",
    "MemberNotFound", "Conflict", "RateLimited", "Unavailable", "TransportError",
    "Around", "BoardInfo", "BoardSummary", "Entry", "EntryInfo", "Event", "ImportLineError",
    "ImportResult", "KeyValue", "MemberState", "Page", "Range", "Rank", "Ranks", "ResetResult", "ResortStatus",
    "ScoreValue", "SearchResult", "SubmitFailure", "SubmitResult", "Submission", "exclusive",
]
