"""DATA's reader gives one answer however the bytes are split: whole, byte by byte, at random.

:class:`~pytest_tempinbox.server.smtp.data.DataReader` is both SMTP lanes'
reader of DATA, with no I/O, so every split of a conversation's bytes can be
fed to it; ``test_smtp_fast_lane.py`` holds the lanes to the same over sockets.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_tempinbox.server.smtp.data import LINE_TOO_LONG, TOO_MUCH_DATA, DataReader

SIZE_LIMIT = 3000
LINE_LIMIT = 1000
END = b".\r\n"


def read(chunks: list[bytes]) -> tuple[str | None, bytes, bytes]:
    """Feed ``chunks`` in turn: the refusal, the content and the bytes after the end."""
    reader = DataReader(SIZE_LIMIT, LINE_LIMIT)
    rest = None
    for number, chunk in enumerate(chunks):
        rest = reader.feed(chunk)
        if rest is not None:
            rest += b"".join(chunks[number + 1 :])
            break
    assert rest is not None, "the end of DATA was not read"
    return reader.refusal, reader.content(), rest


def test_the_longest_line_is_1000_octets_with_its_crlf() -> None:
    assert read([b"x" * 998 + b"\r\n" + END]) == (None, b"x" * 998 + b"\r\n", b"")
    assert read([b"x" * 999 + b"\r\n" + END])[0] == LINE_TOO_LONG


def test_a_dot_doubled_for_transparency_does_not_count() -> None:
    assert read([b"." + b"x" * 998 + b"\r\n" + END]) == (None, b"x" * 998 + b"\r\n", b"")
    assert read([b"." + b"x" * 999 + b"\r\n" + END])[0] == LINE_TOO_LONG


def test_a_line_that_takes_the_message_over_the_size_limit_is_too_much_data() -> None:
    """RFC 5321 4.5.3.1.10's 552, even when the line is also too long, however it is split."""
    head = b"x" * 998 + b"\r\n" + b"y" * 998 + b"\r\n" + b"z" * 1001
    assert read([head + b"\r\n" + END])[0] == TOO_MUCH_DATA
    assert read([head + b"\r", b"\n" + END])[0] == TOO_MUCH_DATA


def test_the_bytes_after_the_end_are_given_back() -> None:
    assert read([b"a\r\n.\r\nQUIT\r\n"]) == (None, b"a\r\n", b"QUIT\r\n")


PIECES = st.sampled_from(
    [b".", b"..", b"\r", b"\n", b"\r\n", b"\x00", b"\xff\xfe", b"x", b" ", b".\r\n", b"\r\r\n"]
)
LINES = st.one_of(
    st.lists(PIECES, max_size=8).map(b"".join),
    st.binary(max_size=40),
    st.builds(
        lambda head, size: head + b"x" * size,
        st.sampled_from([b"", b".", b"\r"]),
        st.integers(LINE_LIMIT - 4, LINE_LIMIT + 4),
    ),
)


@st.composite
def splits(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """DATA's bytes (with its end, and a command after it), and where to cut them."""
    lines = draw(st.lists(LINES, max_size=8))
    data = b"\r\n".join(lines) + (b"\r\n" if lines else b"") + END + b"QUIT\r\n"
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=12).map(sorted))
    return data, cuts


@settings(max_examples=400, deadline=None)
@given(splits())
@example((b"x" * 998 + b"\r\n" + b"y" * 998 + b"\r\n" + b"z" * 1001 + b"\r\n" + END, [3000]))
@example((b"y" * 1003 + b".\r\n" + END, [1003]))  # a long line ending in a dot is no end
def test_the_answer_does_not_depend_on_how_the_bytes_are_split(
    split: tuple[bytes, list[int]],
) -> None:
    data, cuts = split
    whole = read([data])
    pieces = [data[start:end] for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    assert read(pieces) == whole
    assert read([data[i : i + 1] for i in range(len(data))]) == whole
