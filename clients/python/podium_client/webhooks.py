"""Receiving a board's webhook deliveries (docs/spec.md §4, Webhooks).

A delivery is ``POST`` with ``Podium-Signature: sha256=HEX``, the HMAC-SHA256
of the exact body bytes under the hook's secret, and a JSON body
``{"board", "hook", "events": [...]}``. Check the signature on the raw bytes
before parsing them; deliveries are at least once, so deduplicate by event id.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import List, Optional, Union

from ._models import Event

SIGNATURE_HEADER = "Podium-Signature"


def sign(body: bytes, secret: Union[str, bytes]) -> str:
    """The ``Podium-Signature`` value of a body under a secret."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify_signature(body: bytes, secret: Union[str, bytes], signature: Optional[str]) -> bool:
    """Whether ``signature`` (the header's value) signs ``body`` under ``secret``; constant time."""
    if not signature:
        return False
    return hmac.compare_digest(sign(body, secret), signature.strip())


@dataclass(frozen=True)
class WebhookDelivery:
    board: str
    hook: str
    events: List[Event]


def parse_delivery(body: bytes, secret: Optional[Union[str, bytes]] = None,
                   signature: Optional[str] = None) -> WebhookDelivery:
    """A delivery's events; with ``secret``, a bad or missing signature raises ValueError."""
    if secret is not None and not verify_signature(body, secret, signature):
        raise ValueError("bad webhook signature")
    d = json.loads(body)
    return WebhookDelivery(str(d["board"]), str(d["hook"]), [Event.from_json(e) for e in d["events"]])
