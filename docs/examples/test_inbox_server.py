"""A server of one's own, in-process, without the plugin's fixtures."""

from __future__ import annotations

import smtplib

from pytest_tempinbox import InboxServer, TempInboxClient


def test_a_server_in_a_background_thread() -> None:
    """InboxServer starts on free ports and stops when the block ends."""
    # --8<-- [start:server]
    # Free ports, a background thread; both listeners accept connections once it is entered.
    with InboxServer(domains=["mail.test"]) as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        assert inbox.address.endswith("@mail.test")

        smtp = smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost")
        with smtp:
            smtp.sendmail("app@example.com", [inbox.address], b"Subject: Hi\r\n\r\nHello\r\n")

        assert inbox.wait_for_message().subject == "Hi"
    # --8<-- [end:server]
