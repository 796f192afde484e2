"""Sign up with an address and a password; the account stays inactive until confirmed."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode
from django.views.decorators.http import require_POST


@require_POST
def signup(request: HttpRequest) -> HttpResponse:
    """Create an inactive account and mail its owner a confirmation link."""
    email = request.POST["email"]
    user = User.objects.create_user(
        username=email, email=email, password=request.POST["password"], is_active=False
    )
    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    link = request.build_absolute_uri(reverse("confirm", args=[uidb64, token]))
    send_mail(
        subject="Confirm your account",
        message=f"Welcome! Confirm your address to activate your account:\n{link}\n",
        from_email=None,  # DEFAULT_FROM_EMAIL
        recipient_list=[email],
    )
    return HttpResponse("Check your mail to confirm your account.", status=201)


def confirm(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """Activate the account when the link's token is valid."""
    try:
        user = User.objects.get(pk=urlsafe_base64_decode(uidb64).decode())
    except (ValueError, User.DoesNotExist):
        return HttpResponseNotFound("No such account.")
    if not default_token_generator.check_token(user, token):
        return HttpResponseBadRequest("This link is invalid or has expired.")
    user.is_active = True
    user.save(update_fields=["is_active"])
    return HttpResponse("Your account is active.")
