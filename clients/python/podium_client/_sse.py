"""A Server-Sent Events parser (the text/event-stream format), fed line by line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional


@dataclass
class SseMessage:
    id: Optional[str]
    event: str
    data: str


class SseParser:
    """Feed decoded lines (without their line ending); complete messages come back."""

    def __init__(self) -> None:
        self._data: List[str] = []
        self._event = ""
        self._id: Optional[str] = None
        self.retry_ms: Optional[int] = None

    def feed(self, line: str) -> Optional[SseMessage]:
        if line == "":
            if not self._data:
                self._event = ""
                self._id = None
                return None
            msg = SseMessage(self._id, self._event or "message", "\n".join(self._data))
            self._data = []
            self._event = ""
            self._id = None
            return msg
        if line.startswith(":"):
            return None  # a comment: the keep-alive
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None
