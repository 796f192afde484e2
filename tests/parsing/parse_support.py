"""Messages to parse, and the checks every parse test makes of the result."""

from __future__ import annotations

import dataclasses
import json
from email.message import EmailMessage

from pytest_tempinbox.parsing.message import (
    ParsedMessage,
    parse_message,
)


def assert_json_safe(parsed: ParsedMessage) -> None:
    # ensure_ascii=False, or json.dumps would escape a lone surrogate as "\udce9"
    # and the check could never fail.
    json.dumps(dataclasses.asdict(parsed), default=str, ensure_ascii=False).encode("utf-8")


def parse(raw: bytes) -> ParsedMessage:
    # A budget no stalled CI machine runs out of: the clock decides only the
    # tests of the budget, which pass their own (its headroom is in the bench).
    parsed = parse_message(raw, budget=30)
    assert_json_safe(parsed)
    return parsed


def lines(*parts: str | bytes) -> bytes:
    """Join header and body lines with CRLF, as they arrive over SMTP."""
    return b"\r\n".join(part.encode("utf-8") if isinstance(part, str) else part for part in parts)


def text_message(body: str = "Hello.\n", **headers: str) -> EmailMessage:
    message = EmailMessage()
    defaults = {"From": "Alice <alice@example.test>", "To": "bob@example.test", "Subject": "Hello"}
    for name, value in (defaults | headers).items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return message


def with_attachments(*attachments: tuple[bytes, str, str, str | None]) -> bytes:
    message = text_message()
    for data, maintype, subtype, filename in attachments:
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


def nested(depth: int) -> bytes:
    head = [
        f"Content-Type: multipart/mixed; boundary=b{level}\r\n\r\n--b{level}"
        for level in range(depth)
    ]
    tail = [f"--b{level}--" for level in reversed(range(depth))]
    return lines("Subject: deep", *head, "Content-Type: text/plain", "", "deep 123456", *tail, "")


def many_parts(count: int) -> bytes:
    parts = [
        f"--b\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Disposition: attachment; filename=f{index}.bin\r\n\r\n{index}"
        for index in range(count)
    ]
    return lines("Content-Type: multipart/mixed; boundary=b", "", *parts, "--b--", "")
