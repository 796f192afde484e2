"""The order confirmation, sent through Postmark's API by django-anymail, read from the inbox."""

from __future__ import annotations

from django.core import mail
from django.test import Client

from pytest_tempinbox import Inbox


# --8<-- [start:test]
def test_placing_an_order_mails_its_tracking_link(client: Client, tempinbox: Inbox) -> None:
    """The order's mail, sent through Postmark's API, has its tracking link, tag and metadata."""
    response = client.post("/orders/", {"email": tempinbox.address})
    assert response.status_code == 201

    message = tempinbox.wait_for_message(subject="Order 1042 confirmed")
    assert message.link(text="Track your order") == "https://shop.test/orders/1042"
    assert message.provider is not None
    assert message.provider.name == "postmark"
    assert message.provider.tags == ("order-confirmation",)
    assert message.provider.metadata == {"order": "1042"}
    assert mail.outbox == []  # it went through the backend, not Django's locmem outbox


# --8<-- [end:test]
