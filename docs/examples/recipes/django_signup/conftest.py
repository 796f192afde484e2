"""Send the test run's mail over SMTP to pytest-tempinbox, not to Django's locmem outbox."""

from __future__ import annotations

import pytest
from pytest_django import Settings

from pytest_tempinbox.plugin import TempInboxServer


@pytest.fixture(autouse=True)
def email_to_tempinbox(settings: Settings, tempinbox_server: TempInboxServer) -> None:
    """Point Django's SMTP email backend at the session's disposable inbox server.

    pytest-django switches every test run to the locmem backend (``mail.outbox``);
    this puts the real SMTP backend back for each test, so the mail leaves
    through the same code as in production. The ``settings`` fixture restores
    the settings after the test.
    """
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = tempinbox_server.smtp_host
    settings.EMAIL_PORT = tempinbox_server.smtp_port
