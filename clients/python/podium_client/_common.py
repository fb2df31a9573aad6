"""What both clients share: defaults, backoff, turning answers into errors."""

from __future__ import annotations

import os
import random
import socket
import warnings
from typing import Optional

import httpx

from ._errors import PodiumError, TransportError, error_from_body

DEFAULT_URL = "http://127.0.0.1:7070"
DEFAULT_TIMEOUT = 10.0
#: The server sends a keep-alive comment every 15 s: a stream silent this long is dead.
EVENTS_READ_TIMEOUT = 45.0
VERSION = "0.1.0"


def default_base_url() -> str:
    return os.environ.get("PODIUM_URL") or DEFAULT_URL


def default_api_key() -> Optional[str]:
    return os.environ.get("PODIUM_API_KEY") or None


def default_rpc() -> Optional[str]:
    """``$PODIUM_RPC_ADDR``: the one spelling of the server's MessagePack-RPC address across podium's
    clients (``PODIUM_RPC`` names the address ``podium serve`` listens on, so a client reading it is
    deprecated: still read, with a warning)."""
    addr = os.environ.get("PODIUM_RPC_ADDR")
    if addr:
        return addr
    old = os.environ.get("PODIUM_RPC")
    if old:
        warnings.warn("PODIUM_RPC is deprecated for clients: set PODIUM_RPC_ADDR (HOST:PORT of the "
                      "server's MessagePack-RPC port)", DeprecationWarning, stacklevel=3)
        return old
    return None


def user_agent() -> str:
    return f"podium-client-python/{VERSION}"


def backoff(base: float, attempt: int, cap: float = 5.0) -> float:
    """Exponential backoff with jitter: about base * 2^attempt, at most cap."""
    d: float = min(cap, base * (2**attempt))
    return d * (0.5 + random.random() / 2)


def is_retryable_status(status: int) -> bool:
    return status in (502, 503, 504)


def error_from_response(resp: httpx.Response) -> PodiumError:
    retry_after: Optional[float] = None
    ra = resp.headers.get("Retry-After")
    if ra is not None:
        try:
            retry_after = float(ra)
        except ValueError:
            retry_after = None
    try:
        body = resp.json()
    except ValueError:
        body = None
    return error_from_body(resp.status_code, body, retry_after)


def transport_error(e: BaseException) -> TransportError:
    return TransportError(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)


def shutdown_stream(resp: httpx.Response) -> None:
    """Shut the socket under a streamed response down, so a read blocked on it returns."""
    stream = resp.extensions.get("network_stream")
    get = getattr(stream, "get_extra_info", None)
    if get is None:
        return
    try:
        sock = get("socket")
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # noqa: BLE001 - best effort: already closed
        pass
