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

Every provider route goes through :func:`.gate.answer`: the provider's key
checked with the module's ``credential`` and ``error_reply`` (the two
functions each provider module has), and a recipient's fault, raised by
``delivery.deliver`` as :class:`.delivery.Struck`, answered in the
provider's shape: an endpoint must let ``Struck`` through. Each provider
describes its endpoints for the OpenAPI document in ``<name>.openapi.json``
beside its module.
"""

from __future__ import annotations

__all__ = ["ENDPOINTS", "PREFIX", "ROOTED"]

PREFIX = "/providers"
"""Where the providers' paths are served: ``/providers/<name>`` then the provider's own path."""

ROOTED: frozenset[str] = frozenset({"postmark"})
"""The providers whose SDKs drop the path of their URL: served at the origin's root too.

Their paths clash with nothing under ``/api``; :func:`~pytest_tempinbox.values.provider_url`
gives them the origin (see docs/providers.md).
"""

ENDPOINTS: tuple[tuple[str, str, str, str], ...] = (
    ("sendgrid", "POST", "/v3/mail/send", "mail_send"),
    ("resend", "POST", "/emails", "emails"),
    ("resend", "POST", "/emails/batch", "emails_batch"),
    ("ses", "POST", "/v2/email/outbound-emails", "outbound_emails"),
    ("ses", "POST", "/v2/email/outbound-bulk-emails", "outbound_bulk_emails"),
    ("ses", "GET", "/v2/email/account", "account"),
    # SES v1's query API posts to the endpoint URL itself, which botocore keeps as it is.
    ("ses", "POST", "", "query"),
    ("ses", "POST", "/", "query"),
    ("postmark", "POST", "/email", "email"),
    ("postmark", "POST", "/email/batch", "email_batch"),
    ("postmark", "POST", "/email/withTemplate", "email_with_template"),
    ("postmark", "POST", "/email/batchWithTemplates", "email_batch_with_templates"),
    # postmarker posts these two with a trailing slash, django-anymail the first.
    ("postmark", "POST", "/email/withTemplate/", "email_with_template"),
    ("postmark", "POST", "/email/batchWithTemplates/", "email_batch_with_templates"),
    ("mailgun", "POST", "/v3/{domain}/messages", "messages"),
    ("mailgun", "POST", "/v3/{domain}/messages.mime", "messages_mime"),
    ("brevo", "POST", "/v3/smtp/email", "smtp_email"),
)
"""Each provider endpoint: the provider (its module here), method, path, the module's function."""
