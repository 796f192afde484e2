"""Send the test run's mail over SMTP to pytest-tempinbox, not to Django's locmem outbox."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def email_to_tempinbox(tempinbox_django: None) -> None:
    """Send every test's mail through Django's SMTP backend to the session's inbox server.

    pytest-django switches every test run to the locmem backend (``mail.outbox``);
    ``tempinbox_django`` puts the SMTP backend back for each test, pointed at the
    server, with the production settings' STARTTLS kept (``tempinbox_tls`` in
    pytest.ini). An autouse fixture applies to ``django.test.TestCase`` classes too.
    """
