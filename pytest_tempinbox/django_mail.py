"""Django's mail, sent to a pytest-tempinbox server: settings, and a backend that trusts its CA.

The ``tempinbox_django`` fixture uses :func:`fixture_settings`: the ``MAILERS``
of :func:`mailers_settings` for a project that defines them (Django 6.1 and
later), else the ``EMAIL_*`` settings of :func:`mail_settings`, or, for a
project whose backend sends through an email provider's API that the server
answers, that backend pointed at the server (:mod:`.django_providers`). Django's own test
runner (``manage.py test``) can use them too, or name :class:`EmailBackend` in
``override_settings`` (docs/recipes/django.md). The only module that imports
Django, and nothing imports it but the fixture. Written against Django 4.2, 5.2
and 6.1; tests/plugin/test_django.py fails loudly if a release changes what it
relies on: ``EmailBackend.ssl_context``, ``DNS_NAME._fqdn``, the wording of
6.1's warning about the ``EMAIL_*`` settings, and the ``MAILERS`` that Django's
test environment sets aside (``django.test.utils._TestState.saved_data``).
"""

from __future__ import annotations

import functools
import importlib
import os
import ssl
import warnings
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from django.conf import settings
from django.core.mail.backends import smtp
from django.core.mail.utils import DNS_NAME
from django.test import override_settings
from django.utils.functional import cached_property

from . import django_providers

__all__ = [
    "CA_PATH_SETTING",
    "EmailBackend",
    "changed_settings",
    "dns_name_cached",
    "email_settings_quiet",
    "fixture_settings",
    "mail_settings",
    "mailers_settings",
    "override_mail_settings",
    "project_backend",
    "project_mailers",
    "project_tls",
    "provider_settings",
    "uses_mailers",
]

CA_PATH_SETTING = "TEMPINBOX_CA_PATH"
"""The setting that tells :class:`EmailBackend` which CA to trust."""

DJANGO_SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
TRUSTING_BACKEND = "pytest_tempinbox.django_mail.EmailBackend"
# Until the real host name is known, this is what Django's SMTP backend says in
# EHLO and puts in Message-IDs: socket.getfqdn() can take seconds.
_LOCAL_NAME = "localhost"
# Django 6.1 deprecates these settings; reading or writing one warns, unless
# Django itself does it. The message, from django/conf/__init__.py.
_DEPRECATED_SETTING_WARNING = r"The EMAIL_\w+ setting is deprecated"
# The SMTP backend's options that a mailer keeps when pointed at the server;
# it refuses others (another backend's), and the fixture sets host, port and TLS.
_SMTP_OPTIONS = ("username", "password", "timeout", "ssl_certfile", "ssl_keyfile")


class _Server(Protocol):
    @property
    def smtp_host(self) -> str: ...

    @property
    def smtp_port(self) -> int: ...

    @property
    def tls(self) -> str: ...

    @property
    def ca_path(self) -> str | None: ...

    def provider_url(self, name: str) -> str: ...


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
    use_tls, use_ssl = _served_tls(server.tls, use_tls, use_ssl)
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


def _served_tls(mode: str, use_tls: bool, use_ssl: bool) -> tuple[bool, bool]:
    """``use_tls`` and ``use_ssl`` made what a TLS ``mode`` serves (see :func:`mail_settings`)."""
    if mode == "off":
        return False, False
    if mode == "implicit":
        return False, True
    return use_tls or use_ssl or mode == "required", False


def mailers_settings(
    server: _Server,
    mailers: Mapping[str, Mapping[str, Any]],
    production: Mapping[str, Mapping[str, Any]] | None = None,
    keep: Collection[str] = (),
) -> dict[str, Any]:
    """The ``MAILERS`` (Django 6.1) that send each of ``mailers`` to ``server``, but ``keep``'s.

    Each mailer becomes Django's SMTP backend, or :class:`EmailBackend` with TLS
    on, with the server's host and port; its ``use_tls`` and ``use_ssl``
    options turn into what the server speaks, as in :func:`mail_settings`, and
    the SMTP backend's other options it sets (``username``, ``password``,
    ``timeout``, ``ssl_certfile``, ``ssl_keyfile``) are kept. The options are
    the mailer's own; for one without ``OPTIONS`` (the locmem backend that
    Django's test environment puts in each mailer's place), those of the same
    mailer in ``production``, the project's ``MAILERS``. A mailer whose backend
    (so found) sends through a provider the server answers keeps it, pointed at
    the server (:func:`~.django_providers.mailer_options`). A mailer named in
    ``keep`` stays as it is in ``mailers``. Raises :class:`ValueError` when
    ``keep`` names a mailer that ``mailers`` does not define.
    """
    production = {} if production is None else production
    unknown = sorted(set(keep) - set(mailers))
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise ValueError(f"MAILERS has no mailer {names}; its mailers: {', '.join(mailers)}")
    pointed: dict[str, Any] = {}
    trusting = False
    for alias, mailer in mailers.items():
        if alias in keep:
            pointed[alias] = mailer
            continue
        options = mailer.get("OPTIONS", production.get(alias, {}).get("OPTIONS", {}))
        project = production.get(alias, {})
        provider = django_providers.provider_mailer(server, mailer, project, settings, os.environ)
        if provider is not None:
            pointed[alias] = provider
            continue
        use_tls, use_ssl = _served_tls(
            server.tls, bool(options.get("use_tls")), bool(options.get("use_ssl"))
        )
        kept = {name: options[name] for name in _SMTP_OPTIONS if name in options}
        served = {"host": server.smtp_host, "port": server.smtp_port}
        pointed[alias] = {
            "BACKEND": TRUSTING_BACKEND if use_tls or use_ssl else DJANGO_SMTP_BACKEND,
            "OPTIONS": {**kept, **served, "use_tls": use_tls, "use_ssl": use_ssl},
        }
        trusting = trusting or use_tls or use_ssl
    values: dict[str, Any] = {"MAILERS": pointed}
    if trusting:
        values[CA_PATH_SETTING] = server.ca_path
    return values


def provider_settings(server: _Server, backend: str) -> dict[str, Any] | None:
    """The settings that send with ``backend`` to ``server``, when it answers its provider; or None.

    ``backend`` is a dotted path (:func:`project_backend`); the settings are
    those of :func:`~.django_providers.backend_settings`.
    """
    url = django_providers.served_url(server, backend)
    if url is None:
        return None
    return django_providers.backend_settings(backend, url, settings, os.environ)


def project_backend() -> str:
    """The project's ``EMAIL_BACKEND``, as its settings module defines it.

    Django's test environment (pytest-django, ``manage.py test``) puts the
    locmem backend in the setting: then the value of the module named by
    ``DJANGO_SETTINGS_MODULE``, or, for settings without a module
    (``settings.configure()``), the one that Django's test environment set
    aside. A backend other than locmem in the setting (a test's own) is
    returned as it is.
    """
    from django.test import utils

    with email_settings_quiet():
        live: str = settings.EMAIL_BACKEND
    if live != django_providers.LOCMEM_BACKEND:
        return live
    name = os.environ.get("DJANGO_SETTINGS_MODULE")
    module = importlib.import_module(name) if name else None
    backend = getattr(module, "EMAIL_BACKEND", None)
    if isinstance(backend, str):
        return backend
    saved = getattr(getattr(utils, "_TestState", None), "saved_data", None)
    return str(getattr(saved, "email_backend", live))


def uses_mailers() -> bool:
    """Whether the project's mail goes by ``MAILERS``: Django 6.1 or later, settings defining it."""
    from django.core import mail

    return hasattr(mail, "mailers") and hasattr(settings, "MAILERS")


def project_mailers() -> dict[str, Any]:
    """The project's ``MAILERS``, as its settings define them.

    Django's test environment (pytest-django, ``manage.py test``) replaces each
    mailer with the locmem backend, options and all, and keeps the project's
    own aside; those are returned then, else the ``MAILERS`` setting.
    """
    from django.test import utils

    saved = getattr(getattr(utils, "_TestState", None), "saved_data", None)
    mailers = getattr(saved, "mailers", None)
    return dict(settings.MAILERS if mailers is None else mailers)


def fixture_settings(server: _Server, keep_mailers: Collection[str] = ()) -> dict[str, Any]:
    """What ``tempinbox_django`` overrides: the settings that send mail to ``server``, and differ.

    ``MAILERS`` (:func:`mailers_settings`, leaving the mailers of
    ``keep_mailers`` as they are) for a project that defines it on Django 6.1
    or later, else the project's provider backend pointed at ``server``
    (:func:`provider_settings`) when it has one that the server answers, else
    the ``EMAIL_*`` settings (:func:`mail_settings`) the project uses, read
    without Django 6.1's warning about them. Raises
    :class:`RuntimeError` with a one-line reason when Django's settings are not
    configured or cannot be imported, :class:`ValueError` when ``keep_mailers``
    names a mailer that ``MAILERS`` does not define.
    """
    if _configured_uses_mailers():
        values = mailers_settings(server, settings.MAILERS, project_mailers(), keep_mailers)
    else:
        with _settings_problem():
            provider = provider_settings(server, project_backend())
        values = mail_settings(server, *project_tls()) if provider is None else provider
    return changed_settings(values)


def _configured_uses_mailers() -> bool:
    """:func:`uses_mailers`, raising :class:`RuntimeError` when the settings are not configured."""
    with _settings_problem():
        return uses_mailers()


@contextmanager
def _settings_problem() -> Iterator[None]:
    """Django's complaint about settings it cannot load, made a one-line :class:`RuntimeError`."""
    from django.core.exceptions import ImproperlyConfigured

    try:
        yield
    except ImproperlyConfigured:
        raise RuntimeError(
            "Django's settings are not configured: set DJANGO_SETTINGS_MODULE "
            "(with pytest-django, in pytest.ini) or call settings.configure()"
        ) from None
    except ImportError as exc:
        raise RuntimeError(f"Django's settings cannot be imported: {exc}") from None


@contextmanager
def email_settings_quiet() -> Iterator[None]:
    """Read or override the ``EMAIL_*`` settings without Django 6.1's deprecation warning.

    For a project that still uses them: the warning is the project's, said
    when Django loads its settings; the fixture's own reads and overrides add
    none. Other warnings pass as before.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _DEPRECATED_SETTING_WARNING, Warning)
        yield


class override_mail_settings(override_settings):  # named after Django's
    """Django's ``override_settings``, quiet about the ``EMAIL_*`` settings it sets and restores.

    Django 6.1 warns when code outside Django reads or writes one of them, and
    ``override_settings`` does both, on the way in and out; this one does it
    without the warning (:func:`email_settings_quiet`), for a project that
    still uses them. The same as ``override_settings`` on Django 5.2 and before.
    """

    def enable(self) -> None:
        """Override the settings, quietly."""
        with email_settings_quiet():
            super().enable()

    def disable(self) -> None:
        """Restore the settings, quietly."""
        with email_settings_quiet():
            super().disable()


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
    with email_settings_quiet():
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
    """The project's ``EMAIL_USE_TLS`` and ``EMAIL_USE_SSL``, read without Django 6.1's warning.

    Raises :class:`RuntimeError` with a one-line reason when Django's settings
    are not configured, or cannot be imported.
    """
    with _settings_problem(), email_settings_quiet():
        use_tls, use_ssl = settings.EMAIL_USE_TLS, settings.EMAIL_USE_SSL
    return bool(use_tls), bool(use_ssl)
