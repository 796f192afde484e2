"""A typed Python client for the HTTP API, and the inbox handle tests use.

It knows nothing of the server beyond its API URL, so it works against any
server of this package, in the same process or remote, over HTTP
(:mod:`.transports`) or the in-process transport. Every failure becomes one of
the package's exceptions, never a bare ``requests`` one. Every call comes
twice, blocking and awaitable (``..._async``): a one-line body that makes one
call, or drives one flow of calls (:mod:`.calls`; the waits are in
:mod:`.flows`, the explanations of a failed wait in :mod:`.explain`).

The module is long because the client and its :class:`Inbox` name each other
(the client makes inboxes, an inbox reads through its client), so they live
together, imported by the modules above without a circle, and because each of
their calls comes twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..models import Fault, Message, Refusal, Stage, format_timestamp, parse_timestamp
from ..parsing.match import Wanted
from ..transport import Answer, AsyncTransport, Transport
from .calls import Call, Flow, drive, drive_async, error_from, smtp_of
from .calls import quote as _quote
from .flows import (
    Check,
    Filter,
    Poll,
    assert_none,
    at_least,
    counted,
    describe,
    failure,
    plural,
    seconds,
    wait_for,
)
from .transports import HTTPTransport, InThread

if TYPE_CHECKING:
    from datetime import datetime

    from .readers import ReaderAccount

__all__ = ["HTTPTransport", "InThread", "Inbox", "TempInboxClient", "describe"]

# Extra time for the HTTP answer of a long-poll to come back, past its wait.
_NETWORK_MARGIN = 10.0
_DELETIONS_KEPT = 1000


Result = TypeVar("Result")


class TempInboxClient:
    """Speaks the HTTP API of a pytest-tempinbox server at ``api_url`` (ending in ``/api``).

    Requests go over HTTP through one pooled :class:`requests.Session`, unless a
    ``transport`` is given (the plugin passes a
    :class:`~pytest_tempinbox.server.in_process.LocalTransport` when the server runs in the
    same process). The awaitable calls go through the transport too when it
    is also an :class:`~pytest_tempinbox.transport.AsyncTransport` (the
    in-process one is), and otherwise through it in a worker thread
    (:class:`~pytest_tempinbox.client.transports.InThread`). ``timeout`` bounds
    each call that does not long-poll. Every method has an awaitable twin named
    ``..._async`` for ``async def`` tests, with the same results and errors.
    Use it as a context manager, or call :meth:`close`, to release its
    connections. For an ``https://`` URL, ``verify`` is the path of a PEM
    bundle of the CAs to trust (a server with ``--api-tls-cert`` from a private
    CA), or False; by default the system's CAs are.
    connections. ``token`` is a tenant's API token, for a server with tenants
    (``docs/tenants.md``): sent with every request, never shown.
    """

    def __init__(
        self,
        api_url: str,
        *,
        timeout: float = 30.0,
        transport: Transport | None = None,
        verify: bool | str | None = None,
        token: str | None = None,
    ) -> None:
        if transport is not None and token is not None:
            raise ValueError(
                "a token is for the client's own HTTP transport: give one or the other"
            )
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        self.transport = transport or HTTPTransport(self.api_url, verify=verify, token=token)
        """The blocking transport."""
        self.async_transport: AsyncTransport
        """The awaited transport: ``transport`` itself when it is also one, else it in a thread."""
        if isinstance(self.transport, AsyncTransport):
            self.async_transport = self.transport
        else:
            self.async_transport = InThread(self.transport)
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
        return self._drive(self._kept_info_flow())

    async def info_kept_async(self) -> dict[str, Any]:
        """Like :meth:`info_kept`, awaitable."""
        return await self._drive_async(self._kept_info_flow())

    def smtp_location(self) -> tuple[str, int]:
        """Return the SMTP host and port of the server, asked once (``GET /api/info``) and kept."""
        return smtp_of(self.info_kept())

    async def smtp_location_async(self) -> tuple[str, int]:
        """Like :meth:`smtp_location`, awaitable."""
        return smtp_of(await self.info_kept_async())

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
        return self._run(Call("GET", f"/messages/{_quote(email)}/{_quote(id)}/raw", _content))

    async def raw_async(self, email: str, id: str) -> bytes:
        """Like :meth:`raw`, awaitable."""
        path = f"/messages/{_quote(email)}/{_quote(id)}/raw"
        return await self._run_async(Call("GET", path, _content))

    def attachment(self, email: str, id: str, index: int) -> bytes:
        """Return the decoded bytes of attachment ``index`` of a message."""
        path = f"/messages/{_quote(email)}/{_quote(id)}/attachments/{index}"
        return self._run(Call("GET", path, _content))

    async def attachment_async(self, email: str, id: str, index: int) -> bytes:
        """Like :meth:`attachment`, awaitable."""
        path = f"/messages/{_quote(email)}/{_quote(id)}/attachments/{index}"
        return await self._run_async(Call("GET", path, _content))

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
        return self._run(Call("GET", f"/faults/{_quote(email)}", _fault_list))

    async def faults_async(self, email: str) -> list[Fault]:
        """Like :meth:`faults`, awaitable."""
        return await self._run_async(Call("GET", f"/faults/{_quote(email)}", _fault_list))

    def clear_faults(self, email: str) -> int:
        """Drop the inbox's pending faults; return how many there were."""
        return self._run(Call("DELETE", f"/faults/{_quote(email)}", _cleared))

    async def clear_faults_async(self, email: str) -> int:
        """Like :meth:`clear_faults`, awaitable."""
        return await self._run_async(Call("DELETE", f"/faults/{_quote(email)}", _cleared))

    def close(self) -> None:
        """Release the transport's connections."""
        self.transport.close()

    def __enter__(self) -> TempInboxClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TempInboxClient {self.api_url}>"

    def _info(self) -> Call[dict[str, Any]]:
        return Call("GET", "/info", _json_object)

    def _delete(self, email: str) -> Call[int]:
        def read(answer: Answer) -> int:
            from datetime import datetime, timezone

            if len(self._deleted) >= _DELETIONS_KEPT:
                del self._deleted[next(iter(self._deleted))]
            self._deleted[email.lower()] = datetime.now(timezone.utc)
            return _purged(answer)

        return Call("DELETE", f"/delete/{_quote(email)}", read)

    def _refused(
        self, since: datetime | None, similar_to: str | None, limit: int | None
    ) -> Call[list[Refusal]]:
        params: dict[str, str] = {}
        if since is not None:
            params["since"] = format_timestamp(since, milliseconds=True)
        if similar_to is not None:
            params["similar_to"] = similar_to
        if limit is not None:
            params["limit"] = str(limit)

        def read(answer: Answer) -> list[Refusal]:
            return [Refusal.from_json(item) for item in answer.json()]

        return Call("GET", "/refused", read, params=params)

    def _generate(self, prefix: str | None, domain: str | None, address: str | None) -> Call[Inbox]:
        options = {key: value for key, value in (("prefix", prefix), ("domain", domain)) if value}
        if address is not None:  # "" too: the server says why it is no address
            options["address"] = address
        body = json.dumps(options).encode() if options else None
        return Call("POST", "/generate", self._inbox, body=body)

    def _inbox(self, answer: Answer) -> Inbox:
        created = answer.json()
        created_at = parse_timestamp(created["created_at"])
        return Inbox(
            created["email"], self, created_at=created_at, password=created.get("password")
        )

    def _messages(
        self,
        email: str,
        after: str | None,
        wait: float | None,
        subject: str | None = None,
        sender: str | None = None,
        text: str | None = None,
        subaddress: str | None = None,
    ) -> Call[list[Message]]:
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

        return Call("GET", f"/messages/{_quote(email)}", read, params=params, timeout=timeout)

    def _message(self, email: str, id: str) -> Call[Message]:
        def read(answer: Answer) -> Message:
            return Message.from_json(answer.json(), source=self)

        return Call("GET", f"/messages/{_quote(email)}/{_quote(id)}", read)

    def _add_fault(self, email: str, fault: Fault) -> Call[Fault]:
        body = json.dumps(fault.to_json()).encode()
        return Call("POST", f"/faults/{_quote(email)}", _fault, body=body)

    def _kept_info_flow(self) -> Flow[dict[str, Any]]:
        if self._kept_info is None:
            self._kept_info = yield self._info()
        return self._kept_info

    def _drive(self, flow: Flow[Result]) -> Result:
        """Run a flow of calls (see :mod:`.calls`), blocking."""
        __tracebackhide__ = True
        return drive(flow, self._run)

    async def _drive_async(self, flow: Flow[Result]) -> Result:
        """Run a flow of calls, awaited."""
        __tracebackhide__ = True
        return await drive_async(flow, self._run_async)

    def _run(self, call: Call[Result]) -> Result:
        method, path, params, body = call.method, call.path, call.params, call.body
        timeout = call.timeout or self.timeout
        answer = self.transport.request(method, path, params=params, body=body, timeout=timeout)
        return self._read(call, answer)

    async def _run_async(self, call: Call[Result]) -> Result:
        method, path, params, body = call.method, call.path, call.params, call.body
        timeout = call.timeout or self.timeout
        transport = self.async_transport
        answer = await transport.request_async(
            method, path, params=params, body=body, timeout=timeout
        )
        return self._read(call, answer)

    def _read(self, call: Call[Result], answer: Answer) -> Result:
        if answer.status >= 400:
            raise error_from(answer, f"{call.method} {self.api_url}{call.path}")
        return call.read(answer)


class Inbox:
    """One disposable address and what it received; ``str(inbox)`` is the address.

    Hand :attr:`address` to the application under test, then read the mail with
    :meth:`messages` or wait for it with :meth:`wait_for_message` (in ``async``
    tests, :meth:`wait_for_message_async`).
    """

    def __init__(
        self,
        address: str,
        client: TempInboxClient,
        *,
        created_at: datetime | None = None,
        password: str | None = None,
    ) -> None:
        self.address = address
        """The generated email address, lowercase: give it to the application under test."""
        self.client = client
        """The client this inbox reads through."""
        self.created_at = created_at
        """When the server created the inbox, if known: a failed wait lists mail refused since."""
        self.password = password
        """The inbox's IMAP and POP3 password, as the server handed it out (None if unknown)."""

    def __str__(self) -> str:
        return self.address

    @property
    def imap(self) -> ReaderAccount:
        """Host, port, user and password to read this inbox over IMAP (docs/readers.md)."""
        return self._account("imap")

    @property
    def pop3(self) -> ReaderAccount:
        """Host, port, user and password to read this inbox over POP3 (docs/readers.md)."""
        return self._account("pop3")

    def _account(self, protocol: str) -> ReaderAccount:
        from .readers import reader_account

        host, info = self.client.smtp_location()[0], self.client.info_kept()
        return reader_account(info, host, self.address, self.password, protocol)

    def __repr__(self) -> str:
        return f"<Inbox {self.address}>"

    def messages(self) -> list[Message]:
        """Return every message received so far, oldest first."""
        return self.client.messages(self.address)

    async def messages_async(self) -> list[Message]:
        """Return every message received so far, oldest first, without blocking the loop."""
        return await self.client.messages_async(self.address)

    def wait_for_message(
        self,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> Message:
        """Return the first message, oldest first, that passes every given filter.

        ``subject``: the subject contains this text (case-sensitive). ``sender``:
        the ``From`` address contains this text (case-insensitive). ``text``: the
        text body or the HTML's visible text contains this text (case-sensitive,
        runs of white space read as one space). Each of the three may instead be
        a compiled :class:`re.Pattern`, searched. ``subaddress``: the message
        was sent to the sub-address ``name+subaddress@domain`` of this inbox's
        ``name@domain`` (any case, for ASCII). ``match``: this callable returns
        true for the message. String filters are applied by the server, so only
        matching messages are downloaded.

        Waits up to ``timeout`` seconds with the server's long-poll (no
        sleeping); then raises :class:`~pytest_tempinbox.errors.WaitTimeout`,
        whose message lists what the inbox did receive, and what the server
        and the process can tell of where the mail went: mail the server
        refused while the test ran (to any address), Django's locmem outbox,
        the SMTP host and port, a running event loop this call blocked.
        ``timeout`` that is no number (``"1"``) is a :class:`TypeError`. It
        blocks: in an ``async def`` test use :meth:`wait_for_message_async`.
        """
        __tracebackhide__ = True
        timeout, wanted = (
            seconds("timeout", timeout),
            Filter(subject, sender, match, text, subaddress),
        )
        return self.client._drive(self._first(wanted, timeout, "wait_for_message"))

    async def wait_for_message_async(
        self,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> Message:
        """Like :meth:`wait_for_message`, awaitable: the event loop runs while it waits.

        Cancelling it (``asyncio.wait_for``, an anyio cancel scope) ends the wait
        at once.
        """
        __tracebackhide__ = True
        timeout, wanted = (
            seconds("timeout", timeout),
            Filter(subject, sender, match, text, subaddress),
        )
        return await self.client._drive_async(self._first(wanted, timeout))

    def wait_for_messages(
        self,
        count: int,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> list[Message]:
        """Wait until at least ``count`` messages pass the filters; return those, oldest first.

        The filters are those of :meth:`wait_for_message`; without any, every
        message counts. Raises :class:`~pytest_tempinbox.errors.WaitTimeout`
        when fewer arrived in ``timeout`` seconds. It blocks: in an
        ``async def`` test use :meth:`wait_for_messages_async`.
        """
        __tracebackhide__ = True
        timeout, number = seconds("timeout", timeout), counted(count)
        wanted = Filter(subject, sender, match, text, subaddress)
        return self.client._drive(self._many(number, wanted, timeout, "wait_for_messages"))

    async def wait_for_messages_async(
        self,
        count: int,
        *,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        text: Wanted | None = None,
        subaddress: str | None = None,
        timeout: float = 10.0,
    ) -> list[Message]:
        """Like :meth:`wait_for_messages`, awaitable: the event loop runs while it waits."""
        __tracebackhide__ = True
        timeout, number = seconds("timeout", timeout), counted(count)
        wanted = Filter(subject, sender, match, text, subaddress)
        return await self.client._drive_async(self._many(number, wanted, timeout))

    def assert_no_message(
        self,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        *,
        text: Wanted | None = None,
        subaddress: str | None = None,
        within: float = 1.0,
    ) -> None:
        """Pass when no message passing the filters is in the inbox after ``within`` seconds.

        The filters are those of :meth:`wait_for_message`; without any, every
        message counts. A message that was already there counts too. It waits
        with the server's long-poll, never by sleeping and polling, so it fails
        as soon as a matching message arrives, raising
        :class:`~pytest_tempinbox.errors.MailAssertionError` that shows it and
        says, by its received time, whether it was already there when the
        check began or how long after it came; it passes after ``within``
        seconds. ``within`` that is no number is a :class:`TypeError`. It
        blocks: in an ``async def`` test use :meth:`assert_no_message_async`.
        """
        __tracebackhide__ = True
        within, wanted = seconds("within", within), Filter(subject, sender, match, text, subaddress)
        self.client._drive(self._none(wanted, within))

    async def assert_no_message_async(
        self,
        subject: Wanted | None = None,
        sender: Wanted | None = None,
        match: Callable[[Message], bool] | None = None,
        *,
        text: Wanted | None = None,
        subaddress: str | None = None,
        within: float = 1.0,
    ) -> None:
        """Like :meth:`assert_no_message`, awaitable: the event loop runs while it waits."""
        __tracebackhide__ = True
        within, wanted = seconds("within", within), Filter(subject, sender, match, text, subaddress)
        await self.client._drive_async(self._none(wanted, within))

    def delete(self) -> int:
        """Delete the inbox and its mail; return how many messages were purged."""
        return self.client.delete(self.address)

    async def delete_async(self) -> int:
        """Like :meth:`delete`, awaitable."""
        return await self.client.delete_async(self.address)

    def fail_next(
        self,
        code: int = 451,
        message: str | None = None,
        *,
        times: int = 1,
        stage: Stage = "rcpt",
    ) -> Fault:
        """Answer the next ``times`` deliveries to this address with the SMTP reply ``code``.

        ``stage="rcpt"``: the ``RCPT TO`` of this address gets the reply (other
        recipients of the transaction are not affected); ``stage="data"``: the
        whole DATA gets it, and nobody in that transaction gets the message.
        ``code`` is a 4xx (temporary) or 5xx (permanent) reply code;
        ``message`` its text, 1-200 printable ASCII characters, to which the
        server adds an enhanced status code (``4.0.0``, ``5.0.0``) if it has none.
        A 421 also closes the connection. Faults apply in the order they were
        made; returns this one as the server keeps it.
        """
        return self.client.add_fault(self.address, _reply(code, message, times, stage))

    async def fail_next_async(
        self,
        code: int = 451,
        message: str | None = None,
        *,
        times: int = 1,
        stage: Stage = "rcpt",
    ) -> Fault:
        """Like :meth:`fail_next`, awaitable."""
        fault = _reply(code, message, times, stage)
        return await self.client.add_fault_async(self.address, fault)

    def delay_next(self, seconds: float, *, times: int = 1, stage: Stage = "data") -> Fault:
        """Hold the answer to the next ``times`` deliveries to this address for ``seconds``.

        ``stage="data"``: the message is stored and answered ``250`` after the
        delay, only if the client is still connected then (a client that timed
        out and left has it stored nowhere); ``stage="rcpt"``: the ``RCPT TO``
        answer waits. ``seconds`` is above 0, up to 60.
        """
        fault = Fault(stage=stage, delay=seconds, times=times)
        return self.client.add_fault(self.address, fault)

    async def delay_next_async(
        self, seconds: float, *, times: int = 1, stage: Stage = "data"
    ) -> Fault:
        """Like :meth:`delay_next`, awaitable."""
        fault = Fault(stage=stage, delay=seconds, times=times)
        return await self.client.add_fault_async(self.address, fault)

    def disconnect_next(self, *, times: int = 1, stage: Stage = "data") -> Fault:
        """Drop the connection, without an answer, on the next ``times`` deliveries to this address.

        ``stage="data"``: after the message text, which is stored for nobody;
        ``stage="rcpt"``: at this address's ``RCPT TO``.
        """
        fault = Fault(stage=stage, disconnect=True, times=times)
        return self.client.add_fault(self.address, fault)

    async def disconnect_next_async(self, *, times: int = 1, stage: Stage = "data") -> Fault:
        """Like :meth:`disconnect_next`, awaitable."""
        fault = Fault(stage=stage, disconnect=True, times=times)
        return await self.client.add_fault_async(self.address, fault)

    def faults(self) -> list[Fault]:
        """Return the pending faults, first to apply first; ``times`` counts what is left."""
        return self.client.faults(self.address)

    async def faults_async(self) -> list[Fault]:
        """Like :meth:`faults`, awaitable."""
        return await self.client.faults_async(self.address)

    def clear_faults(self) -> int:
        """Drop the pending faults; return how many there were."""
        return self.client.clear_faults(self.address)

    async def clear_faults_async(self) -> int:
        """Like :meth:`clear_faults`, awaitable."""
        return await self.client.clear_faults_async(self.address)

    def _first(self, wanted: Filter, timeout: float, blocking: str | None = None) -> Flow[Message]:
        """The flow of ``wait_for_message``; ``blocking``: its name, when driven blocking."""
        what = f"no {wanted}"
        return self._wait(wanted, wanted.first, timeout, what, None, blocking)

    def _many(
        self, number: int, wanted: Filter, timeout: float, blocking: str | None = None
    ) -> Flow[list[Message]]:
        """The flow of ``wait_for_messages``."""
        what = f"fewer than {number} {plural(wanted)}"
        return self._wait(wanted, at_least(number, wanted), timeout, what, number, blocking)

    def _wait(
        self,
        wanted: Filter,
        check: Check[Result],
        timeout: float,
        what: str,
        number: int | None,
        blocking: str | None,
    ) -> Flow[Result]:
        def text(received: list[Message]) -> str:
            return failure(self.address, what, timeout, received, wanted, number)

        def listing() -> Call[list[Message]]:
            return self.client._messages(self.address, None, None)

        def notes() -> Flow[list[str]]:
            # Only a wait that fails explains itself: its module loads then.
            from .explain import explain_flow, loop_is_running

            # A blocking wait on a thread whose event loop runs held up mail sent from it.
            blocked = blocking if blocking is not None and loop_is_running() else None
            return explain_flow(self, blocking=blocked)

        return wait_for(self._poll(wanted), check, timeout, text, listing, notes)

    def _none(self, wanted: Filter, within: float) -> Flow[None]:
        """The flow of ``assert_no_message``."""
        return assert_none(self.address, wanted, self._poll(wanted), within)

    def _poll(self, wanted: Filter) -> Poll:
        """One long-poll for the messages passing ``wanted``'s string filters, after a cursor."""
        filters = wanted.server_side
        return lambda cursor, wait: self.client._messages(self.address, cursor, wait, **filters)


def _reply(code: int, message: str | None, times: int, stage: Stage) -> Fault:
    return Fault(stage=stage, code=code, message=message, times=times)


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


_error_from = error_from  # its name before it moved to .calls
