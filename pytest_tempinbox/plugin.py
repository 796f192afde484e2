"""The pytest plugin: options, fixtures, xdist wiring and failure reports.

The only module that imports pytest. It stays light: the server (aiosmtpd,
Starlette, uvicorn) and the client (requests) are imported the first time a
test asks for a fixture, so a run that uses none of them opens no port and
starts no thread.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import pytest

from ._net import is_loopback_url
from .limits import LIMIT_SETTINGS, format_limit, parse_limit

if TYPE_CHECKING:
    from .client import Inbox, TempInboxClient
    from .server import InboxServer

__all__ = ["RemoteServer", "TempInboxServer"]

URL_ENVIRONMENT_VARIABLE = "TEMPINBOX_URL"
_WILDCARDS = {"", "0.0.0.0", "::", "[::]"}
_OPTIONS = (
    ("port", "port of the HTTP API (0: a free port)", "0"),
    ("smtp_port", "port of the SMTP listener (0: a free port)", "0"),
    ("host", "address both listeners bind", "127.0.0.1"),
    ("domain", "domain of generated addresses", "tempinbox.test"),
    (
        "url",
        f"use the server already running at this API URL (ending in /api) instead of "
        f"starting one; also ${URL_ENVIRONMENT_VARIABLE}",
        None,
    ),
)


class TempInboxServer(Protocol):
    """What the ``tempinbox_server`` fixture gives: where to send mail and where the API is."""

    @property
    def smtp_host(self) -> str:
        """The host to send mail to."""

    @property
    def smtp_port(self) -> int:
        """The SMTP port."""

    @property
    def api_url(self) -> str:
        """The API's base URL, ending in ``/api``."""


@dataclass(frozen=True)
class RemoteServer:
    """A server that was already running, found through its API URL."""

    api_url: str
    smtp_host: str
    smtp_port: int


@dataclass(frozen=True)
class Settings:
    """The plugin's configuration, resolved: command line, then environment, then ini."""

    port: int
    smtp_port: int
    host: str
    domain: str
    url: str | None
    limits: dict[str, float | None] = field(default_factory=dict)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``tempinbox`` option group and its ini keys."""
    group = parser.getgroup("tempinbox", "disposable email inboxes (pytest-tempinbox)")
    for name, help, default in _OPTIONS:
        flag = "--tempinbox-" + name.replace("_", "-")
        shown = f" (default: {default})" if default else ""
        group.addoption(flag, dest=f"tempinbox_{name}", default=None, help=help + shown)
        parser.addini(f"tempinbox_{name}", help + shown, default=None)
    for setting in LIMIT_SETTINGS:
        key = setting.flag.replace("-", "_")
        help = f"{setting.help} (default: {format_limit(setting.default)})"
        group.addoption(f"--tempinbox-{setting.flag}", dest=f"tempinbox_{key}", help=help)
        parser.addini(f"tempinbox_{key}", help, default=None)


def _setting(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(f"tempinbox_{name}")
    if value is None and name == "url":
        value = os.environ.get(URL_ENVIRONMENT_VARIABLE) or None
    if value is None:
        value = config.getini(f"tempinbox_{name}") or None
    return None if value is None else str(value).strip()


def _port(config: pytest.Config, name: str) -> int:
    text = _setting(config, name) or "0"
    if not text.isdigit() or int(text) > 65535:
        flag = "--tempinbox-" + name.replace("_", "-")
        raise pytest.UsageError(f"{flag}: {text!r} is not a port number (0-65535)")
    return int(text)


def _limits(config: pytest.Config) -> dict[str, float | None]:
    limits = {}
    for setting in LIMIT_SETTINGS:
        text = _setting(config, setting.flag.replace("-", "_"))
        if text is None:
            continue
        try:
            limits[setting.name] = parse_limit(setting, text)
        except ValueError as exc:
            raise pytest.UsageError(f"--tempinbox-{setting.flag}: {exc}") from None
    return limits


def resolve_settings(config: pytest.Config) -> Settings:
    """Read and check the plugin's settings; a bad value is a :class:`pytest.UsageError`."""
    worker_url = getattr(config, "workerinput", {}).get("tempinbox_url")
    return Settings(
        port=_port(config, "port"),
        smtp_port=_port(config, "smtp_port"),
        host=_setting(config, "host") or "127.0.0.1",
        domain=(_setting(config, "domain") or "tempinbox.test").lower(),
        url=(worker_url or _setting(config, "url") or "").rstrip("/") or None,
        limits=_limits(config),
    )


def find_remote_server(api_url: str) -> RemoteServer:
    """Ask the server at ``api_url`` where its SMTP listener is.

    Raises :class:`pytest.UsageError` when it does not answer as a server of this
    package would.
    """
    import urllib.request  # only remote mode needs it: keep unused runs light

    info_url = api_url + "/info"
    opener = urllib.request.build_opener()
    if is_loopback_url(api_url):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(info_url, timeout=10) as response:
            info = json.load(response)
        smtp_host, smtp_port = str(info["smtp"]["host"]), int(info["smtp"]["port"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise pytest.UsageError(
            f"--tempinbox-url: {api_url} is not a pytest-tempinbox server: "
            f"GET {info_url} failed: {exc}"
        ) from None
    if smtp_host in _WILDCARDS:
        smtp_host = urlsplit(api_url).hostname or "127.0.0.1"
    return RemoteServer(api_url=api_url, smtp_host=smtp_host, smtp_port=smtp_port)


class _Servers:
    """Starts (or finds) the one server of this pytest process, on first demand."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.remote: RemoteServer | None = None
        self.local: InboxServer | None = None

    def get(self) -> TempInboxServer:
        if self.settings.url:
            if self.remote is None:
                self.remote = find_remote_server(self.settings.url)
            return self.remote
        if self.local is None:
            from .errors import ServerStartError
            from .server import InboxServer

            server = InboxServer(
                host=self.settings.host,
                smtp_port=self.settings.smtp_port,
                api_port=self.settings.port,
                domains=[self.settings.domain],
                **self.settings.limits,  # type: ignore[arg-type]
            )
            try:
                server.start()
            except ServerStartError as exc:
                raise pytest.UsageError(f"pytest-tempinbox: {exc}") from None
            self.local = server
        return self.local

    def stop(self) -> None:
        if self.local is not None:
            self.local.stop()
            self.local = None


_SERVERS = pytest.StashKey[_Servers]()
_INBOXES = pytest.StashKey[list["Inbox"]]()
_REPORTER = "tempinbox-reporter"


def pytest_configure(config: pytest.Config) -> None:
    """Check the settings, and wire one shared server for all xdist workers."""
    settings = resolve_settings(config)
    config.stash[_SERVERS] = _Servers(settings)
    if settings.url and not hasattr(config, "workerinput"):
        find_remote_server(settings.url)  # fail fast, as a usage error
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_XdistController(config), "tempinbox-xdist")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop a server that the xdist controller started for its workers."""
    servers = config.stash.get(_SERVERS, None)
    if servers is not None:
        servers.stop()


class _XdistController:
    """xdist's controller starts one server and hands its URL to every worker."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        """Give the worker the shared server's API URL."""
        server = self.config.stash[_SERVERS].get()
        node.workerinput["tempinbox_url"] = server.api_url


class _Reporter:
    """Adds the mail of a failed test's inboxes to its report.

    Registered when a test first asks for an inbox, so that a run that uses none
    does not pay for a hook around every report.
    """

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Add a ``tempinbox`` section listing the mail each inbox of a failed test received."""
        report = yield
        inboxes = item.stash.get(_INBOXES, None)
        if inboxes and report.failed and report.when == "call":
            report.sections.append(("tempinbox", _mail_report(inboxes)))
        return report


def _inboxes_of(request: pytest.FixtureRequest) -> list[Inbox]:
    """The list of the inboxes made for this test, for teardown and the failure report."""
    manager = request.config.pluginmanager
    if not manager.has_plugin(_REPORTER):
        manager.register(_Reporter(), _REPORTER)
    made: list[Inbox] = request.node.stash.setdefault(_INBOXES, [])
    return made


def _mail_report(inboxes: list[Inbox]) -> str:
    from .client import describe
    from .errors import TempInboxError

    lines = []
    for inbox in inboxes:
        try:
            received = inbox.messages()
        except TempInboxError as exc:
            lines.append(f"{inbox.address}: could not be read ({exc})")
            continue
        lines.append(f"{inbox.address}: {len(received)} message(s)")
        lines += [f"  - {describe(message)}" for message in received]
    return "\n".join(lines)


@pytest.fixture(scope="session")
def tempinbox_server(request: pytest.FixtureRequest) -> Iterator[TempInboxServer]:
    """The disposable inbox server of this test session.

    Started in this process on first use (or, with ``--tempinbox-url``, the
    server already running there). Point the application's SMTP settings at
    ``smtp_host`` and ``smtp_port``; ``api_url`` is the HTTP API's base URL.
    """
    servers = request.config.stash[_SERVERS]
    yield servers.get()
    if not hasattr(request.config, "workerinput"):
        servers.stop()


@pytest.fixture(scope="session")
def tempinbox_client(
    request: pytest.FixtureRequest, tempinbox_server: TempInboxServer
) -> Iterator[TempInboxClient]:
    """A client of the session's server: ``generate``, ``messages``, ``message``, ``delete``."""
    from .client import TempInboxClient

    local = request.config.stash[_SERVERS].local
    # In the same process: the same API app, called on the server's loop, no HTTP.
    transport = local.local_transport() if local is tempinbox_server else None
    with TempInboxClient(tempinbox_server.api_url, transport=transport) as client:
        yield client


@pytest.fixture
def tempinbox_factory(
    request: pytest.FixtureRequest, tempinbox_client: TempInboxClient
) -> Iterator[Callable[..., Inbox]]:
    """Make new inboxes: ``tempinbox_factory(prefix=None, domain=None) -> Inbox``.

    For tests that need several addresses; every inbox it made is deleted at
    teardown, and listed in the report of a failing test.
    """
    made = _inboxes_of(request)

    def factory(prefix: str | None = None, domain: str | None = None) -> Inbox:
        inbox = tempinbox_client.generate(prefix=prefix, domain=domain)
        made.append(inbox)
        return inbox

    yield factory
    _delete_all(made)


@pytest.fixture
def tempinbox(request: pytest.FixtureRequest, tempinbox_client: TempInboxClient) -> Iterator[Inbox]:
    """A brand new disposable inbox for this test, deleted at teardown.

    Give ``tempinbox.address`` to the application under test, then read what it
    sent with ``tempinbox.wait_for_message(subject=...)`` or ``messages()``.
    """
    inbox = tempinbox_client.generate()
    _inboxes_of(request).append(inbox)
    yield inbox
    _delete_all([inbox])


def _delete_all(inboxes: list[Inbox]) -> None:
    from .errors import InboxNotFound

    for inbox in inboxes:
        with contextlib.suppress(InboxNotFound):  # the test deleted it itself
            inbox.delete()
