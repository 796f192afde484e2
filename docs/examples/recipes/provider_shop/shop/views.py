"""Placing an order sends its confirmation through the configured backend (Postmark's API)."""

from __future__ import annotations

from anymail.message import AnymailMessage
from django.http import HttpRequest, HttpResponse


# --8<-- [start:view]
def place_order(request: HttpRequest) -> HttpResponse:
    """Take an order and mail its confirmation, with a link and a tag for Postmark."""
    email = request.POST["email"]
    number = "1042"
    message = AnymailMessage(
        subject=f"Order {number} confirmed",
        body=f"Thank you. Track it at https://shop.test/orders/{number}",
        to=[email],
    )
    message.attach_alternative(
        f'<p>Thank you. <a href="https://shop.test/orders/{number}">Track your order</a></p>',
        "text/html",
    )
    message.tags = ["order-confirmation"]  # Postmark's Tag
    message.metadata = {"order": number}  # Postmark's Metadata
    message.send()
    return HttpResponse(f"order {number} placed", status=201)


# --8<-- [end:view]
