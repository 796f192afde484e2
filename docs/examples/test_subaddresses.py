"""One inbox, several users: sub-addresses ``name+detail@domain`` (RFC 5233)."""

from __future__ import annotations

import smtplib

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def sign_up(server: TempInboxServer, email: str) -> None:
    """Stands in for the application: a welcome mail to the address that signed up."""
    body = f"To: {email}\r\nSubject: Welcome\r\n\r\nHello!\r\n".encode()
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.sendmail("app@example.com", [email], body)


# --8<-- [start:subaddresses]
def test_each_user_gets_a_welcome(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """Users 1 and 2 sign up as name+1@ and name+2@ of one inbox; each is read apart."""
    name, _, domain = tempinbox.address.partition("@")
    for user in ("1", "2"):
        sign_up(tempinbox_server, f"{name}+{user}@{domain}")

    second = tempinbox.wait_for_message(subaddress="2")
    assert second.subaddress == "2"
    assert second.inbox == tempinbox.address
    tempinbox.assert_no_message(subaddress="3", within=0.2)


# --8<-- [end:subaddresses]
