"""The same sign-up, written as a django.test.TestCase: pytest runs unittest classes too."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import TestCase

from pytest_tempinbox import Inbox


# The conftest's autouse fixture sends the mail to the inbox server; without it,
# mark the class with @pytest.mark.usefixtures("tempinbox_django").
class SignupTests(TestCase):
    """Sign-up mail, read from a disposable inbox in a TestCase."""

    inbox: Inbox

    @pytest.fixture(autouse=True)
    def _inbox(self, tempinbox: Inbox) -> None:
        # A unittest method takes no fixtures as arguments: an autouse fixture
        # method hands them to the test through self.
        self.inbox = tempinbox

    def test_the_link_in_the_mail_activates_the_account(self) -> None:
        """The sign-up mail's link, followed, activates the new account."""
        self.client.post(
            "/accounts/signup/", {"email": self.inbox.address, "password": "correct horse"}
        )

        (link,) = self.inbox.wait_for_message(subject="Confirm your account").links
        response = self.client.get(link)

        assert response.status_code == 200
        assert User.objects.get(email=self.inbox.address).is_active
