"""The site's two pages: sign up, and confirm the address from the mail."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/confirm/<str:uidb64>/<str:token>/", views.confirm, name="confirm"),
]
