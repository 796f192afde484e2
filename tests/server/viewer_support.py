"""Tools of the viewer tests: mail to show, the browser page, and a recording web server."""

from __future__ import annotations

import base64
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import quote

import requests
from playwright.sync_api import Page, expect

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send

TIMEOUT = 10.0
# A blue 1x1 PNG, what the observer answers to any request (visible in screenshots).
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGPgjlkLAAGKARUB8qvYAAAAAElFTkSuQmCC"
)


def policy(header: str) -> dict[str, str]:
    """A Content-Security-Policy header as a mapping of directive to its sources."""
    directives = (part.strip().split(" ", 1) for part in header.split(";") if part.strip())
    return {name: rest[0] if rest else "" for name, *rest in directives}


def html_mail(address: str, html: str, subject: str = "An HTML mail") -> EmailMessage:
    """A text and HTML alternative."""
    message = make_message(address, subject=subject, body="The text part.\n")
    message.add_alternative(html, subtype="html")
    return message


def deliver(server: InboxServer, http: requests.Session, message: EmailMessage) -> str:
    """Send ``message`` over SMTP and return the id it got in its (first) recipient's inbox."""
    send(server, message)
    address = str(message["To"])
    listed = http.get(f"{server.api_url}/messages/{address}", timeout=TIMEOUT).json()
    return str(listed[-1]["id"])


def html_url(server: InboxServer, address: str, id: str) -> str:
    return f"{server.viewer_url}viewer/messages/{quote(address, safe='@')}/{id}/html"


def find_chromium() -> str | None:
    """The Chromium to drive: ``$CHROMIUM_PATH``, else ``chromium`` or an alias on the PATH."""
    names = [os.environ.get("CHROMIUM_PATH", ""), "chromium", "chromium-browser", "google-chrome"]
    return next((path for name in names if name and (path := shutil.which(name))), None)


@dataclass
class Viewer:
    """A browser page on the viewer, what went wrong in its script, and a camera."""

    page: Page
    url: str
    screenshots: Path
    errors: list[str] = field(default_factory=list)

    def open(self, address: str) -> None:
        """Open ``address``'s inbox and wait until its live updates are on."""
        self.page.goto(f"{self.url}?inbox={quote(address, safe='@')}")
        expect(self.page.get_by_role("status")).to_contain_text("Watching")

    def shoot(self, name: str) -> None:
        """Save a screenshot of the whole page as ``name``.png."""
        self.page.screenshot(path=self.screenshots / f"{name}.png", full_page=True)

    def message_button(self, subject: str) -> Callable[[], None]:
        """A function that opens the listed message with ``subject``."""
        return self.page.locator("#messages").get_by_role("button", name=subject).click


@dataclass
class Observer:
    """A local web server that records the path of every request it gets."""

    url: str
    paths: list[str]

    def settle(self, seconds: float = 0.5) -> list[str]:
        """The paths requested, after ``seconds`` more for late requests to arrive."""
        time.sleep(seconds)
        return list(self.paths)

    def wait_for(self, path: str) -> None:
        """Wait until ``path`` was requested."""
        deadline = time.monotonic() + TIMEOUT
        while path not in self.paths:
            assert time.monotonic() < deadline, f"{path} was never requested: {self.paths}"
            time.sleep(0.05)
