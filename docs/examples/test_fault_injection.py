"""Fault injection: one address misbehaves on purpose, for as many deliveries as asked.

Each test sends with smtplib, as an application would, and checks what the
SMTP client sees and what the inbox holds.
"""

from __future__ import annotations

import smtplib

import pytest

from pytest_tempinbox import Fault, Inbox
from pytest_tempinbox.plugin import TempInboxServer

MAIL = b"Subject: Your code\r\n\r\nYour code is 482913\r\n"


def connect(server: TempInboxServer, timeout: float = 10.0) -> smtplib.SMTP:
    """An SMTP connection to the test server, as the application would open it."""
    return smtplib.SMTP(
        server.smtp_host, server.smtp_port, local_hostname="localhost", timeout=timeout
    )


# --8<-- [start:rcpt]
def test_a_temporary_failure_at_rcpt(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """The address is refused twice with 451, then accepted."""
    tempinbox.fail_next(451, "try again later", times=2)

    for _ in range(2):
        with connect(tempinbox_server) as smtp, pytest.raises(smtplib.SMTPRecipientsRefused) as e:
            smtp.sendmail("app@example.com", [tempinbox.address], MAIL)
        assert e.value.recipients[tempinbox.address] == (451, b"4.0.0 try again later")

    with connect(tempinbox_server) as smtp:
        smtp.sendmail("app@example.com", [tempinbox.address], MAIL)
    assert len(tempinbox.messages()) == 1
    assert tempinbox.faults() == []  # both consumed
    # --8<-- [end:rcpt]


# --8<-- [start:data]
def test_a_permanent_failure_at_data(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """DATA gets the reply: the message is stored for nobody in that transaction."""
    tempinbox.fail_next(554, "5.7.1 message refused", stage="data")

    with connect(tempinbox_server) as smtp, pytest.raises(smtplib.SMTPDataError) as refused:
        smtp.sendmail("app@example.com", [tempinbox.address], MAIL)
    assert (refused.value.smtp_code, refused.value.smtp_error) == (554, b"5.7.1 message refused")
    assert tempinbox.messages() == []
    # --8<-- [end:data]


# --8<-- [start:delay]
def test_a_slow_server_makes_the_client_time_out(
    tempinbox: Inbox, tempinbox_server: TempInboxServer
) -> None:
    """The DATA answer waits 3 s; a client that gives up after 0.5 s left, so nothing is stored."""
    tempinbox.delay_next(3.0)  # stage="data" by default

    with (
        connect(tempinbox_server, timeout=0.5) as smtp,
        pytest.raises(smtplib.SMTPServerDisconnected, match="timed out"),
    ):
        smtp.sendmail("app@example.com", [tempinbox.address], MAIL)
    assert tempinbox.messages() == []
    # --8<-- [end:delay]


# --8<-- [start:disconnect]
def test_a_dropped_connection(tempinbox: Inbox, tempinbox_server: TempInboxServer) -> None:
    """The server closes the connection after the message text, without an answer."""
    tempinbox.disconnect_next()

    with connect(tempinbox_server) as smtp, pytest.raises(smtplib.SMTPServerDisconnected):
        smtp.sendmail("app@example.com", [tempinbox.address], MAIL)
    assert tempinbox.messages() == []
    # --8<-- [end:disconnect]


# --8<-- [start:listing]
def test_pending_faults_are_listed_and_cleared(tempinbox: Inbox) -> None:
    """Faults wait in order; times counts the deliveries each has left."""
    tempinbox.fail_next(452, "4.2.2 mailbox full", times=3)
    tempinbox.delay_next(2.5, stage="rcpt")

    assert tempinbox.faults() == [
        Fault(stage="rcpt", code=452, message="4.2.2 mailbox full", times=3),
        Fault(stage="rcpt", delay=2.5),
    ]
    assert tempinbox.clear_faults() == 2
    assert tempinbox.faults() == []
    # --8<-- [end:listing]
