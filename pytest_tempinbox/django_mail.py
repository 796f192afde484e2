"""Django's mail, sent to a pytest-tempinbox server: settings, and a backend that trusts its CA.

The ``tempinbox_django`` fixture uses :func:`mail_settings`; Django's own test
runner (``manage.py test``) can use them too, or name :class:`EmailBackend` in
``override_settings`` (docs/recipes/django.md). The only module that imports
Django, and nothing imports it but the fixture. Written against Django 5.2 (the
LTS); tests/test_django.py fails loudly if a release changes what it relies on:
``EmailBackend.ssl_context`` and ``DNS_NAME._fqdn``.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from django.conf import settings
from django.core.mail.backends import smtp
from django.core.mail.utils import DNS_NAME
from django.utils.functional import cached_property

__all__ = [
    "CA_PATH_SETTING",
    "EmailBackend",
    "changed_settings",
    "dns_name_cached",
    "mail_settings",
    "project_tls",
]

CA_PATH_SETTING = "TEMPINBOX_CA_PATH"
"""The setting that tells :class:`EmailBackend` which CA to trust."""

DJANGO_SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
TRUSTING_BACKEND = "pytest_tempinbox.django_mail.EmailBackend"
# Until the real host name is known, this is what Django's SMTP backend says in
# EHLO and puts in Message-IDs: socket.getfqdn() can take seconds.
_LOCAL_NAME = "localhost"


class _Server(Protocol):
    @property
    def smtp_host(self) -> str: ...

    @property
    def smtp_port(self) -> int: ...

    @property
    def tls(self) -> str: ...

    @property
    def ca_path(self) -> str | None: ...


class EmailBackend(smtp.EmailBackend):
    """Django's SMTP backend, trusting the CA named by the ``TEMPINBOX_CA_PATH`` setting.

    Django's own builds its context with ``ssl.create_default_context()``, which
    trusts only the system's CAs; this one trusts the test server's instead, and
    still presents ``EMAIL_SSL_CERTFILE`` and ``EMAIL_SSL_KEYFILE`` when set.
    """

    @cached_property
    def ssl_context(self) -> ssl.SSLContext:
        """A context that verifies the server's certificate against the test CA.

        Django opens a connection, and builds a backend, for each ``send_mail``;
        the context, whose files take about 0.4 ms to load, is built once for
        each CA and client certificate, and shared.
        """
        paths = (getattr(settings, CA_PATH_SETTING), self.ssl_certfile, self.ssl_keyfile)
        files = tuple(os.fsdecode(path) if path else None for path in paths)
        return _context(*files, versions=tuple(_version(path) for path in files))


@functools.lru_cache(maxsize=8)
def _context(
    ca_path: str | None,
    certfile: str | None,
    keyfile: str | None,
    *,
    versions: tuple[tuple[int, int] | None, ...],
) -> ssl.SSLContext:
    """A client context trusting ``ca_path``; ``versions`` tell a rewritten file from the old."""
    context = ssl.create_default_context(cafile=ca_path)
    if certfile:
        context.load_cert_chain(certfile, keyfile)
    return context


def _version(path: str | None) -> tuple[int, int] | None:
    """A file's modification time and size, to key the cache by; None: no file, or none there."""
    if not path:
        return None
    try:
        status = os.stat(path)
    except OSError:
        return None  # the context's own load says what is wrong
    return status.st_mtime_ns, status.st_size


def mail_settings(server: _Server, use_tls: bool, use_ssl: bool) -> dict[str, Any]:
    """The settings that send Django's mail to ``server``, over TLS where it can carry it.

    ``use_tls`` and ``use_ssl`` are the project's ``EMAIL_USE_TLS`` and
    ``EMAIL_USE_SSL``. They are kept when the server's TLS mode serves them;
    otherwise they become what it speaks: both off on a plain server (``off``),
    STARTTLS on a ``starttls`` or ``required`` one (``required`` refuses plain
    mail; ``EMAIL_USE_SSL`` becomes STARTTLS), SMTPS on an ``implicit`` one.
    """
    if server.tls == "off":
        use_tls = use_ssl = False
    elif server.tls == "implicit":
        use_tls, use_ssl = False, True
    else:
        use_tls, use_ssl = use_tls or use_ssl or server.tls == "required", False
    values: dict[str, Any] = {
        "EMAIL_BACKEND": DJANGO_SMTP_BACKEND,
        "EMAIL_HOST": server.smtp_host,
        "EMAIL_PORT": server.smtp_port,
        "EMAIL_USE_TLS": use_tls,
        "EMAIL_USE_SSL": use_ssl,
    }
    if use_tls or use_ssl:
        values["EMAIL_BACKEND"] = TRUSTING_BACKEND
        values[CA_PATH_SETTING] = server.ca_path
    return values


def changed_settings(values: dict[str, Any]) -> dict[str, Any]:
    """Those of ``values`` that Django's settings do not already hold, of the same type.

    Overriding a setting costs Django a ``setting_changed`` signal on the way in
    and on the way out, for each setting; one that already has the value (most
    projects' ``EMAIL_USE_TLS`` and ``EMAIL_USE_SSL`` against a plain server)
    can be left as it is. A value of another type (``0`` for ``False``) is
    still overridden, so that the test reads exactly the value given.
    """
    missing = object()
    changed: dict[str, Any] = {}
    for name, value in values.items():
        current = getattr(settings, name, missing)
        if current is missing or type(current) is not type(value) or current != value:
            changed[name] = value
    return changed


@contextmanager
def dns_name_cached() -> Iterator[None]:
    """Keep Django's SMTP backend from calling ``socket.getfqdn()``, which can take seconds.

    Django caches the name in ``DNS_NAME._fqdn`` on first use; until it has,
    ``localhost`` stands in, and is taken back afterwards.
    """
    if hasattr(DNS_NAME, "_fqdn"):
        yield
        return
    DNS_NAME._fqdn = _LOCAL_NAME
    try:
        yield
    finally:
        if getattr(DNS_NAME, "_fqdn", None) == _LOCAL_NAME:
            del DNS_NAME._fqdn


def project_tls() -> tuple[bool, bool]:
    """The project's ``EMAIL_USE_TLS`` and ``EMAIL_USE_SSL``.

    Raises :class:`RuntimeError` with a one-line reason when Django's settings
    are not configured, or cannot be imported.
    """
    from django.core.exceptions import ImproperlyConfigured

    try:
        return bool(settings.EMAIL_USE_TLS), bool(settings.EMAIL_USE_SSL)
    except ImproperlyConfigured:
        raise RuntimeError(
            "Django's settings are not configured: set DJANGO_SETTINGS_MODULE "
            "(with pytest-django, in pytest.ini) or call settings.configure()"
        ) from None
    except ImportError as exc:
        raise RuntimeError(f"Django's settings cannot be imported: {exc}") from None
