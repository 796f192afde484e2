"""The pytest plugin: its hooks and fixtures, the names pytest looks for in this module.

The only package that imports pytest. Each job has a module of its own:
:mod:`.settings` (options, ini keys, environment), :mod:`.session` (the
session's server: started on first use, remote, shared under xdist, stopped),
:mod:`.reports` (the report of a failing test's mail), :mod:`.artifacts` and
:mod:`.keep` (evidence that outlives the run), :mod:`.django` (the Django
fixture's work), :mod:`.providers` (the providers' SDKs pointed at the
server). What pytest must see, hooks and fixtures, is here.

It stays light: the server (aiosmtpd, Starlette, uvicorn) and the client
(requests) are imported the first time a test asks for a fixture, so a run that
uses none of them opens no port and starts no thread.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING

import pytest

# First: the package's modules imported from here on load without pytest's rewriter.
from . import plain_loading as _plain_loading  # isort: skip
from ..client.remote import RemoteServer
from . import session as _session
from .django import django_mail_to
from .reports import VIEWER_SHOWN, discard, inboxes_of, viewer_line
from .server_handle import TempInboxServer
from .session import SERVERS
from .settings import URL_ENVIRONMENT_VARIABLE as URL_ENVIRONMENT_VARIABLE
from .settings import add_options, resolve_settings

if TYPE_CHECKING:
    from ..client.http import Inbox, TempInboxClient

__all__ = ["RemoteServer", "TempInboxServer"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``tempinbox`` option group and its ini keys."""
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Check the settings, and wire one shared server for all xdist workers."""
    _plain_loading.leave_assertion_rewriting()  # a later session in this process marks anew
    _session.configure(config, resolve_settings(config))


def pytest_report_header(config: pytest.Config) -> list[str]:
    """With ``--tempinbox-ui``, the inbox viewer's URL among pytest's header lines.

    Starts the server for it. Under ``-q`` or ``--no-header`` pytest asks for no
    header, and :func:`pytest_sessionstart` prints the line instead.
    """
    line = viewer_line(config)
    return [] if line is None else [line]


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session: pytest.Session) -> Generator[None, None, None]:
    """With ``--tempinbox-ui``, start the server now and print its viewer's URL if pytest did not.

    Under ``-q`` or ``--no-header`` there is no header: the line is then the
    first of the output, before any progress.
    """
    yield
    config = session.config
    if config.stash.get(VIEWER_SHOWN, False):
        return
    line = viewer_line(config)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if line is not None and reporter is not None:
        reporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop a server that the xdist controller started for its workers.

    With ``--tempinbox-keep``, first hold it open for the failing tests' inboxes.
    """
    _session.unconfigure(config)


@pytest.fixture(scope="session")
def tempinbox_server(request: pytest.FixtureRequest) -> Iterator[TempInboxServer]:
    """The disposable inbox server of this test session.

    Started in this process on first use (or, with ``--tempinbox-url``, the
    server already running there). Point the application's SMTP settings at
    ``smtp_host`` and ``smtp_port``; ``api_url`` is the HTTP API's base URL.
    With ``--tempinbox-tls``, ``ca_path`` (a PEM file) and ``ssl_context()`` let
    clients trust the server's certificate.
    """
    servers = request.config.stash[SERVERS]
    yield servers.get()
    # With --tempinbox-keep, the server outlives the session: pytest_unconfigure stops it.
    if not servers.settings.worker and not servers.settings.keep:
        servers.stop()


# tempinbox and tempinbox_factory take the client from the session's server,
# not from tempinbox_client: every fixture a fixture depends on costs pytest some
# work in each test, even when its value is cached. A session fixture that uses
# the client asks for tempinbox_client, which depends on tempinbox_server so that
# pytest stops the server only after that fixture's teardown.
@pytest.fixture(scope="session")
def tempinbox_client(
    request: pytest.FixtureRequest, tempinbox_server: TempInboxServer
) -> TempInboxClient:
    """A client of the session's server: ``generate``, ``messages``, ``message``, ``delete``.

    In the same process as the server, it answers without HTTP, exactly as HTTP
    would. It is closed when the server stops.
    """
    return request.config.stash[SERVERS].client()


@pytest.fixture
def tempinbox_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Inbox]]:
    """Make new inboxes: ``tempinbox_factory(prefix=None, domain=None, *, address=None) -> Inbox``.

    For tests that need several addresses; every inbox it made is deleted at
    teardown, and listed in the report of a failing test. ``address`` makes
    exactly that inbox (``"alice@tempinbox.test"``), for test data that seeds
    users with fixed addresses; it fails with
    :class:`~pytest_tempinbox.errors.AddressTaken` while a live inbox has it.
    """
    client = request.config.stash[SERVERS].client()
    made = inboxes_of(request)

    def factory(
        prefix: str | None = None, domain: str | None = None, *, address: str | None = None
    ) -> Inbox:
        inbox = client.generate(prefix=prefix, domain=domain, address=address)
        made.append(inbox)
        return inbox

    yield factory
    discard(request, made)


@pytest.fixture
def tempinbox(request: pytest.FixtureRequest) -> Iterator[Inbox]:
    """A brand new disposable inbox for this test, deleted at teardown.

    Give ``tempinbox.address`` to the application under test, then read what it
    sent with ``tempinbox.wait_for_message(subject=...)`` or ``messages()``.
    """
    inbox = request.config.stash[SERVERS].client().generate()
    inboxes_of(request).append(inbox)
    yield inbox
    discard(request, [inbox])


@pytest.fixture
def tempinbox_django(
    request: pytest.FixtureRequest, tempinbox_server: TempInboxServer
) -> Iterator[None]:
    """Send Django's mail to the session's inbox server for this test, over TLS where it can.

    Sets Django's SMTP backend, ``EMAIL_HOST`` and ``EMAIL_PORT``, whatever the
    settings say, with pytest-django's ``settings`` fixture (or Django's
    ``override_settings`` without it); restored after the test. The project's
    ``EMAIL_USE_TLS`` or ``EMAIL_USE_SSL`` is kept when ``--tempinbox-tls``
    serves it (``starttls``/``required``, ``implicit``), with the server's CA
    trusted; on a plain server (the default) both are turned off for the test.
    On Django 6.1 and later, settings that define ``MAILERS`` get each mailer
    pointed at the server instead, the default and every named one, each with
    its own ``use_tls`` or ``use_ssl`` treated so, but those named by the
    ``tempinbox_django_keep_mailers`` ini key; the fixture causes none of
    Django's warnings about the ``EMAIL_*`` settings. A project whose backend
    (or a mailer's) sends through a provider's API that the server answers
    (django-anymail's, django-ses) keeps it, its API URL pointed at the
    server, read from the settings module since pytest-django puts locmem in
    the setting. Fails the test with one line when Django is missing or not
    configured.
    """
    yield from django_mail_to(request, tempinbox_server)


@pytest.fixture
def tempinbox_providers(
    tempinbox_server: TempInboxServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """Point the email providers' SDKs at the session's server for this test; the URLs by provider.

    Sets the environment variables the SDKs read: ``AWS_ENDPOINT_URL_SES`` and
    ``AWS_ENDPOINT_URL_SESV2`` (boto3), ``RESEND_API_URL`` (and ``resend.api_url``
    when ``resend`` is already imported, since it reads the variable on import),
    and stand-in keys (``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_DEFAULT_REGION``, ``SENDGRID_API_KEY``, ``RESEND_API_KEY``) where none
    is set; all undone after the test. Gives each provider's base URL by name
    (``tempinbox_providers["sendgrid"]``), for the SDKs that take it as an
    argument (SendGrid's ``host``). See docs/providers.md.
    """
    from .providers import point_sdks  # the plugin's import stays light (docs/providers.md)

    yield from point_sdks(monkeypatch, tempinbox_server)
