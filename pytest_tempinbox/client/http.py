"""A typed Python client for the HTTP API, and the inbox handle tests use.

The only module that imports requests, and only when it speaks HTTP. It knows
nothing of the server beyond its API URL, so it works against any server of this
package, in the same process or remote. Every failure becomes one of the
package's exceptions, never a bare ``requests`` one. The module is long because
every call comes twice, blocking and awaitable (``..._async``), over one
request path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote

from .._net import is_loopback_url
from ..errors import PROBLEMS, ServerUnavailable, TempInboxError
from ..models import Fault, Message, Refusal, format_timestamp, parse_timestamp
from ..transport import Answer, Transport
from .inbox import Inbox, describe, seconds

if TYPE_CHECKING:
    from datetime import datetime

    import requests

__all__ = ["HTTPTransport", "Inbox", "TempInboxClient", "describe"]

# Extra time for the HTTP answer of a long-poll to come back, past its wait.
_NETWORK_MARGIN = 10.0
_DELETIONS_KEPT = 1000


Result = TypeVar("Result")


class HTTPTransport:
    """Carries the client's requests over HTTP, with one pooled :class:`requests.Session`.

    Awaited, a request runs in a worker thread, so the caller's event loop goes
    on; cancelling the caller does not end the request (it is not
    ``cancellable``), so waits keep their long-polls short.
    """

    cancellable = False

    def __init__(self, api_url: str, session: requests.Session | None = None) -> None:
        import requests  # here, so that the in-process transport never pays for it

        self._requests = requests
        self.api_url = api_url.rstrip("/")
        self.session = session or requests.Session()
        if session is None and is_loopback_url(self.api_url):
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

    async def request_async(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        """Like :meth:`request`, in a worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, lambda: self.request(method, path, params=params, body=body, timeout=timeout)
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self.session.close()


class _Call(Generic[Result]):
    """One API call, described apart from how it is carried (blocking or awaited)."""

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = ("body", "method", "params", "path", "read", "timeout")

    def __init__(
        self,
        method: str,
        path: str,
        read: Callable[[Answer], Result],
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float | None = None,
    ) -> None:
        self.method = method
        self.path = path
        self.read = read
        self.params = params
        self.body = body
        self.timeout = timeout


class TempInboxClient:
    """Speaks the HTTP API of a pytest-tempinbox server at ``api_url`` (ending in ``/api``).

    Requests go over HTTP through one pooled :class:`requests.Session`, unless a
    ``transport`` is given (the plugin passes a
    :class:`~pytest_tempinbox.server.in_process.LocalTransport` when the server runs in the
    same process). ``timeout`` bounds each call that does not long-poll. Every
    method has an awaitable twin named ``..._async`` for ``async def`` tests,
    with the same results and errors. Use it as a context manager, or call
    :meth:`close`, to release its connections.
    """

    def __init__(
        self, api_url: str, *, timeout: float = 30.0, transport: Transport | None = None
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        self.transport = transport or HTTPTransport(self.api_url)
        self._kept_info: dict[str, Any] | None = None
        # The inboxes this client deleted lately, for a failed wait to say so.
        self._deleted: dict[str, datetime] = {}

    def info(self) -> dict[str, Any]:
        """Return ``GET /api/info``: the version, the SMTP listener, domains and limits."""
        return self._run(self._info())

    async def info_async(self) -> dict[str, Any]:
        """Like :meth:`info`, awaitable."""
        return await self._run_async(self._info())

    def info_kept(self) -> dict[str, Any]:
        """Return :meth:`info`, asked once and kept: what does not change while a server runs."""
        if self._kept_info is None:
            self._kept_info = self.info()
        return self._kept_info

    async def info_kept_async(self) -> dict[str, Any]:
        """Like :meth:`info_kept`, awaitable."""
        if self._kept_info is None:
            self._kept_info = await self.info_async()
        return self._kept_info

    def smtp_location(self) -> tuple[str, int]:
        """Return the SMTP host and port of the server, asked once (``GET /api/info``) and kept."""
        return _smtp_of(self.info_kept())

    async def smtp_location_async(self) -> tuple[str, int]:
        """Like :meth:`smtp_location`, awaitable."""
        return _smtp_of(await self.info_kept_async())

    def deleted(self, email: str) -> datetime | None:
        """When this client deleted the inbox at ``email`` (any case), if it did; None otherwise.

        It remembers its last 1,000 deletions: a failed wait names mail the
        server refused for an inbox the test had deleted.
        """
        return self._deleted.get(email.lower())

    def refused(
        self,
        *,
        since: datetime | None = None,
        similar_to: str | None = None,
        limit: int | None = None,
    ) -> list[Refusal]:
        """Return the recipients the SMTP server refused lately (``GET /api/refused``).

        Newest first; ``since`` keeps those refused at or after it, ``similar_to``
        an address those like it, the most similar first; ``limit`` (1-1000,
        default 100) is how many at most. The server remembers its last 1,000
        refusals for 10 minutes.
        """
        return self._run(self._refused(since, similar_to, limit))

    async def refused_async(
        self,
        *,
        since: datetime | None = None,
        similar_to: str | None = None,
        limit: int | None = None,
    ) -> list[Refusal]:
        """Like :meth:`refused`, awaitable."""
        return await self._run_async(self._refused(since, similar_to, limit))

    def generate(
        self, prefix: str | None = None, domain: str | None = None, *, address: str | None = None
    ) -> Inbox:
        """Create an inbox at a brand new address and return its handle.

        ``address`` creates exactly that inbox instead (for test data with fixed
        addresses): its domain must be one of the server's, and it goes without
        ``prefix`` and ``domain``. The server raises
        :class:`~pytest_tempinbox.errors.AddressTaken` when a live inbox has it,
        :class:`~pytest_tempinbox.errors.InvalidAddress` for a local part other
        than a plain dot-atom, and
        :class:`~pytest_tempinbox.errors.InvalidRequest` for another domain.
        """
        return self._run(self._generate(prefix, domain, address))

    async def generate_async(
        self, prefix: str | None = None, domain: str | None = None, *, address: str | None = None
    ) -> Inbox:
        """Like :meth:`generate`, awaitable."""
        return await self._run_async(self._generate(prefix, domain, address))

    def messages(
        self,
        email: str,
        *,
        after: str | None = None,
        wait: float | None = None,
        subject: str | None = None,
        sender: str | None = None,
        text: str | None = None,
        subaddress: str | None = None,
    ) -> list[Message]:
        """Return the inbox's messages, oldest first.

        ``after`` keeps only those received after the message with that id;
        ``wait`` (0-60 s) holds the call until there is one, or the time is up.
        The server filters: ``subject`` is contained in the subject
        (case-sensitive), ``sender`` in the ``From`` address (case-insensitive),
        ``text`` in the text body or the HTML's visible text (white space
        collapsed), by the rules of :mod:`pytest_tempinbox.parsing.match`;
        ``subaddress`` keeps the messages sent to ``name+subaddress@domain``
        (any case, for ASCII), which the inbox ``name@domain`` receives; with
        ``wait``, the call lasts until a message passing them all arrives. An
        empty string is no filter; one over 1,000 characters raises
        :class:`~pytest_tempinbox.errors.InvalidRequest`.
        """
        return self._run(self._messages(email, after, wait, subject, sender, text, subaddress))

    async def messages_async(
        self,
        email: str,
        *,
        after: str | None = None,
        wait: float | None = None,
        subject: str | None = None,
        sender: str | None = None,
        text: str | None = None,
        subaddress: str | None = None,
    ) -> list[Message]:
        """Like :meth:`messages`, awaitable: the event loop runs while it waits."""
        call = self._messages(email, after, wait, subject, sender, text, subaddress)
        return await self._run_async(call)

    def message(self, email: str, id: str) -> Message:
        """Return one message of the inbox."""
        return self._run(self._message(email, id))

    async def message_async(self, email: str, id: str) -> Message:
        """Like :meth:`message`, awaitable."""
        return await self._run_async(self._message(email, id))

    def raw(self, email: str, id: str) -> bytes:
        """Return a message exactly as the server received it."""
        return self._run(_Call("GET", f"/messages/{_quote(email)}/{_quote(id)}/raw", _content))

    async def raw_async(self, email: str, id: str) -> bytes:
        """Like :meth:`raw`, awaitable."""
        path = f"/messages/{_quote(email)}/{_quote(id)}/raw"
        return await self._run_async(_Call("GET", path, _content))

    def attachment(self, email: str, id: str, index: int) -> bytes:
        """Return the decoded bytes of attachment ``index`` of a message."""
        path = f"/messages/{_quote(email)}/{_quote(id)}/attachments/{index}"
        return self._run(_Call("GET", path, _content))

    async def attachment_async(self, email: str, id: str, index: int) -> bytes:
        """Like :meth:`attachment`, awaitable."""
        path = f"/messages/{_quote(email)}/{_quote(id)}/attachments/{index}"
        return await self._run_async(_Call("GET", path, _content))

    def html_url(self, email: str, id: str, *, remote_images: bool = False) -> str:
        """The URL of a message's HTML as its recipient sees it, on the server's viewer."""
        root = self.api_url.removesuffix("/api")
        query = "?images=remote" if remote_images else ""
        return f"{root}/viewer/messages/{_quote(email)}/{_quote(id)}/html{query}"

    def delete(self, email: str) -> int:
        """Delete the inbox and its mail; return how many messages were purged."""
        return self._run(self._delete(email))

    async def delete_async(self, email: str) -> int:
        """Like :meth:`delete`, awaitable."""
        return await self._run_async(self._delete(email))

    def add_fault(self, email: str, fault: Fault) -> Fault:
        """Queue ``fault`` for the next deliveries to the inbox; return it as the server keeps it.

        The server refuses a malformed fault with
        :class:`~pytest_tempinbox.errors.InvalidRequest`, and one over the
        inbox's 100 pending faults with :class:`~pytest_tempinbox.errors.TooManyFaults`.
        """
        return self._run(self._add_fault(email, fault))

    async def add_fault_async(self, email: str, fault: Fault) -> Fault:
        """Like :meth:`add_fault`, awaitable."""
        return await self._run_async(self._add_fault(email, fault))

    def faults(self, email: str) -> list[Fault]:
        """Return the inbox's pending faults, first to apply first (``times``: what is left)."""
        return self._run(_Call("GET", f"/faults/{_quote(email)}", _fault_list))

    async def faults_async(self, email: str) -> list[Fault]:
        """Like :meth:`faults`, awaitable."""
        return await self._run_async(_Call("GET", f"/faults/{_quote(email)}", _fault_list))

    def clear_faults(self, email: str) -> int:
        """Drop the inbox's pending faults; return how many there were."""
        return self._run(_Call("DELETE", f"/faults/{_quote(email)}", _cleared))

    async def clear_faults_async(self, email: str) -> int:
        """Like :meth:`clear_faults`, awaitable."""
        return await self._run_async(_Call("DELETE", f"/faults/{_quote(email)}", _cleared))

    def close(self) -> None:
        """Release the transport's connections."""
        self.transport.close()

    def __enter__(self) -> TempInboxClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TempInboxClient {self.api_url}>"

    def _info(self) -> _Call[dict[str, Any]]:
        return _Call("GET", "/info", _json_object)

    def _delete(self, email: str) -> _Call[int]:
        def read(answer: Answer) -> int:
            from datetime import datetime, timezone

            if len(self._deleted) >= _DELETIONS_KEPT:
                del self._deleted[next(iter(self._deleted))]
            self._deleted[email.lower()] = datetime.now(timezone.utc)
            return _purged(answer)

        return _Call("DELETE", f"/delete/{_quote(email)}", read)

    def _refused(
        self, since: datetime | None, similar_to: str | None, limit: int | None
    ) -> _Call[list[Refusal]]:
        params: dict[str, str] = {}
        if since is not None:
            params["since"] = format_timestamp(since, milliseconds=True)
        if similar_to is not None:
            params["similar_to"] = similar_to
        if limit is not None:
            params["limit"] = str(limit)

        def read(answer: Answer) -> list[Refusal]:
            return [Refusal.from_json(item) for item in answer.json()]

        return _Call("GET", "/refused", read, params=params)

    def _generate(
        self, prefix: str | None, domain: str | None, address: str | None
    ) -> _Call[Inbox]:
        options = {key: value for key, value in (("prefix", prefix), ("domain", domain)) if value}
        if address is not None:  # "" too: the server says why it is no address
            options["address"] = address
        body = json.dumps(options).encode() if options else None
        return _Call("POST", "/generate", self._inbox, body=body)

    def _inbox(self, answer: Answer) -> Inbox:
        created = answer.json()
        return Inbox(created["email"], self, created_at=parse_timestamp(created["created_at"]))

    def _messages(
        self,
        email: str,
        after: str | None,
        wait: float | None,
        subject: str | None = None,
        sender: str | None = None,
        text: str | None = None,
        subaddress: str | None = None,
    ) -> _Call[list[Message]]:
        params: dict[str, str] = {}
        if after is not None:
            params["after"] = after
        filters = (("subject", subject), ("from", sender), ("text", text))
        for name, value in (*filters, ("subaddress", subaddress)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"the server filters by strings only, not {type(value).__name__}")
            if value:  # "" filters nothing, as on the server
                params[name] = value
        timeout = None
        if wait is not None and seconds("wait", wait):
            params["wait"] = f"{wait:.3f}"
            timeout = wait + _NETWORK_MARGIN

        def read(answer: Answer) -> list[Message]:
            return [Message.from_json(item, source=self) for item in answer.json()]

        return _Call("GET", f"/messages/{_quote(email)}", read, params=params, timeout=timeout)

    def _message(self, email: str, id: str) -> _Call[Message]:
        def read(answer: Answer) -> Message:
            return Message.from_json(answer.json(), source=self)

        return _Call("GET", f"/messages/{_quote(email)}/{_quote(id)}", read)

    def _add_fault(self, email: str, fault: Fault) -> _Call[Fault]:
        body = json.dumps(fault.to_json()).encode()
        return _Call("POST", f"/faults/{_quote(email)}", _fault, body=body)

    def _run(self, call: _Call[Result]) -> Result:
        answer = self.transport.request(
            call.method,
            call.path,
            params=call.params,
            body=call.body,
            timeout=call.timeout or self.timeout,
        )
        return self._read(call, answer)

    async def _run_async(self, call: _Call[Result]) -> Result:
        answer = await self.transport.request_async(
            call.method,
            call.path,
            params=call.params,
            body=call.body,
            timeout=call.timeout or self.timeout,
        )
        return self._read(call, answer)

    def _read(self, call: _Call[Result], answer: Answer) -> Result:
        if answer.status >= 400:
            raise _error_from(answer, f"{call.method} {self.api_url}{call.path}")
        return call.read(answer)


def _smtp_of(info: dict[str, Any]) -> tuple[str, int]:
    return str(info["smtp"]["host"]), int(info["smtp"]["port"])


def _content(answer: Answer) -> bytes:
    return answer.content


def _purged(answer: Answer) -> int:
    purged: int = answer.json()["purged"]
    return purged


def _fault(answer: Answer) -> Fault:
    return Fault.from_json(answer.json())


def _fault_list(answer: Answer) -> list[Fault]:
    return [Fault.from_json(item) for item in answer.json()]


def _cleared(answer: Answer) -> int:
    cleared: int = answer.json()["cleared"]
    return cleared


def _json_object(answer: Answer) -> dict[str, Any]:
    data: dict[str, Any] = answer.json()
    return data


def _error_from(answer: Answer, request: str) -> TempInboxError:
    try:
        problem = answer.json()
        code, detail = problem["code"], problem["detail"]
    except (ValueError, KeyError, TypeError):
        text = answer.content[:200].decode("utf-8", "replace")
        return ServerUnavailable(f"{request} answered {answer.status}: {text}")
    # Every code the server sends is in PROBLEMS; one from a newer server is an error still.
    error = PROBLEMS[code][1](detail) if code in PROBLEMS else TempInboxError(detail)
    error.status = answer.status
    return error


def _quote(segment: str) -> str:
    return quote(segment, safe="@+")
