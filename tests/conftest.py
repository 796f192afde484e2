"""Shared fixtures: one real server for the session, an HTTP session, and mail helpers."""

from __future__ import annotations

import os
import smtplib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import trustme  # noqa: F401  # see below
from hypothesis import settings

from pytest_tempinbox.client.http import Inbox, TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer

from .helpers import CLIENT_NAME, RawSMTP
from .redis_process import RedisProcess
from .redis_support import clean_redis, session_redis

# trustme (and with it cryptography) is imported above, before any in-process
# pytester run: such a run drops the modules it imported from sys.modules, and
# cryptography's compiled core cannot be imported a second time in one process
# ("curve must be an EllipticCurve instance" in every later TLS test).

# Locally, Hypothesis explores new examples on every run; in CI the same ones, so
# that a red run can be reproduced and a green one is not luck.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

SCREENSHOTS_VARIABLE = "TEMPINBOX_SCREENSHOTS"
_SCREENSHOTS = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def server() -> Iterator[InboxServer]:
    """A running server on ephemeral ports, shared by the whole test session."""
    with InboxServer(domains=["tempinbox.test", "other.test"], hostname="mx.tempinbox.test") as srv:
        yield srv


@pytest.fixture
def private_server() -> Iterator[InboxServer]:
    """A server for one test alone: patching its store or counting its tasks disturbs no other."""
    with InboxServer(hostname="mx.tempinbox.test") as srv:
        yield srv


@pytest.fixture(scope="session")
def http() -> Iterator[requests.Session]:
    """A pooled HTTP session that ignores proxy settings from the environment."""
    with requests.Session() as session:
        session.trust_env = False
        yield session


@pytest.fixture
def api(server: InboxServer) -> str:
    """The server's API base URL, ending in /api."""
    return server.api_url


@pytest.fixture
def address(server: InboxServer, http: requests.Session) -> str:
    """A freshly generated address."""
    response = http.post(server.api_url + "/generate")
    assert response.status_code == 201
    email: str = response.json()["email"]
    return email


@pytest.fixture
def smtp(server: InboxServer) -> Iterator[smtplib.SMTP]:
    """An smtplib client connected to the server (EHLO not yet sent)."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        yield client


@pytest.fixture
def raw_smtp(server: InboxServer) -> Iterator[RawSMTP]:
    """A raw line-level SMTP connection to the server, greeting already read."""
    client = RawSMTP(server.smtp_host, server.smtp_port)
    yield client
    client.close()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, with pytest-asyncio's loop scope set in the runs it makes (else it warns)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-o asyncio_default_fixture_loop_scope=function")
    return pytester


@pytest.fixture(scope="session")
def screenshots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where browser tests save a screenshot of each state they reach.

    ``$TEMPINBOX_SCREENSHOTS``, else ``viewer-screenshots`` in pytest's base
    temporary directory; the run's summary names it.
    """
    chosen = os.environ.get(SCREENSHOTS_VARIABLE)
    directory = Path(chosen) if chosen else tmp_path_factory.getbasetemp() / "viewer-screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    request.config.stash[_SCREENSHOTS] = directory
    return directory


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """Name the directory of the screenshots that browser tests saved, if any ran."""
    directory = config.stash.get(_SCREENSHOTS, None)
    if directory is not None:
        terminalreporter.write_sep("-", "viewer screenshots")
        terminalreporter.write_line(f"saved in {directory}")


@pytest.fixture(scope="module", params=["http", "local"])
def client(request: pytest.FixtureRequest, server: InboxServer) -> Iterator[TempInboxClient]:
    """The client over HTTP, and over the in-process transport: both must behave alike."""
    transport = server.local_transport() if request.param == "local" else None
    with TempInboxClient(server.api_url, transport=transport) as client:
        yield client


@pytest.fixture
def inbox(client: TempInboxClient) -> Inbox:
    """A fresh inbox, through each client of :func:`client`."""
    return client.generate()


# The Redis store's tests: one redis-server for the session (tests/redis_support.py).


@pytest.fixture(scope="session")
def redis_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A real ``redis-server`` for the session (skipped where it is not installed)."""
    yield from session_redis(tmp_path_factory.mktemp("redis"))


@pytest.fixture
def redis_url(redis_process: RedisProcess) -> str:
    """The URL of the session's Redis, emptied (``FLUSHALL``) for this test."""
    return clean_redis(redis_process).url
