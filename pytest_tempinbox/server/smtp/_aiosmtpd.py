"""aiosmtpd's private parts, fenced: the one module of the package that touches them.

Written against aiosmtpd 1.4.6 (``pyproject.toml`` bounds it below 1.5);
``tests/test_aiosmtpd_internals.py`` fails, naming the aiosmtpd version and the
name, the day a release changes one of them. Everything else in the package
uses aiosmtpd's public API and what this module offers: :class:`SMTPProtocol`
(aiosmtpd's protocol with named hooks), :class:`QuietSession`,
:func:`dispatch_names` and :func:`keep_signature`.

The private names relied on, and why:

- ``SMTP._getaddr(arg) -> (address, rest)``: MAIL and RCPT read their path with
  it. Overridden to call :meth:`SMTPProtocol.read_path`, so that the project can
  read paths without the class aiosmtpd defines on every call, and without its
  ``451`` on a path cut short.
- ``SMTP._create_session()`` and ``SMTP._create_envelope()``: the factories of
  a connection's session and of each transaction's envelope. Overridden to make
  a :class:`QuietSession` and an :attr:`SMTPProtocol.envelope_class`.
- ``SMTP._reset_timeout(duration=None)`` and ``SMTP._timeout_duration``: the
  idle timer and its length. :meth:`SMTPProtocol.pause` holds the timer off for
  as long as it holds an answer back.
- ``SMTP._original_transport``: the TCP transport under STARTTLS (None before).
  :meth:`SMTPProtocol.close_now` closes it; ``connection_made`` tells by it the
  second call aiosmtpd makes after STARTTLS from a new connection.
- ``SMTP._reader`` (aiosmtpd's :class:`asyncio.StreamReader`) and asyncio's
  ``StreamReader._limit``: the buffer limit a line is read with. aiosmtpd reads
  command lines and DATA lines with one limit; ``smtp_DATA`` raises it for DATA
  only, and reads DATA's lines with the fast lane's
  :class:`~pytest_tempinbox.server.smtp.data.DataReader`, so that both lanes
  judge them alike (``SMTP._writer`` is closed when the connection is lost
  there, as aiosmtpd does). :meth:`SMTPProtocol.take_over` feeds the reader
  the bytes a connection's earlier protocol left unread.
- ``SMTP.command_size_limits``: each EHLO adds 26 (SIZE) and 10 (SMTPUTF8) to
  MAIL's line limit; :meth:`SMTPProtocol.take_over` adds what the EHLO commands
  answered before it would have.
- ``SMTP._smtp_methods``: the commands' methods by name, which
  ``_handle_client`` calls each known command with; :meth:`SMTPProtocol.limit_commands`
  wraps them to count the commands of a connection.
- ``SMTP._handle_client`` begins with the greeting: after
  :meth:`SMTPProtocol.take_over`, the first :meth:`SMTPProtocol.push` is skipped.

And what aiosmtpd does with public names, relied on likewise:

- ``SMTP.__init__`` builds the command, AUTH and hook tables from ``dir()`` and
  :func:`inspect.getmembers` of the protocol and the handler, once per
  connection, and reads :func:`inspect.signature` of ``handle_EHLO``: hence
  :func:`dispatch_names` and :func:`keep_signature`.
- ``SMTP.connection_lost`` takes for granted what ``connection_made`` set up:
  a refused connection must not reach it.
- ``SMTP.connection_lost`` cancels the session's task: :meth:`SMTPProtocol.drop`
  ends with it.
- ``Session.login_data`` is a property that logs a deprecation warning each
  time AUTH sets it: :class:`QuietSession` makes it a plain attribute.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, AnyStr, cast

from aiosmtpd.smtp import SMTP, Envelope, Session, syntax

from ._hook_names import dispatch_names, keep_signature
from .data import DataReader

__all__ = [
    "ASSUMED_VERSION",
    "ENVELOPE_STATE",
    "SESSION_STATE",
    "QuietSession",
    "SMTPProtocol",
    "dispatch_names",
    "keep_signature",
]

# The aiosmtpd release this module was written against, and tested with.
ASSUMED_VERSION = "1.4.6"

# What a connection's earlier protocol hands over: aiosmtpd's Session and Envelope
# attributes that the commands so far have set.
SESSION_STATE = ("host_name", "extended_smtp", "transcript")
ENVELOPE_STATE = (
    "mail_from",
    "mail_options",
    "smtp_utf8",
    "content",
    "original_content",
    "rcpt_tos",
    "rcpt_options",
)
# Seconds a dropped session may take to end; closing it ends it at once.
_DROP_GRACE = 5.0


class QuietSession(Session):
    """aiosmtpd's session, without the deprecation warning AUTH logs through it.

    aiosmtpd logs a warning whenever AUTH sets ``Session.login_data``; a plain
    attribute keeps every authenticated session from logging it.
    """

    login_data: Any = None
    transcript: Any = None
    """The session's :class:`~.transcript.Transcript`, when the server keeps them."""


class SMTPProtocol(SMTP):
    """aiosmtpd's protocol, its private parts behind named hooks.

    A subclass says how MAIL and RCPT read a path (:meth:`read_path`), which
    envelope a transaction gets (:attr:`envelope_class`), and whether a new
    connection is served (:meth:`admit`, then :meth:`release` when it ends). DATA
    lines are judged against :attr:`data_line_limit`, and read in pieces of about
    that size; command lines with the smaller limit the reader was made with.
    """

    envelope_class: type[Envelope] = Envelope
    """The class of each transaction's envelope."""
    data_line_limit = 1000
    """Octets per DATA line, CRLF included, a transparency dot not (RFC 5321 4.5.3.1.6)."""

    def __init__(self, handler: Any, **options: Any) -> None:
        super().__init__(handler, **options)
        self._refused = False
        self._greeted_elsewhere = False

    def take_over(
        self,
        transport: asyncio.BaseTransport,
        session: Any,
        envelope: Any,
        ehlos: int,
        unread: bytes,
    ) -> None:
        """Serve a connection from the middle: another protocol greeted the client and served it.

        ``session`` and ``envelope`` are the connection's as they stand, after
        ``ehlos`` EHLO commands (objects with the attributes of aiosmtpd's
        :class:`Session` and :class:`Envelope` that :data:`SESSION_STATE` and
        :data:`ENVELOPE_STATE` name); ``unread`` is what the client sent that
        is not answered yet. The caller has made this the transport's protocol.
        """
        self._greeted_elsewhere = True
        self.connection_made(transport)
        if self._refused:
            return
        assert self.session is not None
        assert self.envelope is not None
        for name in SESSION_STATE:
            setattr(self.session, name, getattr(session, name))
        for name in ENVELOPE_STATE:
            setattr(self.envelope, name, getattr(envelope, name))
        if hasattr(envelope, "faulted") and hasattr(self.envelope, "faulted"):
            self.envelope.faulted = envelope.faulted  # the addresses a fault struck (ours)
        for _ in range(ehlos):  # what aiosmtpd's EHLO adds to MAIL's line limit, each time
            if self.data_size_limit:
                self.command_size_limits["MAIL"] += 26
            if self.enable_SMTPUTF8:
                self.command_size_limits["MAIL"] += 10
        if unread:
            self._reader.feed_data(unread)

    async def push(self, status: AnyStr) -> None:
        """Send a reply; not the greeting of a connection greeted before :meth:`take_over`."""
        if self._greeted_elsewhere:
            self._greeted_elsewhere = False  # the session's first reply is its greeting
            return
        await super().push(status)

    commands_served = 0
    """The known commands of the connection so far (counted with :meth:`limit_commands`)."""

    def limit_commands(self, limit: int, message: str) -> None:
        """Answer ``message`` and close once the connection sent more than ``limit`` commands.

        They are counted in :attr:`commands_served`, which a connection taken
        over starts from what its earlier protocol served. Unknown commands are
        aiosmtpd's own to limit.
        """
        methods: dict[str, Any] = self._smtp_methods

        def counting(method: Any) -> Any:
            @functools.wraps(method)  # HELP reads the syntax aiosmtpd marks a method with
            async def command(arg: str) -> None:
                self.commands_served += 1
                if self.commands_served > limit:
                    await self.push(message)
                    self.close_now()
                    return
                await method(arg)

            return command

        self._smtp_methods = {name: counting(method) for name, method in methods.items()}

    def __dir__(self) -> list[str]:
        return dispatch_names(type(self))

    def read_path(self, arg: str) -> tuple[str | None, str | None]:
        """The address of a MAIL or RCPT path, and the rest of ``arg``; aiosmtpd's own here.

        An empty ``arg`` gives ``("", "")``, one that cannot be read ``(None, None)``.
        """
        return SMTP._getaddr(self, arg)

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        return self.read_path(arg)

    def _create_session(self) -> Session:
        return QuietSession(self.loop)

    def _create_envelope(self) -> Envelope:
        return self.envelope_class()

    def admit(self, transport: asyncio.BaseTransport) -> bool:
        """Whether to serve a new connection; one refused is the subclass's to answer and close.

        Called once per connection, not again when STARTTLS makes it secure.
        """
        return True

    def release(self) -> None:
        """Note that an admitted connection has ended."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Start serving the connection, unless :meth:`admit` refuses it."""
        # aiosmtpd calls this again once STARTTLS is done: not a new connection.
        if self._original_transport is None and not self.admit(transport):
            self._refused = True
            return
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        """End the session, and :meth:`release` it; a refused connection had none."""
        if self._refused:
            return
        self.release()
        super().connection_lost(error)

    async def pause(self, seconds: float) -> None:
        """Hold the session's answer for ``seconds``; the idle timer holds off as long."""
        # The timer counts from the command: an injected delay is not the client's idleness.
        self._reset_timeout(seconds + self._timeout_duration)
        await asyncio.sleep(seconds)
        self._reset_timeout()

    def close_now(self) -> None:
        """Close the connection at once, without waiting for a client's TLS shutdown."""
        if self._original_transport is not None:
            self._original_transport.close()  # the TCP connection under STARTTLS
        elif self.transport is None:
            return
        elif self.transport.get_extra_info("sslcontext") is not None:
            cast(
                asyncio.WriteTransport, self.transport
            ).abort()  # implicit TLS: close() would wait for the client
        else:
            self.transport.close()

    async def drop(self) -> None:
        """Close the connection without a word, and wait for that to end the session."""
        self.close_now()
        # connection_lost cancels the session's task, and with it this wait, at once.
        await asyncio.sleep(_DROP_GRACE)

    def refuse_data(self, reply: str) -> str:
        """The reply refusing the message just read (too big, a line too long): ``reply``.

        A subclass may remember it first; the transaction's envelope is still the current one.
        """
        return reply

    @syntax("DATA")  # as aiosmtpd's own: HELP lists a command by this mark
    async def smtp_DATA(self, arg: str) -> None:
        """Serve DATA as aiosmtpd does, its lines read by the fast lane's :class:`DataReader`.

        aiosmtpd's own reading judges a line by how much its stream reader holds
        when it looks, and counts a line's CRLF and a transparency dot against
        the line limit; the fast lane's reader gives one answer however TCP
        splits the bytes. The rest (its checks and replies) is aiosmtpd 1.4.6's.
        """
        if await self.check_helo_needed():
            return
        if await self.check_auth_needed("DATA"):
            return
        assert self.envelope is not None
        if not self.envelope.rcpt_tos:
            await self.push("503 Error: need RCPT command")
            return
        if arg:
            await self.push("501 Syntax: DATA")
            return
        await self.push("354 End data with <CR><LF>.<CR><LF>")
        data = DataReader(self.data_size_limit or 0, self.data_line_limit)
        reader: Any = self._reader
        command_limit = reader._limit
        reader._limit = self.data_line_limit + 2  # the pieces read; the lines are data's
        ended = False
        try:
            while self.transport is not None and not ended:
                try:
                    piece = await reader.readuntil(b"\r\n")
                except asyncio.LimitOverrunError as error:  # a longer line: read on
                    piece = await reader.read(error.consumed)
                ended = data.feed(piece) is not None
        except asyncio.CancelledError:  # the connection was lost in DATA (aiosmtpd's words)
            self._writer.close()
            raise
        finally:
            reader._limit = command_limit
        if not ended:
            return  # the connection is closed: nothing is stored
        if data.refusal is not None:
            refusal = self.refuse_data(data.refusal)
            self.envelope = self._create_envelope()
            await self.push(refusal)
            return
        self.envelope.content = self.envelope.original_content = data.content()
        status = await self.event_handler.handle_DATA(self, self.session, self.envelope)
        self.envelope = self._create_envelope()
        await self.push(status)
