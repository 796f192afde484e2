"""The email providers' send APIs: a send described by a provider's JSON, delivered like mail.

A wing of the server beside ``api/``, framework-free like it: each provider's
module (``sendgrid``, ``resend``) reads its provider's request into a
:class:`~.send.Send` and a :class:`~pytest_tempinbox.values.ProviderRecord`,
``send`` builds the MIME message the provider would have sent, ``delivery``
checks the server's limits and stores one copy per live recipient inbox (the
store reached only through its protocol), and the provider's module answers
in its provider's shape. The API's route table (:mod:`..api.routes`) names the
endpoints of :data:`ENDPOINTS`, each under ``/providers/<name>``; their modules
are imported when a send first arrives, so an unused provider layer costs
nothing (see docs/providers.md).
"""

from __future__ import annotations

__all__ = ["ENDPOINTS", "PREFIX"]

PREFIX = "/providers"
"""Where the providers' paths are served: ``/providers/<name>`` then the provider's own path."""

ENDPOINTS: tuple[tuple[str, str, str], ...] = (
    ("sendgrid", "/v3/mail/send", "mail_send"),
    ("resend", "/emails", "emails"),
    ("resend", "/emails/batch", "emails_batch"),
)
"""Each provider endpoint: the provider (its module here), its path, the module's function."""
