"""DATA's lines read from bytes however they arrive: the one reader of both SMTP lanes.

:class:`DataReader` holds no socket: it is fed bytes as they come, and says
when the message has ended, what it holds, or why it is refused. The fast lane
(:mod:`~pytest_tempinbox.server.smtp.fast_lane`) feeds it what
``data_received`` gets; the aiosmtpd side
(:mod:`~pytest_tempinbox.server.smtp._aiosmtpd`) feeds it what its stream reader
reads. Its answer depends only on whole lines, never on where TCP split them.

Each line is judged once it ends (docs/limits.md): its octets, CRLF included,
count toward the size limit, and the first line that takes the message over it
makes the answer ``552``; otherwise the first line longer than the line limit,
counted with its CRLF and without a dot doubled for transparency (RFC 5321
4.5.3.1.6), makes it ``500``. Either way the answer comes after the final dot,
and nothing more is kept.
"""

from __future__ import annotations

__all__ = ["LINE_TOO_LONG", "TOO_MUCH_DATA", "DataReader"]

LINE_TOO_LONG = "500 Line too long (see RFC5321 4.5.3.1.6)"
TOO_MUCH_DATA = "552 Error: Too much mail data"


class DataReader:
    """One message's DATA, from bytes to its content (dots undone) or a refusal.

    ``size_limit`` counts octets of the whole (0: none), ``line_limit`` octets
    of a line with its CRLF. :meth:`feed` takes bytes until the final dot.
    """

    __slots__ = ("_carried", "_kept", "_line_limit", "_partial", "_size_limit", "count", "refusal")

    def __init__(self, size_limit: int, line_limit: int) -> None:
        self._size_limit = size_limit
        self._line_limit = line_limit
        self._kept: list[bytes] = []
        self._partial = b""  # the unfinished line, or its last CR once it is too long to keep
        self._carried = 0  # octets of the unfinished line already counted out of _partial
        self.count = 0
        """Octets of the lines read so far, CRLFs included."""
        self.refusal: str | None = None
        """The reply refusing the message (``500`` or ``552``), once a line has earned one."""

    def feed(self, data: bytes) -> bytes | None:
        """Read ``data``; the bytes after the final dot once it is read, else None.

        Until then, an unfinished line is kept (or, past the line limit, only
        counted) for the next call.
        """
        buffer = self._partial + data if self._partial else data
        lines = buffer.split(b"\r\n")
        partial = lines.pop()  # what follows the last line end
        size_limit, line_limit = self._size_limit, self._line_limit
        kept = self._kept
        count = self.count
        refusal = self.refusal
        carried = self._carried
        used = 0
        ended = False
        for content in lines:
            used += len(content) + 2
            if content == b"." and not carried:
                ended = True
                break
            length = carried + len(content) + 2
            carried = 0
            count += length
            if refusal is None:
                if size_limit and count > size_limit:
                    refusal = TOO_MUCH_DATA
                    kept.clear()
                elif length - (content[:1] == b".") > line_limit:
                    refusal = LINE_TOO_LONG
                    kept.clear()
                else:
                    kept.append(content[1:] if content[:1] == b"." else content)
        self.count, self.refusal = count, refusal
        if ended:
            self._partial, self._carried = b"", 0
            return buffer[used:]
        if len(partial) > line_limit + 2:
            # Too long whatever follows: count it out, keeping a line end's first half.
            tail = b"\r" if partial[-1:] == b"\r" else b""
            carried += len(partial) - len(tail)
            partial = tail
        self._partial, self._carried = partial, carried
        return None

    def content(self) -> bytes:
        """The message's lines, dots undone, each ending in CRLF: what was sent."""
        kept = self._kept
        return b"\r\n".join(kept) + b"\r\n" if kept else b""
