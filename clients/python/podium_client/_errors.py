"""Errors raised by the client.

Every error answer of the server is ``{"error": {"code": ..., "message": ...}}``
with an HTTP status; it is raised as a :class:`PodiumError` (or the subclass
for its code) carrying ``code``, ``message`` and ``status``.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class PodiumError(Exception):
    """An error answered by the server, or a failure to reach it."""

    def __init__(
        self,
        code: str,
        message: str,
        status: Optional[int] = None,
        *,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if status is None else f"{status} {code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after


class InvalidRequest(PodiumError):
    """400: a bad argument, score, member, board name, data, config or body."""


class Unauthorized(PodiumError):
    """401: no known API key."""


class Forbidden(PodiumError):
    """403: the API key's scope does not cover the operation."""


class NotFound(PodiumError):
    """404: a missing board, member or route."""


class BoardNotFound(NotFound):
    """404 ``board_not_found``."""


class MemberNotFound(NotFound):
    """404 ``member_not_found``."""


class Conflict(PodiumError):
    """409: ``board_exists``, ``read_only`` (an archive), ``confirm_rerank_required`` (a config
    change that re-ranks the board, sent without ``confirm_rerank=True``) or ``wrong_type`` (a
    request of the other kind than the board takes: ``scores`` to a plain board, a sort key or
    search field it lacks)."""


class RateLimited(PodiumError):
    """429 ``rate_limited``; ``retry_after`` holds the server's Retry-After in seconds."""


class Unavailable(PodiumError):
    """503: ``storage_unavailable``, ``out_of_memory``, ``too_many_clients`` or ``not_ready``."""


class TransportError(PodiumError):
    """The server could not be reached or the connection failed (code ``transport``)."""

    def __init__(self, message: str) -> None:
        super().__init__("transport", message, None)


_BY_CODE: Dict[str, Type[PodiumError]] = {
    "invalid_argument": InvalidRequest,
    "invalid_score": InvalidRequest,
    "invalid_member": InvalidRequest,
    "invalid_board_name": InvalidRequest,
    "invalid_data": InvalidRequest,
    "invalid_config": InvalidRequest,
    "malformed_request": InvalidRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "board_not_found": BoardNotFound,
    "member_not_found": MemberNotFound,
    "not_found": NotFound,
    "board_exists": Conflict,
    "read_only": Conflict,
    "confirm_rerank_required": Conflict,
    "wrong_type": Conflict,
    "rate_limited": RateLimited,
    "storage_unavailable": Unavailable,
    "out_of_memory": Unavailable,
    "too_many_clients": Unavailable,
    "not_ready": Unavailable,
}

_BY_STATUS: Dict[int, Type[PodiumError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
    503: Unavailable,
}


def error_from(
    code: str, message: str, status: Optional[int], retry_after: Optional[float] = None
) -> PodiumError:
    """The error of that code, as the most specific class known for it."""
    cls = _BY_CODE.get(code) or (_BY_STATUS.get(status) if status is not None else None) or PodiumError
    return cls(code, message, status, retry_after=retry_after)


def error_from_body(status: int, body: Any, retry_after: Optional[float] = None) -> PodiumError:
    """The error an answer's JSON body describes (or a generic one when it has none)."""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            code = err.get("code")
            message = err.get("message")
            if isinstance(code, str):
                return error_from(code, message if isinstance(message, str) else "", status, retry_after)
    return error_from("http_error", f"HTTP {status}", status, retry_after)
