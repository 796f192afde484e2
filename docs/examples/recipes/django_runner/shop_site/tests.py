"""The order confirmation, sent over STARTTLS to a disposable inbox; run by manage.py test."""

from __future__ import annotations

from typing import ClassVar

from django.core.mail import send_mail
from django.test import SimpleTestCase

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.django_mail import mail_settings, override_mail_settings, project_tls


class InboxTestCase(SimpleTestCase):
    """Starts an inbox server for the class; each test gets a new inbox, ``self.inbox``."""

    server: ClassVar[InboxServer]
    inboxes: ClassVar[TempInboxClient]

    @classmethod
    def setUpClass(cls) -> None:
        """Start the server, and point Django's mail at it until the class is done."""
        super().setUpClass()
        # The TLS mode the production settings need: STARTTLS for EMAIL_USE_TLS.
        cls.server = InboxServer(tls="starttls")
        cls.server.start()
        cls.addClassCleanup(cls.server.stop)
        cls.inboxes = TempInboxClient(cls.server.api_url)
        cls.addClassCleanup(cls.inboxes.close)
        # The SMTP backend (one that trusts the server's CA), its host and port; read and
        # overridden without Django 6.1's warning about the EMAIL_* settings.
        mail = mail_settings(cls.server, *project_tls())
        override = override_mail_settings(**mail)
        override.enable()
        cls.addClassCleanup(override.disable)

    def setUp(self) -> None:
        """A new inbox for each test, deleted after it."""
        self.inbox = self.inboxes.generate()
        self.addCleanup(self.inbox.delete)


class OrderMailTests(InboxTestCase):
    """The order confirmation reaches the customer."""

    def test_the_confirmation_arrives_over_tls(self) -> None:
        """send_mail() goes through Django's SMTP backend, with EMAIL_USE_TLS on."""
        send_mail("Your order", "Order 1042 is confirmed.", None, [self.inbox.address])

        message = self.inbox.wait_for_message(subject="Your order")
        assert message.text is not None
        assert "1042" in message.text
        assert project_tls() == (True, False)
