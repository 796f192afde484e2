"""The SMTP fast lane: the everyday conversation answered in the loop's own callback.

Nearly every connection a test's application makes says EHLO, MAIL, RCPT,
DATA and QUIT, in their plainest forms. aiosmtpd serves each command line in
a coroutine of its own, woken through a stream reader a loop iteration later;
with the server in the test's own process, every round trip of that machinery
is time the test waits for. :class:`FastLane` answers those commands in
``data_received``, where the line arrives, with the handler's own hooks
(:class:`~pytest_tempinbox.server.smtp.handler.InboxHandler`: the same checks,
replies and store), so its answers are aiosmtpd's, byte for byte.

Anything else is aiosmtpd's to answer: the first command line the lane does
not serve in its plainest form (AUTH, STARTTLS, HELP, VRFY, an unknown
command, a syntax error, a MAIL parameter it does not know, a line that nears
the length limit, any RCPT while an inbox has a fault waiting) hands the
connection over, with the session, the transaction and every unread byte, to
the aiosmtpd protocol the service would have made for it
(:meth:`~pytest_tempinbox.server.smtp._aiosmtpd.SMTPProtocol.take_over`), which
serves it from then on. The tests in ``tests/server/test_smtp_fast_lane.py``
hold the two to the same transcripts.

A hook that must wait (a Redis store's round trip) is run to its first wait in
place, then finished by a task while the lane holds the lines that follow.

The module is long because it is one protocol: its commands, DATA's limits and
the hand-over share the connection's state, and read best side by side.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine, Generator
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol, cast

from ...parsing.headers import DOT_ATOM
from .data import DataReader
from .handler import InboxHandler
from .transcript import SLOTS, Transcript

if TYPE_CHECKING:
    from ..sockets import Refusals
    from ._aiosmtpd import SMTPProtocol

__all__ = ["PLAIN_PATH", "FastLane", "LaneEnvelope", "LaneSession", "LaneSettings", "Session"]

# "<local@domain>" in plain ASCII atoms: how nearly every client writes a path.
PLAIN_PATH = re.compile(rf"<({DOT_ATOM}@{DOT_ATOM})>")

# A command line the lane reads: shorter than every limit aiosmtpd applies to one.
_LINE_LIMIT = 500
# Bytes held unread while a hook waits, before the lane stops reading (as aiosmtpd's reader).
_HOLD_LIMIT = 1 << 16
_KNOWN_BODIES = frozenset(("7BIT", "8BITMIME"))


class Session(Protocol):
    """What the service keeps of each open connection: it can close it at once."""

    def close_now(self) -> None:
        """Close the connection at once."""


class LaneSession:
    """A connection's state, by the names aiosmtpd's ``Session`` gives it: the hooks read them."""

    __slots__ = ("authenticated", "extended_smtp", "host_name", "peer", "transcript")

    def __init__(self) -> None:
        self.peer: Any = None
        self.transcript: Transcript | None = None
        self.host_name: str | None = None
        self.extended_smtp = False
        self.authenticated = False


class LaneEnvelope:
    """A transaction's state, with the names aiosmtpd's ``Envelope`` gives it.

    ``faulted`` is the addresses a fault struck in this transaction, as in the
    envelope of the aiosmtpd side.
    """

    __slots__ = (
        "content",
        "faulted",
        "mail_from",
        "mail_options",
        "original_content",
        "rcpt_options",
        "rcpt_tos",
        "smtp_utf8",
    )

    def __init__(self) -> None:
        self.mail_from: str | None = None
        self.mail_options: list[str] = []
        self.smtp_utf8 = False
        self.content: bytes | None = None
        self.original_content: bytes | None = None
        self.rcpt_tos: list[str] = []
        self.rcpt_options: list[str] = []
        self.faulted: set[str] = set()


class LaneSettings:
    """What every fast lane of one service shares: its replies, limits and hand-over.

    ``take_over`` makes the aiosmtpd protocol a connection is handed to;
    ``sessions`` is the service's set of open connections (at most
    ``max_connections``). ``starttls`` says whether EHLO offers STARTTLS.
    ``refusals`` turns away a connection near the open-file limit, with ``refusal``.
    """

    def __init__(
        self,
        handler: InboxHandler,
        sessions: set[Any],
        take_over: Callable[[], SMTPProtocol],
        *,
        hostname: str,
        ident: str,
        timeout: float,
        max_connections: int,
        data_size_limit: int,
        data_line_limit: int,
        starttls: bool,
        refusals: Refusals | None = None,
        refusal: bytes = b"",
        transcripts: bool = False,
    ) -> None:
        self.handler = handler
        self.transcripts = transcripts
        """Whether each session keeps its :class:`~.transcript.Transcript`."""
        self.refusals = refusals
        self.refusal = refusal
        self.sessions = sessions
        self.take_over = take_over
        self.timeout = timeout
        self.max_connections = max_connections
        self.data_size_limit = data_size_limit
        self.data_line_limit = data_line_limit
        self.greeting = f"220 {hostname} {ident}\r\n".encode()
        self.helo = f"250 {hostname}\r\n".encode()
        # aiosmtpd's EHLO answer, before the handler's hook edits it.
        self.ehlo_lines = [f"250-{hostname}"]
        if data_size_limit:
            self.ehlo_lines.append(f"250-SIZE {data_size_limit}")
        self.ehlo_lines += ["250-8BITMIME", "250-SMTPUTF8"]
        if starttls:
            self.ehlo_lines.append("250-STARTTLS")
        self.ehlo_lines += ["250-AUTH LOGIN PLAIN", "250 HELP"]
        self.handovers = 0
        """How many connections the lanes have handed over to aiosmtpd."""


class FastLane(asyncio.Protocol):
    """One SMTP connection, served in ``data_received`` until it needs aiosmtpd.

    Its replies are aiosmtpd's, through the service's handler; see the module's
    docstring for what it serves and what it hands over.
    """

    def __init__(self, settings: LaneSettings, loop: asyncio.AbstractEventLoop) -> None:
        self._settings = settings
        self._handler = settings.handler
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        """The connection's transport, once made."""
        # Typed as the hooks take them: aiosmtpd's Session and Envelope, by their attributes.
        self._session: Any = LaneSession()
        self._envelope: Any = LaneEnvelope()
        # The session's transcript's current list, appended to inline (transcript.py).
        self._record: list[Any] | None = None
        self._buffer = b""
        self._out: list[bytes] = []
        self._ehlos = 0
        self._in_data = False
        self._message: DataReader | None = None
        self._busy: asyncio.Task[Any] | None = None
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._held = False  # reading paused while a hook works and lines pile up
        self._gone = False  # closed, or handed over: the lane serves no more
        # The handler's hooks take aiosmtpd's protocol, to carry out faults with: the
        # lane hands over before one can strike, and has pause, drop and push if one does.
        self._server: Any = self

    # asyncio's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Count the connection in and greet, or refuse it with ``421`` at the limit."""
        # uvloop's transports are not asyncio's classes, but do what asyncio.Transport does.
        self.transport = transport = cast(asyncio.Transport, transport)
        sessions, refusals = self._settings.sessions, self._settings.refusals
        if refusals is not None and refusals.at_ceiling(transport):
            refusals.refuse_transport(transport, "SMTP", self._settings.refusal)
            self._gone = True
            return
        if len(sessions) >= self._settings.max_connections:
            transport.write(b"421 4.7.0 Too many connections, try again later\r\n")
            transport.close()
            self._gone = True
            return
        sessions.add(self)
        self._session.peer = transport.get_extra_info("peername")
        transport.write(self._settings.greeting)
        if self._settings.transcripts:
            self._session.transcript = transcript = Transcript()
            transcript.secure(transport)
            self._record = transcript.lines
            self._record += (self._settings.greeting, transcript.started)
        self._deadline = self._loop.time() + self._settings.timeout
        self._timer = self._loop.call_at(self._deadline, self._idle)

    def data_received(self, data: bytes) -> None:
        """Serve every whole command line (or DATA) that has arrived, in order."""
        if self._gone:
            return
        self._buffer = self._buffer + data if self._buffer else data
        if self._busy is None:
            self._serve()
        elif len(self._buffer) > _HOLD_LIMIT and not self._held and self.transport is not None:
            # A client that goes on sending while a hook waits (on Redis) waits too.
            self.transport.pause_reading()
            self._held = True

    def eof_received(self) -> bool | None:
        """The client stopped sending: close, as aiosmtpd does."""
        return None

    def connection_lost(self, error: Exception | None) -> None:
        """Count the connection out; a hook still running is cancelled, nothing stored."""
        self._settings.sessions.discard(self)
        self._gone = True
        if self._timer is not None:
            self._timer.cancel()
        if self._busy is not None:
            self._busy.cancel()

    def close_now(self) -> None:
        """Close the connection at once, without waiting for a client's TLS shutdown."""
        transport = self.transport
        if transport is None:
            return
        if transport.get_extra_info("sslcontext") is not None:
            transport.abort()
        else:
            transport.close()

    async def pause(self, seconds: float) -> None:
        """Hold the answer for ``seconds`` (a fault's delay); the idle timer holds off as long."""
        await asyncio.sleep(seconds)

    async def drop(self) -> None:
        """Close the connection without a word (a fault's disconnect)."""
        self.close_now()

    async def push(self, status: str) -> None:
        """Send a reply now: what a fault that strikes in a hook says before it disconnects."""
        self._reply(status)
        self._flush()

    # Serving lines

    def _idle(self) -> None:
        """Close a connection idle for the timeout, as aiosmtpd does; or look again later."""
        if self._gone:
            return
        now = self._loop.time()
        if self._busy is not None:
            # A hook at work (a fault's delay) is not the client's idleness.
            self._deadline = max(self._deadline, now + self._settings.timeout)
        if now < self._deadline:
            self._timer = self._loop.call_at(self._deadline, self._idle)
            return
        assert self.transport is not None
        self.transport.close()

    def _serve(self) -> None:
        try:
            while not self._gone and self._busy is None:
                if self._in_data:
                    if not self._read_data():
                        break
                    continue
                end = self._buffer.find(b"\n")
                if end < 0:
                    if len(self._buffer) >= _LINE_LIMIT:
                        self._hand_over()
                    break
                if end >= _LINE_LIMIT or not self._command(self._buffer[: end + 1]):
                    self._hand_over()
                    break
                self._buffer = self._buffer[end + 1 :]
        finally:
            self._flush()

    def _flush(self) -> None:
        if self._out and self.transport is not None:
            out = b"".join(self._out)
            self.transport.write(out)
            record = self._record
            if record is not None:
                record.append(out)
                record.append(perf_counter())  # the time of the lines and replies before it
                if len(record) > SLOTS:
                    self._bound()
        self._out.clear()

    def _bound(self) -> None:
        """Keep a transaction's first :data:`SLOTS` entries, the rest counted as cut.

        Bounded as replies are written, not as each line is read: the lines
        one read holds are answered in one write.
        """
        record = self._record
        if record is not None and len(record) > SLOTS:
            over = record[SLOTS:]
            del record[SLOTS:]
            self._session.transcript.cut += sum(type(entry) is not float for entry in over)

    def _reply(self, status: str) -> None:
        self._out.append(status.encode("utf-8") + b"\r\n")

    def _command(self, raw: bytes) -> bool:
        """Serve one command line (its line end included); False hands it to aiosmtpd."""
        line = raw.rstrip(b"\r\n")
        verb_bytes, _, arg_bytes = line.partition(b" ")
        if not verb_bytes.isalpha() or not verb_bytes.isascii():
            return False
        verb = verb_bytes.upper().decode("ascii")
        arg = arg_bytes.strip().decode("utf-8", "surrogateescape") if arg_bytes else ""
        serve = _COMMANDS.get(verb)
        record = self._record
        if record is not None:  # before it is served: a refusal's transcript ends with it
            record.append(line)
        if serve is None or not serve(self, arg):
            if record is not None:  # aiosmtpd's side records it: not twice
                record.pop()
            return False
        self._deadline = self._loop.time() + self._settings.timeout
        return True

    def _ehlo(self, arg: str) -> bool:
        if not arg:
            return False
        self._envelope = LaneEnvelope()
        self._session.extended_smtp = True
        self._ehlos += 1
        lines = list(self._settings.ehlo_lines)
        handler = self._handler
        # The handler's hook sets the host name and edits the lines; it never waits.
        replies = _now(handler.handle_EHLO(self._server, self._session, self._envelope, arg, lines))
        for reply in replies:
            self._reply(reply)
        return True

    def _helo(self, arg: str) -> bool:
        if not arg:
            return False
        self._envelope = LaneEnvelope()
        self._session.extended_smtp = False
        self._session.host_name = arg
        self._out.append(self._settings.helo)
        return True

    def _mail(self, arg: str) -> bool:
        envelope = self._envelope
        if not self._session.host_name or envelope.mail_from:
            return False
        if arg[:5].upper() != "FROM:":
            return False
        path = _plain_path(arg[5:].strip())
        if path is None:
            return False
        address, rest = path
        if rest and not self._session.extended_smtp:
            return False
        options = rest.upper().split()
        smtp_utf8 = False
        for option in options:
            name, equals, value = option.partition("=")
            if name == "SMTPUTF8" and not equals:
                smtp_utf8 = True
            elif name == "BODY" and value in _KNOWN_BODIES:
                continue
            elif name == "SIZE" and value.isascii() and value.isdigit():
                limit = self._settings.data_size_limit
                if limit and int(value) > limit:
                    return False
            else:
                return False
        if len({option.partition("=")[0] for option in options}) != len(options):
            return False  # a parameter twice: aiosmtpd keeps the last; its to judge
        envelope.smtp_utf8 = smtp_utf8
        record = self._record
        if record is not None:  # the transaction's list keeps only this MAIL line, its last
            transcript = self._session.transcript
            if transcript.opening is None:
                transcript.mail(recorded=True)
            else:
                del record[:-1]
                transcript.cut = 0
        hook = self._handler.handle_MAIL(self._server, self._session, envelope, address, options)
        self._reply(_now(hook))
        return True

    def _rcpt(self, arg: str) -> bool:
        if not self._session.host_name or not self._envelope.mail_from:
            return False
        if self._handler.store.faults_added:
            return False  # a fault may pause or drop: aiosmtpd's protocol carries it out
        if arg[:3].upper() != "TO:":
            return False
        path = _plain_path(arg[3:].strip())
        if path is None or path[1]:
            return False
        hook = self._handler.handle_RCPT(self._server, self._session, self._envelope, path[0], [])
        self._run(hook)
        return True

    def _data(self, arg: str) -> bool:
        if arg or not self._session.host_name or not self._envelope.rcpt_tos:
            return False
        if self._handler.store.faults_added:
            return False  # a fault may strike at the end of DATA: aiosmtpd carries it out
        self._reply("354 End data with <CR><LF>.<CR><LF>")
        self._in_data = True
        settings = self._settings
        self._message = DataReader(settings.data_size_limit, settings.data_line_limit)
        return True

    def _rset(self, arg: str) -> bool:
        if arg:
            return False
        self._envelope = LaneEnvelope()
        self._reply("250 OK")
        return True

    def _noop(self, arg: str) -> bool:
        self._reply("250 OK")
        return True

    def _quit(self, arg: str) -> bool:
        if arg:
            return False
        self._reply("221 Bye")
        self._flush()
        self._gone = True
        assert self.transport is not None
        self.transport.close()
        return True

    # DATA

    def _read_data(self) -> bool:
        """Take in the message's lines; True once its end is read and answered.

        The :class:`~pytest_tempinbox.server.smtp.data.DataReader` judges them, as
        it does for aiosmtpd's side: the answer is given after the final dot.
        """
        reader = self._message
        assert reader is not None
        rest = reader.feed(self._buffer)
        if rest is None:
            self._buffer = b""
            return False
        self._buffer = rest
        self._in_data = False
        self._message = None
        record = self._record
        if record is not None:
            record.append(reader.count)
        if reader.refusal is not None:
            self._reply(self._handler.refuse_data(self._session, self._envelope, reader.refusal))
            self._envelope = LaneEnvelope()
            return True
        envelope = self._envelope
        envelope.content = envelope.original_content = reader.content()
        self._run(self._handler.handle_DATA(self._server, self._session, envelope), post_data=True)
        return True

    # Hooks, and handing over

    def _run(self, hook: Coroutine[Any, Any, str], post_data: bool = False) -> None:
        """Run a handler hook and reply with what it returns; a hook that waits holds the lines."""
        try:
            waiting_on = hook.send(None)
        except StopIteration as done:
            self._answer(done.value, post_data)
            return
        except Exception as error:  # answered as aiosmtpd answers it
            self._answer(self._failed(error), post_data)
            return
        self._flush()
        record = self._record
        if record is not None and record and type(record[-1]) is not float:
            record.append(perf_counter())  # the line's time, its reply's comes when the hook ends
        self._busy = self._loop.create_task(_finish(hook, waiting_on))
        self._busy.add_done_callback(lambda task: self._resume(task, post_data))

    def _resume(self, task: asyncio.Task[Any], post_data: bool) -> None:
        self._busy = None
        if self._held and self.transport is not None and not self._gone:
            self.transport.resume_reading()
            self._held = False
        self._deadline = self._loop.time() + self._settings.timeout
        if task.cancelled() or self._gone:
            return
        error = task.exception()
        status = self._failed(error) if isinstance(error, Exception) else task.result()
        self._answer(status, post_data)
        self._serve()

    def _answer(self, status: str, post_data: bool) -> None:
        if post_data:
            self._envelope = LaneEnvelope()
        if not self._gone:
            self._reply(status)

    def _failed(self, error: Exception) -> str:
        """What aiosmtpd answers for a hook's error: the handler's ``handle_exception``."""
        status: str = _now(self._handler.handle_exception(error))
        return status

    def _hand_over(self) -> None:
        """Give the connection, as it stands, to aiosmtpd's protocol."""
        self._flush()
        self._gone = True
        if self._timer is not None:
            self._timer.cancel()
        transport = self.transport
        assert transport is not None
        self._settings.sessions.discard(self)
        self._settings.handovers += 1
        self._bound()
        if self._record is not None:
            self._session.transcript.client(self._buffer)  # what aiosmtpd serves from here
            self._record = None
        protocol = self._settings.take_over()
        transport.set_protocol(protocol)
        protocol.take_over(transport, self._session, self._envelope, self._ehlos, self._buffer)
        self._buffer = b""


def _plain_path(arg: str) -> tuple[str, str] | None:
    """The address of ``<local@domain>`` opening ``arg``, and the rest, as aiosmtpd reads them."""
    plain = PLAIN_PATH.match(arg)
    if plain is None:
        return None
    rest = arg[plain.end() :]
    if rest and rest[0] not in " \t":
        return None
    return plain[1], rest.strip()


def _now(hook: Coroutine[Any, Any, Any]) -> Any:
    """The result of a hook that never waits (EHLO's, MAIL's, the exception's)."""
    try:
        hook.send(None)
    except StopIteration as done:
        return done.value
    hook.close()
    raise RuntimeError("a hook the fast lane runs in place waited")


class _Started:
    """A coroutine already run to its first wait, to be awaited from there on."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any], waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, signal = self._coroutine, self._waiting_on
        while True:
            try:
                sent = yield signal
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:  # passed on, as await would
                try:
                    signal = coroutine.throw(error)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    signal = coroutine.send(sent)
                except StopIteration as done:
                    return done.value


async def _finish(coroutine: Coroutine[Any, Any, Any], waiting_on: Any) -> Any:
    return await _Started(coroutine, waiting_on)


_COMMANDS: dict[str, Callable[[FastLane, str], bool]] = {
    "EHLO": FastLane._ehlo,
    "HELO": FastLane._helo,
    "MAIL": FastLane._mail,
    "RCPT": FastLane._rcpt,
    "DATA": FastLane._data,
    "RSET": FastLane._rset,
    "NOOP": FastLane._noop,
    "QUIT": FastLane._quit,
}
