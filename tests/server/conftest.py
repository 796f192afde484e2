"""Fixtures shared by server test modules: servers by TLS mode and store, the viewer's browser."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import resend
from playwright.sync_api import Browser, sync_playwright

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.client.inbox import Inbox
from pytest_tempinbox.server.inbox_server import InboxServer

from .tls_support import HOSTNAME, Servers
from .viewer_support import PIXEL, TIMEOUT, Observer, Viewer, find_chromium

# --- TLS and AUTH modes -------------------------------------------------------------------


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    """``servers(tls, smtp_auth)``: a running server in those modes, one per pair for the module."""
    started: dict[tuple[str, str], InboxServer] = {}

    def get(tls: str = "off", smtp_auth: str = "any") -> InboxServer:
        if (tls, smtp_auth) not in started:
            server = InboxServer(tls=tls, smtp_auth=smtp_auth, hostname=HOSTNAME)
            server.start()
            started[tls, smtp_auth] = server
        return started[tls, smtp_auth]

    yield get
    for server in started.values():
        server.stop()


# --- the viewer in a browser ----------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium, once for the module; skips the tests when none is installed."""
    executable = find_chromium()
    if executable is None:
        pytest.skip(
            "no Chromium to drive: install one (Debian: apt-get install chromium) "
            "or set $CHROMIUM_PATH to its path"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def viewer(browser: Browser, server: InboxServer, screenshots: Path) -> Iterator[Viewer]:
    """A fresh browser context and page, pointed at the session server's viewer."""
    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT * 1000)
    viewer = Viewer(page, server.viewer_url, screenshots)
    page.on("pageerror", lambda error: viewer.errors.append(str(error)))
    yield viewer
    context.close()
    assert viewer.errors == [], "the viewer's script failed"


@pytest.fixture
def observer() -> Iterator[Observer]:
    """A web server on a free loopback port, answering every request with a pixel."""
    paths: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            paths.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PIXEL)))
            self.end_headers()
            self.wfile.write(PIXEL)

        do_POST = do_GET

        def log_message(self, format: str, *args: object) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=web.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield Observer(f"http://127.0.0.1:{web.server_port}", paths)
    web.shutdown()
    web.server_close()
    thread.join()


# The provider tests (test_provider_*.py): each runs on the memory store, then on Redis.


@pytest.fixture(params=["memory", "redis"])
def provider_server(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A running server with the memory store, then with the Redis store."""
    if request.param == "memory":
        yield request.getfixturevalue("server")
        return
    redis_url = request.getfixturevalue("redis_url")
    with InboxServer(store=redis_url) as server:
        yield server


@pytest.fixture
def provider_client(provider_server: InboxServer) -> Iterator[TempInboxClient]:
    """A client of :func:`provider_server`."""
    with TempInboxClient(provider_server.api_url) as client:
        yield client


@pytest.fixture
def recipient(provider_client: TempInboxClient) -> Inbox:
    """A fresh inbox of :func:`provider_server`."""
    return provider_client.generate()


@pytest.fixture
def emails(provider_server: InboxServer) -> Iterator[type[resend.Emails]]:
    """Resend's ``Emails``, its module pointed at the server for the test."""
    saved = resend.api_url, resend.api_key
    resend.api_url, resend.api_key = provider_server.provider_url("resend"), "re_test_key"
    yield resend.Emails
    resend.api_url, resend.api_key = saved
