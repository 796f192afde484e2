"""A Server-Sent Events client for the tests of ``GET /api/events/{email}``."""

from __future__ import annotations

import json
from typing import Any

import requests

TIMEOUT = 10.0


class Events:
    """A Server-Sent Events client: requests with ``stream=True``, read event by event."""

    def __init__(
        self,
        http: requests.Session,
        url: str,
        *,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        read_timeout: float = 5.0,
    ) -> None:
        self.response = http.get(
            url, params=params, headers=headers, stream=True, timeout=(TIMEOUT, read_timeout)
        )
        self.comments: list[str] = []
        self._lines = self.response.iter_lines()

    def next(self) -> dict[str, str] | None:
        """The next event's fields; None when the stream has ended. Comments are kept aside."""
        fields: dict[str, str] = {}
        for raw in self._lines:
            line = raw.decode("utf-8")
            if not line:
                if fields:
                    return fields
                continue
            if line.startswith(":"):
                self.comments.append(line)
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        return fields or None

    def next_message(self) -> tuple[str, dict[str, Any]]:
        """The next event, which must be a ``message`` event: its id and its data."""
        event = self.next()
        assert event is not None, "the stream ended"
        assert event["event"] == "message", event
        data: dict[str, Any] = json.loads(event["data"])
        return event["id"], data

    def close(self) -> None:
        """Leave, closing the connection."""
        self.response.close()
