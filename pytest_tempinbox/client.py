"""A typed Python client for the HTTP API, and the inbox handle tests use.

The only module that imports requests, and only when it speaks HTTP. It knows
nothing of the server beyond its API URL, so it works against any server of this
package, in the same process or remote. Every failure becomes one of the
package's exceptions, never a bare ``requests`` one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from .errors import ERRORS_BY_CODE, ServerUnavailable, TempInboxError, WaitTimeout
from .models import Message
from .transport import Answer, Transport

if TYPE_CHECKING:
    import requests

__all__ = ["HTTPTransport", "Inbox", "TempInboxClient", "describe"]

MAX_WAIT = 60.0  # the longest long-poll the server accepts
# Extra time for the HTTP answer of a long-poll to come back, past its wait.
_NETWORK_MARGIN = 10.0


class HTTPTransport:
    """Carries the client's requests over HTTP, with one pooled :class:`requests.Session`."""

    def __init__(self, api_url: str, session: requests.Session | None = None) -> None:
        import requests  # here, so that the in-process transport never pays for it

        self._requests = requests
        self.api_url = api_url.rstrip("/")
        self.session = session or requests.Session()
        if session is None and _is_loopback_url(self.api_url):
            # Proxies and .netrc never apply to loopback, and looking them up costs time.
            self.session.trust_env = False

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        """Send the request; raise :class:`ServerUnavailable` when there is no answer."""
        url = self.api_url + path
        headers = {"Content-Type": "application/json"} if body is not None else None
        try:
            response = self.session.request(
                method, url, params=params, data=body, headers=headers, timeout=timeout
            )
        except self._requests.RequestException as exc:
            raise ServerUnavailable(f"{method} {url} failed: {exc}") from exc
        content_type = response.headers.get("content-type", "").split(";")[0].strip()
        return Answer(response.status_code, content_type, response.content)

    def close(self) -> None:
        """Close the pooled connections."""
        self.session.close()


class TempInboxClient:
    """Speaks the HTTP API of a pytest-tempinbox server at ``api_url`` (ending in ``/api``).

    Requests go over HTTP through one pooled :class:`requests.Session`, unless a
    ``transport`` is given (the plugin passes a
    :class:`~pytest_tempinbox.transport.LocalTransport` when the server runs in the
    same process). ``timeout`` bounds each call that does not long-poll. Use it as
    a context manager, or call :meth:`close`, to release its connections.
    """

    def __init__(
        self, api_url: str, *, timeout: float = 30.0, transport: Transport | None = None
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        self.transport = transport or HTTPTransport(self.api_url)

    def info(self) -> dict[str, Any]:
        """Return ``GET /api/info``: the version, the SMTP listener, domains and limits."""
        info: dict[str, Any] = self._call("GET", "/info").json()
        return info

    def generate(self, prefix: str | None = None, domain: str | None = None) -> Inbox:
        """Create an inbox at a brand new address and return its handle."""
        options = {key: value for key, value in (("prefix", prefix), ("domain", domain)) if value}
        body = json.dumps(options).encode() if options else None
        data = self._call("POST", "/generate", body=body).json()
        return Inbox(data["email"], self)

    def messages(
        self, email: str, *, after: str | None = None, wait: float | None = None
    ) -> list[Message]:
        """Return the inbox's messages, oldest first.

        ``after`` keeps only those received after the message with that id;
        ``wait`` (0-60 s) holds the call until there is one, or the time is up.
        """
        params: dict[str, str] = {}
        if after is not None:
            params["after"] = after
        timeout = self.timeout
        if wait:
            params["wait"] = f"{wait:.3f}"
            timeout = wait + _NETWORK_MARGIN
        answer = self._call("GET", f"/messages/{_quote(email)}", params=params, timeout=timeout)
        return [Message.from_json(item, source=self) for item in answer.json()]

    def message(self, email: str, id: str) -> Message:
        """Return one message of the inbox."""
        answer = self._call("GET", f"/messages/{_quote(email)}/{_quote(id)}")
        return Message.from_json(answer.json(), source=self)

    def raw(self, email: str, id: str) -> bytes:
        """Return a message exactly as the server received it."""
        return self._call("GET", f"/messages/{_quote(email)}/{_quote(id)}/raw").content

    def attachment(self, email: str, id: str, index: int) -> bytes:
        """Return the decoded bytes of attachment ``index`` of a message."""
        path = f"/messages/{_quote(email)}/{_quote(id)}/attachments/{index}"
        return self._call("GET", path).content

    def delete(self, email: str) -> int:
        """Delete the inbox and its mail; return how many messages were purged."""
        purged: int = self._call("DELETE", f"/delete/{_quote(email)}").json()["purged"]
        return purged

    def close(self) -> None:
        """Release the transport's connections."""
        self.transport.close()

    def __enter__(self) -> TempInboxClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TempInboxClient {self.api_url}>"

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float | None = None,
    ) -> Answer:
        answer = self.transport.request(
            method, path, params=params, body=body, timeout=timeout or self.timeout
        )
        if answer.status >= 400:
            raise _error_from(answer, f"{method} {self.api_url}{path}")
        return answer


def _error_from(answer: Answer, request: str) -> TempInboxError:
    try:
        problem = answer.json()
        code, detail = problem["code"], problem["detail"]
    except (ValueError, KeyError, TypeError):
        text = answer.content[:200].decode("utf-8", "replace")
        return ServerUnavailable(f"{request} answered {answer.status}: {text}")
    error = ERRORS_BY_CODE.get(code, TempInboxError)(detail)
    error.status = answer.status
    return error


def _quote(segment: str) -> str:
    return quote(segment, safe="@+")


def _is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "localhost" or host.startswith("127.") or host == "::1"


@dataclass(frozen=True)
class _Filter:
    subject: str | None
    sender: str | None
    match: Callable[[Message], bool] | None

    def __call__(self, message: Message) -> bool:
        if self.subject is not None and self.subject not in message.subject:
            return False
        if self.sender is not None and (
            message.sender is None or self.sender.lower() not in message.sender.email.lower()
        ):
            return False
        return self.match is None or bool(self.match(message))

    def __str__(self) -> str:
        parts = []
        if self.subject is not None:
            parts.append(f"subject containing {self.subject!r}")
        if self.sender is not None:
            parts.append(f"sender containing {self.sender!r}")
        if self.match is not None:
            parts.append(f"match={getattr(self.match, '__name__', repr(self.match))}")
        return "message with " + " and ".join(parts) if parts else "message"


class Inbox:
    """One disposable address and what it received; ``str(inbox)`` is the address.

    Hand :attr:`address` to the application under test, then read the mail with
    :meth:`messages` or wait for it with :meth:`wait_for_message`.
    """

    def __init__(self, address: str, client: TempInboxClient) -> None:
        self.address = address
        self.client = client

    def __str__(self) -> str:
        return self.address

    def __repr__(self) -> str:
        return f"<Inbox {self.address}>"

    def messages(self) -> list[Message]:
        """Return every message received so far, oldest first."""
        return self.client.messages(self.address)

    def wait_for_message(
        self,
        *,
        subject: str | None = None,
        sender: str | None = None,
        match: Callable[[Message], bool] | None = None,
        timeout: float = 10.0,
    ) -> Message:
        """Return the first message, oldest first, that passes every given filter.

        ``subject``: the subject contains this text (case-sensitive). ``sender``:
        the ``From`` address contains this text (case-insensitive). ``match``:
        this callable returns true for the message. Waits up to ``timeout``
        seconds with the server's long-poll (no sleeping); then raises
        :class:`~pytest_tempinbox.errors.WaitTimeout`, whose message lists what
        the inbox did receive.
        """
        wanted = _Filter(subject, sender, match)
        for batch in self._batches(timeout):
            for message in batch:
                if wanted(message):
                    return message
        __tracebackhide__ = True
        raise self._timeout(f"no {wanted}", timeout)

    def wait_for_messages(self, count: int, *, timeout: float = 10.0) -> list[Message]:
        """Wait until the inbox holds at least ``count`` messages; return them all, oldest first.

        Raises :class:`~pytest_tempinbox.errors.WaitTimeout` when fewer arrived in
        ``timeout`` seconds.
        """
        received: list[Message] = []
        for batch in self._batches(timeout):
            received += batch
            if len(received) >= count:
                return received
        __tracebackhide__ = True
        raise self._timeout(f"fewer than {count} messages", timeout)

    def delete(self) -> int:
        """Delete the inbox and its mail; return how many messages were purged."""
        return self.client.delete(self.address)

    def _batches(self, timeout: float) -> Iterator[list[Message]]:
        # Long-poll with a cursor: each call returns only messages newer than the
        # last one seen, as soon as one arrives. Ends with a last non-waiting call.
        deadline = time.monotonic() + timeout
        cursor: str | None = None
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            batch = self.client.messages(self.address, after=cursor, wait=min(remaining, MAX_WAIT))
            if batch:
                cursor = batch[-1].id
                yield batch
            elif remaining <= 0:
                return

    def _timeout(self, what: str, timeout: float) -> WaitTimeout:
        received = self.messages()
        lines = [f"{what} arrived at {self.address} within {timeout:g} s;"]
        if not received:
            lines.append("the inbox received no mail at all.")
        else:
            lines.append(f"the inbox received {len(received)} message(s):")
            lines += [f"  - {describe(message)}" for message in received]
        return WaitTimeout("\n".join(lines))


def describe(message: Message) -> str:
    """One line about a message: when it arrived, who sent it, and its subject."""
    sender = str(message.sender) if message.sender else message.envelope.mail_from or "<>"
    received = message.received_at.strftime("%H:%M:%S.%f")[:-3]
    return f"{received} from {sender}: {message.subject!r}"
