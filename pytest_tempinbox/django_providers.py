"""Django's email provider backends pointed at a pytest-tempinbox server: anymail's, django-ses.

``tempinbox_django`` keeps a project's backend when it sends through a
provider the server answers, instead of putting Django's SMTP backend in its
place: :func:`provider_of` tells such a backend, :func:`backend_settings` gives
the settings that point it at the server (for ``EMAIL_BACKEND``), and
:func:`mailer_options` the ``OPTIONS`` of a Django 6.1 mailer that uses it.
Where the backend needs a key and the project sets none, a stand-in goes
with the URL. What is read of the settings is read with ``getattr`` from the
object given, so that nothing here imports Django or a backend (the table of
docs/recipes/django.md, "Provider backends").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = [
    "ANYMAIL_BACKENDS",
    "DJANGO_SES_BACKEND",
    "LOCMEM_BACKEND",
    "STAND_IN_AWS_KEYS",
    "STAND_IN_KEY",
    "STAND_IN_REGION",
    "backend_settings",
    "mailer_options",
    "provider_mailer",
    "provider_of",
    "served_url",
]

STAND_IN_KEY = "tempinbox-stand-in-key"
"""The API key or token given to a backend that needs one when the project sets none."""
STAND_IN_AWS_KEYS = ("AKIATEMPINBOXFAKEKEY", "tempinbox-fake-secret-access-key-0000000")
"""The access key id and secret given to boto3 when no credentials are set."""
STAND_IN_REGION = "us-east-1"
"""The region given to boto3 when none is set."""

ANYMAIL_BACKENDS: Mapping[str, tuple[str, str, str, str | None]] = {
    # backend: (provider, anymail's ESP setting prefix, path after provider_url, key option)
    "anymail.backends.amazon_ses.EmailBackend": ("ses", "AMAZON_SES", "", None),
    "anymail.backends.sendgrid.EmailBackend": ("sendgrid", "SENDGRID", "/v3/", "api_key"),
    "anymail.backends.mailgun.EmailBackend": ("mailgun", "MAILGUN", "/v3/", "api_key"),
    "anymail.backends.postmark.EmailBackend": ("postmark", "POSTMARK", "/", "server_token"),
    "anymail.backends.resend.EmailBackend": ("resend", "RESEND", "/", "api_key"),
    "anymail.backends.brevo.EmailBackend": ("brevo", "BREVO", "/v3/", "api_key"),
    # Brevo's former name, still served by anymail (with a deprecation warning).
    "anymail.backends.sendinblue.EmailBackend": ("brevo", "SENDINBLUE", "/v3/", "api_key"),
}
"""django-anymail's backends of the providers the server answers (django-anymail 15.2).

Each takes its API's base URL as the ``api_url`` option, or
``ANYMAIL["<ESP>_API_URL"]``, and joins its own path (``mail/send``) onto it;
Amazon SES's takes boto3's ``endpoint_url`` in ``client_params``.
"""

DJANGO_SES_BACKEND = "django_ses.SESBackend"
"""django-ses's backend: boto3's ``endpoint_url`` from ``AWS_SES_REGION_ENDPOINT_URL``."""

LOCMEM_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
"""The backend Django's test environment puts in the project's place."""
_SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"  # MAILERS' default
_ANYMAIL = "ANYMAIL"
_AWS_KEY_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE")
# django-ses's options, and the settings it reads when they are not given.
_DJANGO_SES_SETTINGS = {
    "aws_region_endpoint": "AWS_SES_REGION_ENDPOINT_URL",
    "aws_access_key": "AWS_SES_ACCESS_KEY_ID",
    "aws_secret_key": "AWS_SES_SECRET_ACCESS_KEY",
}
_DJANGO_SES_KEYS = ("AWS_SES_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID", "AWS_SESSION_PROFILE")


def provider_of(backend: str) -> str | None:
    """The provider that ``backend`` (a dotted path) sends through, if the server may answer it."""
    if backend == DJANGO_SES_BACKEND:
        return "ses"
    found = ANYMAIL_BACKENDS.get(backend)
    return None if found is None else found[0]


class _Server(Protocol):
    def provider_url(self, name: str) -> str: ...


def served_url(server: _Server, backend: str) -> str | None:
    """The URL of the provider ``backend`` sends through, when ``server`` answers it; else None."""
    provider = provider_of(backend)
    if provider is None:
        return None
    try:
        return server.provider_url(provider)
    except ValueError:  # a provider this server does not answer (yet)
        return None


def provider_mailer(
    server: _Server,
    mailer: Mapping[str, Any],
    production: Mapping[str, Any],
    settings: object,
    environ: Mapping[str, str],
) -> dict[str, Any] | None:
    """A mailer (Django 6.1) whose backend sends through a provider ``server`` answers, or None.

    The backend and its options are the ``mailer``'s own, unless Django's test
    environment put locmem in its place (no ``OPTIONS``): then those of the
    project's mailer, ``production``. The mailer is that backend with the
    options of :func:`mailer_options`.
    """
    project = production if "OPTIONS" not in mailer else mailer
    backend = mailer.get("BACKEND", _SMTP_BACKEND)
    if "OPTIONS" not in mailer and backend == LOCMEM_BACKEND:
        backend = production.get("BACKEND", backend)
    url = served_url(server, backend)
    if url is None:
        return None
    options = project.get("OPTIONS", {})
    return {"BACKEND": backend, "OPTIONS": mailer_options(backend, url, options, settings, environ)}


def backend_settings(
    backend: str, url: str, settings: object, environ: Mapping[str, str]
) -> dict[str, Any]:
    """The settings that send with ``backend`` to the provider at ``url`` (``provider_url``).

    ``EMAIL_BACKEND``, and for django-anymail the project's ``ANYMAIL`` with the
    backend's URL (``<ESP>_API_URL``, or Amazon SES's ``CLIENT_PARAMS``) and,
    when the project sets none, a stand-in key; for django-ses,
    ``AWS_SES_REGION_ENDPOINT_URL`` and, without credentials in the settings or
    the environment (``environ``), stand-in ``AWS_SES_ACCESS_KEY_ID`` and
    ``AWS_SES_SECRET_ACCESS_KEY``. ``settings`` is read with ``getattr``.
    """
    changes = mailer_options(backend, url, {}, settings, environ)
    if backend == DJANGO_SES_BACKEND:
        named = {_DJANGO_SES_SETTINGS[name]: value for name, value in changes.items()}
        return {"EMAIL_BACKEND": backend, **named}
    esp = ANYMAIL_BACKENDS[backend][1]
    anymail = dict(getattr(settings, _ANYMAIL, None) or {})
    anymail.update({f"{esp}_{name.upper()}": value for name, value in changes.items()})
    return {"EMAIL_BACKEND": backend, _ANYMAIL: anymail}


def mailer_options(
    backend: str,
    url: str,
    options: Mapping[str, Any],
    settings: object,
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """The ``OPTIONS`` of a mailer (Django 6.1) that sends with ``backend`` to ``url``.

    The mailer's own ``options``, with the URL and stand-in credentials of
    :func:`backend_settings` as the backend's options: ``api_url`` (Amazon SES:
    ``client_params``, ``session_params``) and the key option for
    django-anymail, which reads them before its settings; ``aws_region_endpoint``
    (and ``aws_access_key``, ``aws_secret_key``) for django-ses.
    """
    pointed = dict(options)
    if backend == DJANGO_SES_BACKEND:
        pointed["aws_region_endpoint"] = url
        if not _django_ses_credentials(options, settings, environ):
            keys = ("aws_access_key", "aws_secret_key")
            pointed.update(zip(keys, STAND_IN_AWS_KEYS, strict=True))
        return pointed
    _, esp, path, key = ANYMAIL_BACKENDS[backend]
    if key is not None:
        pointed["api_url"] = url + path
        if not _anymail_setting(key, esp, options, settings):
            pointed[key] = STAND_IN_KEY
        return pointed
    session = dict(_anymail_setting("session_params", esp, options, settings) or {})
    client = dict(_anymail_setting("client_params", esp, options, settings) or {})
    client["endpoint_url"] = url
    pointed["client_params"] = client
    region = client.get("region_name") or session.get("region_name")
    if not (region or environ.get("AWS_DEFAULT_REGION")):
        client["region_name"] = STAND_IN_REGION
    credentials = ("aws_access_key_id", "profile_name", "botocore_session")
    if not any(session.get(name) for name in credentials) and not _aws_environment(environ):
        session["aws_access_key_id"], session["aws_secret_access_key"] = STAND_IN_AWS_KEYS
        pointed["session_params"] = session
    return pointed


def _anymail_setting(name: str, esp: str, options: Mapping[str, Any], settings: object) -> Any:
    """An anymail option as anymail finds it: the mailer's options, then the settings; or None.

    ``OPTIONS[name]``, ``ANYMAIL["<ESP>_<NAME>"]``, ``ANYMAIL_<ESP>_<NAME>``,
    ``<ESP>_<NAME>`` (``anymail.utils.get_anymail_setting``, with ``allow_bare``).
    """
    if name in options:
        return options[name]
    setting = f"{esp}_{name.upper()}"
    anymail = getattr(settings, _ANYMAIL, None) or {}
    if setting in anymail:
        return anymail[setting]
    found = getattr(settings, f"{_ANYMAIL}_{setting}", None)
    return getattr(settings, setting, None) if found is None else found


def _django_ses_credentials(
    options: Mapping[str, Any], settings: object, environ: Mapping[str, str]
) -> bool:
    """Whether django-ses has credentials: in its options, its settings, or boto3's environment."""
    if options.get("aws_access_key") or options.get("aws_session_profile"):
        return True
    in_settings = any(getattr(settings, name, None) for name in _DJANGO_SES_KEYS)
    return in_settings or _aws_environment(environ)


def _aws_environment(environ: Mapping[str, str]) -> bool:
    """Whether boto3 finds credentials in the environment: keys, or a named profile."""
    return any(environ.get(name) for name in _AWS_KEY_VARIABLES)
