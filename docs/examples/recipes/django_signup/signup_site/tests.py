"""Sign up through the view, then follow the link from the mail: the account is active."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from pytest_tempinbox import Inbox


@pytest.mark.django_db
def test_the_link_in_the_mail_activates_the_account(client: Client, tempinbox: Inbox) -> None:
    """The sign-up mail's link, followed, activates the new account."""
    response = client.post(
        "/accounts/signup/", {"email": tempinbox.address, "password": "correct horse"}
    )
    assert response.status_code == 201
    assert not User.objects.get(email=tempinbox.address).is_active

    message = tempinbox.wait_for_message(subject="Confirm your account")
    (link,) = message.links
    response = client.get(link)

    assert response.status_code == 200
    assert User.objects.get(email=tempinbox.address).is_active


@pytest.mark.django_db
def test_a_tampered_link_does_not_activate_the_account(client: Client, tempinbox: Inbox) -> None:
    """A link whose token was changed is refused, and the account stays inactive."""
    client.post("/accounts/signup/", {"email": tempinbox.address, "password": "correct horse"})

    (link,) = tempinbox.wait_for_message(subject="Confirm your account").links
    response = client.get(link.rstrip("/") + "x/")

    assert response.status_code == 400
    assert not User.objects.get(email=tempinbox.address).is_active
