"""Several addresses in one test, from ``tempinbox_factory``."""

from __future__ import annotations

import smtplib
from collections.abc import Callable

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def invite(server: TempInboxServer, guests: list[str]) -> None:
    """Stands in for the application: one invitation, sent to every guest at once."""
    body = b"Subject: You are invited\r\n\r\nSee you on Friday.\r\n"
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.sendmail("party@example.com", guests, body)


def test_every_guest_gets_an_invitation(
    tempinbox_factory: Callable[..., Inbox], tempinbox_server: TempInboxServer
) -> None:
    """Each generated inbox gets its own copy of a message sent to several of them."""
    alice = tempinbox_factory(prefix="alice")
    bob = tempinbox_factory(prefix="bob")
    assert alice.address.startswith("alice-")

    invite(tempinbox_server, [alice.address, bob.address])

    for guest in (alice, bob):
        message = guest.wait_for_message(subject="invited")
        assert message.inbox == guest.address
        assert message.envelope.rcpt_to == (alice.address, bob.address)
