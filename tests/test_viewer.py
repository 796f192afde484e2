"""The inbox viewer: its routes and headers over HTTP, then the page in headless Chromium.

The browser tests drive Debian's Chromium through Playwright (``executable_path``),
and skip, saying why, where none is installed. Each saves a screenshot of the
states it reaches into the ``screenshots`` directory (``$TEMPINBOX_SCREENSHOTS``,
else under pytest's base temporary directory; the run's summary names it). What a
mail must never cause (a script running, a remote image loading) is observed on
a local web server of the test's own, which records every request it gets.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import smtplib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from playwright.sync_api import Browser, Page, expect, sync_playwright

from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.server.app import ApiSettings, create_app
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.viewer import MAIL_POLICY, MAIL_POLICY_REMOTE_IMAGES, PAGE_POLICY

from .helpers import CLIENT_NAME, make_message, send

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


# --- routes and headers, without a browser ----------------------------------------------


def test_the_page_is_served_under_a_strict_policy(
    server: InboxServer, http: requests.Session
) -> None:
    response = http.get(server.viewer_url, timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["content-security-policy"] == PAGE_POLICY
    directives = policy(PAGE_POLICY)
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"  # no inline script, no eval
    assert directives["frame-ancestors"] == "'none'"
    assert directives["base-uri"] == "'none'"


def test_the_page_has_no_inline_script_nor_event_handler() -> None:
    class Scripts(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.sources: list[str | None] = []
            self.handlers: list[str] = []
            self.inline = ""
            self.in_script = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.handlers += [name for name, _ in attrs if name.startswith("on")]
            if tag == "script":
                self.sources.append(dict(attrs).get("src"))
                self.in_script = True

        def handle_endtag(self, tag: str) -> None:
            self.in_script = self.in_script and tag != "script"

        def handle_data(self, data: str) -> None:
            if self.in_script:
                self.inline += data.strip()

    parser = Scripts()
    parser.feed(
        resources.files("pytest_tempinbox.server.viewer").joinpath("index.html").read_text()
    )
    assert parser.sources == ["viewer/viewer.js"]
    assert parser.inline == ""
    assert parser.handlers == []


def test_the_script_never_turns_text_into_markup() -> None:
    script = resources.files("pytest_tempinbox.server.viewer").joinpath("viewer.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script
    assert "textContent" in script


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("viewer.js", "text/javascript; charset=utf-8"), ("viewer.css", "text/css; charset=utf-8")],
)
def test_the_page_files_are_served_with_their_types(
    server: InboxServer, http: requests.Session, name: str, content_type: str
) -> None:
    response = http.get(f"{server.viewer_url}viewer/{name}", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    assert response.headers["x-content-type-options"] == "nosniff"


def test_no_other_file_is_served(server: InboxServer, http: requests.Session) -> None:
    for name in ("index.html", "__init__.py", "..%2F__init__.py", "viewer.js.map"):
        response = http.get(f"{server.viewer_url}viewer/{name}", timeout=TIMEOUT)
        assert response.status_code == 404, name
        assert response.headers["content-type"] == "application/problem+json"


def test_a_message_html_is_served_under_the_mail_policy(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    html = "<p>Hello <b>there</b></p><script>document.title = 'ran'</script>"
    id = deliver(server, http, html_mail(address, html))
    response = http.get(html_url(server, address, id), timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.text.strip() == html
    assert response.headers["content-security-policy"] == MAIL_POLICY
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["x-content-type-options"] == "nosniff"
    directives = policy(MAIL_POLICY)
    assert directives["default-src"] == "'none'"
    assert "script-src" not in directives  # default-src 'none' forbids every script
    assert directives["img-src"] == "data:"
    assert directives["frame-ancestors"] == "'self'"
    assert "sandbox" in directives  # also sandboxed when opened outside the viewer's frame


def test_remote_images_widen_only_the_image_sources(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    id = deliver(server, http, html_mail(address, "<img src='https://images.example/a.png'>"))
    response = http.get(html_url(server, address, id) + "?images=remote", timeout=TIMEOUT)
    assert response.headers["content-security-policy"] == MAIL_POLICY_REMOTE_IMAGES
    widened, strict = policy(MAIL_POLICY_REMOTE_IMAGES), policy(MAIL_POLICY)
    assert widened.pop("img-src") == "data: http: https:"
    strict.pop("img-src")
    assert widened == strict


def test_a_message_without_html_has_no_html_document(
    server: InboxServer, http: requests.Session, address: str
) -> None:
    id = deliver(server, http, make_message(address))
    response = http.get(html_url(server, address, id), timeout=TIMEOUT)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    unknown = http.get(html_url(server, "nobody@tempinbox.test", id), timeout=TIMEOUT)
    assert unknown.json()["code"] == "inbox_not_found"
    missing = http.get(html_url(server, address, "nope"), timeout=TIMEOUT)
    assert missing.json()["code"] == "message_not_found"


@pytest.mark.parametrize("path", ["", "viewer/viewer.js", "viewer/messages/{address}/{id}/html"])
def test_the_viewer_refuses_other_host_names(
    server: InboxServer, http: requests.Session, address: str, path: str
) -> None:
    id = deliver(server, http, html_mail(address, "<p>hi</p>"))
    url = server.viewer_url + path.format(address=address, id=id)
    refused = http.get(url, headers={"Host": "evil.example"}, timeout=TIMEOUT)
    assert refused.status_code == 421
    assert refused.json()["code"] == "host_not_allowed"
    port = server.api_port
    assert http.get(url, headers={"Host": f"localhost:{port}"}, timeout=TIMEOUT).status_code == 200


def test_no_route_lists_the_inboxes(server: InboxServer, http: requests.Session) -> None:
    addresses = [http.post(server.api_url + "/generate").json()["email"] for _ in range(3)]
    routes = create_app(server.store, ApiSettings(ServerConfig(), 25)).routes
    # Every GET route names one inbox, but these, which must not reveal any.
    unkeyed = sorted(
        path
        for route in routes
        if "GET" in (getattr(route, "methods", None) or ())
        and "{email}" not in (path := getattr(route, "path", ""))
    )
    assert unkeyed == [
        "/",
        "/api/ca.pem",
        "/api/info",
        "/api/openapi.json",
        "/api/refused",
        "/viewer/{name}",
    ]
    for path in unkeyed:
        url = server.viewer_url + path[1:].replace("{name}", "viewer.js")
        body = http.get(url, timeout=TIMEOUT).text
        assert not any(address in body for address in addresses), path


def test_the_viewer_is_not_in_the_openapi_document(
    server: InboxServer, http: requests.Session
) -> None:
    paths = http.get(server.api_url + "/openapi.json", timeout=TIMEOUT).json()["paths"]
    assert all(path.startswith("/api/") for path in paths)


# --- in the browser ------------------------------------------------------------------


def find_chromium() -> str | None:
    """The Chromium to drive: ``$CHROMIUM_PATH``, else ``chromium`` or an alias on the PATH."""
    names = [os.environ.get("CHROMIUM_PATH", ""), "chromium", "chromium-browser", "google-chrome"]
    return next((path for name in names if name and (path := shutil.which(name))), None)


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


def test_the_form_opens_an_inbox_by_its_address(viewer: Viewer, address: str) -> None:
    page = viewer.page
    page.goto(viewer.url)
    expect(page.get_by_role("status")).to_have_text("Type or paste an inbox address to open it.")
    viewer.shoot("01-start")

    page.get_by_label("Inbox address").fill(address)
    page.keyboard.press("Enter")

    expect(page).to_have_url(f"{viewer.url}?inbox={quote(address, safe='')}")
    expect(page.get_by_role("status")).to_contain_text(f"Watching {address}")
    expect(page.get_by_role("heading", name="Messages")).to_have_text("Messages (0)")
    expect(page.get_by_text("No mail yet")).to_be_visible()
    expect(page.get_by_label("Inbox address")).to_have_value(address)
    viewer.shoot("02-empty-inbox")


def test_mail_arrives_live_without_a_reload(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    send(server, make_message(address, subject="Already there"))
    viewer.open(address)
    page = viewer.page
    page.evaluate("window.notReloaded = true")

    send(server, make_message(address, subject="Live one", sender="Shop <shop@example.com>"))
    send(server, make_message(address, subject="Live two"))

    items = page.locator("#messages li")
    expect(items).to_have_count(3)
    expect(items.locator(".subject")).to_have_text(["Live two", "Live one", "Already there"])
    expect(items.nth(1).locator(".from")).to_have_text("Shop <shop@example.com>")
    expect(page.get_by_role("heading", name="Messages")).to_have_text("Messages (3)")
    assert page.evaluate("window.notReloaded") is True
    viewer.shoot("03-arrived-live")


def test_opening_a_message_shows_its_headers_and_text(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    message = make_message(address, subject="Your receipt", body="Total: 42 EUR\nThanks!\n")
    message["Cc"] = "Accounts <accounts@example.com>"
    message["X-Order"] = "A-1001"
    send(server, message)
    viewer.open(address)
    page = viewer.page

    # By keyboard: the listed message is a button.
    page.locator("#messages").get_by_role("button", name="Your receipt").focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("heading", name="Your receipt", level=2)).to_be_focused()
    summary = page.locator("#summary")
    expect(summary).to_contain_text("app@example.com")
    expect(summary).to_contain_text("Accounts <accounts@example.com>")
    expect(page.locator("#text")).to_have_text("Total: 42 EUR\nThanks!\n")
    expect(page.get_by_role("tab", name="HTML")).to_be_hidden()  # a text-only mail
    page.get_by_role("tab", name="Headers").click()
    expect(page.get_by_role("row", name="x-order A-1001")).to_be_visible()
    assert "message=" in page.url  # the open message is part of the shareable URL
    viewer.shoot("04-message-open")

    page.reload()
    expect(page.locator("#text")).to_have_text("Total: 42 EUR\nThanks!\n")


def test_mail_text_is_shown_as_text_never_as_markup(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    subject = "<img src=x onerror=\"document.title='pwned'\"> & <b>bold</b>"
    send(server, make_message(address, subject=subject, sender='"<i>Eve</i>" <eve@example.com>'))
    viewer.open(address)
    page = viewer.page
    viewer.message_button(subject)()

    expect(page.locator("#subject")).to_have_text(subject)
    expect(page.locator("#messages .from")).to_have_text("<i>Eve</i> <eve@example.com>")
    assert page.locator("#messages img, #messages b, #messages i, #message img").count() == 0
    assert page.title() == f"{address} - tempinbox"
    viewer.shoot("05-markup-shown-as-text")


def test_the_script_of_an_html_mail_never_runs(
    viewer: Viewer, server: InboxServer, address: str, observer: Observer
) -> None:
    hostile = f"""<html><head><title>Mail</title>
<meta http-equiv="refresh" content="0;url={observer.url}/refresh">
<link rel="stylesheet" href="{observer.url}/stylesheet">
<style>@import url({observer.url}/import);
p {{ background: url({observer.url}/background) }}</style>
<script>document.title = "script ran"; fetch("{observer.url}/fetch");</script>
</head>
<body onload="document.body.textContent = 'onload ran'">
<p>Hello from HTML</p>
<img src="data:image/png;base64,{base64.b64encode(PIXEL).decode()}" alt="inline pixel"
     onload="new Image().src = '{observer.url}/onload'">
<img src="x" onerror="top.location = '{observer.url}/onerror'">
<iframe src="{observer.url}/frame"></iframe>
<form action="{observer.url}/form" method="post"><button id="go">go</button></form>
</body></html>"""
    send(server, html_mail(address, hostile, subject="Hostile HTML"))
    viewer.open(address)
    page = viewer.page
    viewer.message_button("Hostile HTML")()

    frame = page.frame_locator("#html-frame")
    expect(frame.get_by_text("Hello from HTML")).to_be_visible()
    expect(page.locator("#html-frame")).to_have_attribute("sandbox", "")
    frame.locator("#go").click()  # a form in the mail goes nowhere
    assert observer.settle() == []
    (mail_frame,) = (f for f in page.frames if "/viewer/messages/" in f.url)
    assert mail_frame.title() == "Mail"
    expect(frame.locator("body")).to_contain_text("Hello from HTML")
    assert page.url.startswith(viewer.url)
    viewer.shoot("06-html-mail-script-blocked")


def test_remote_images_load_only_when_allowed(
    viewer: Viewer, server: InboxServer, address: str, observer: Observer
) -> None:
    html = f'<p>Our logo:</p><img src="{observer.url}/logo.png" alt="logo" width="40" height="40">'
    send(server, html_mail(address, html, subject="With a remote image"))
    viewer.open(address)
    page = viewer.page
    viewer.message_button("With a remote image")()

    expect(page.frame_locator("#html-frame").get_by_text("Our logo:")).to_be_visible()
    expect(page.get_by_text("Remote images are blocked.")).to_be_visible()
    assert observer.settle() == []
    viewer.shoot("07-remote-images-blocked")

    page.get_by_role("button", name="Load remote images").click()

    observer.wait_for("/logo.png")
    expect(page.get_by_text("Remote images are allowed for this message.")).to_be_visible()
    expect(page.frame_locator("#html-frame").get_by_alt_text("logo")).to_be_visible()
    viewer.shoot("08-remote-images-allowed")

    # The choice is for that message only.
    send(server, html_mail(address, html, subject="Another remote image"))
    viewer.message_button("Another remote image")()
    expect(page.get_by_text("Remote images are blocked.")).to_be_visible()
    assert observer.settle() == ["/logo.png"]


def test_an_attachment_downloads_with_its_bytes(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    content = bytes(range(256)) * 40
    message = make_message(address, subject="Your report")
    message.add_attachment(content, maintype="application", subtype="pdf", filename="report.pdf")
    send(server, message)
    viewer.open(address)
    page = viewer.page
    viewer.message_button("Your report")()

    page.get_by_role("tab", name="Attachments (1)").click()
    row = page.locator("#attachments tr")
    expect(row.locator("td")).to_have_text(["report.pdf", "application/pdf", "10.0 KiB"])
    viewer.shoot("09-attachment")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="report.pdf").click()
    download = download_info.value
    assert download.suggested_filename == "report.pdf"
    assert Path(download.path()).read_bytes() == content


def test_the_raw_source_is_shown_as_received(
    viewer: Viewer, server: InboxServer, http: requests.Session, address: str
) -> None:
    message = make_message(address, subject="Raw please", body="Line one\n")
    message["X-Trace"] = "trace-7f3a"
    id = deliver(server, http, message)
    raw = http.get(f"{server.api_url}/messages/{address}/{id}/raw", timeout=TIMEOUT).text
    viewer.open(address)
    page = viewer.page
    viewer.message_button("Raw please")()

    page.get_by_role("tab", name="Source").click()

    expect(page.locator("#raw")).to_contain_text("X-Trace: trace-7f3a")
    assert page.locator("#raw").text_content() == raw
    expect(page.get_by_role("link", name=re.compile("Download the message"))).to_have_attribute(
        "href", f"api/messages/{quote(address, safe='')}/{id}/raw"
    )
    viewer.shoot("10-raw-source")


def test_a_deleted_inbox_shows_that_it_is_gone(
    viewer: Viewer, server: InboxServer, http: requests.Session, address: str
) -> None:
    send(server, make_message(address, subject="Before the end"))
    viewer.open(address)

    http.delete(f"{server.api_url}/delete/{address}", timeout=TIMEOUT)

    page = viewer.page
    expect(page.get_by_role("status")).to_have_text(
        f"The inbox {address} is gone: it was deleted or it expired."
    )
    expect(page.locator("#messages li")).to_have_count(1)  # what it had stays in view
    viewer.shoot("11-inbox-deleted")


def test_an_expired_inbox_shows_that_it_is_gone(
    viewer: Viewer, server: InboxServer, http: requests.Session
) -> None:
    address = http.post(server.api_url + "/generate", json={"ttl": 2}).json()["email"]
    viewer.open(address)
    expect(viewer.page.get_by_role("status")).to_have_text(
        f"The inbox {address} is gone: it was deleted or it expired."
    )


def test_an_unknown_inbox_is_said_to_be_gone(viewer: Viewer) -> None:
    page = viewer.page
    page.goto(f"{viewer.url}?inbox=nobody@tempinbox.test")
    expect(page.get_by_role("status")).to_contain_text("No inbox nobody@tempinbox.test here")
    expect(page.locator("#list-pane")).to_be_hidden()
    viewer.shoot("12-unknown-inbox")


def test_the_newest_message_opens_by_itself_until_one_is_picked(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    send(server, make_message(address, subject="First"))
    send(server, make_message(address, subject="Second"))
    viewer.open(address)
    page = viewer.page
    subject = page.locator("#subject")

    expect(subject).to_have_text("Second")
    assert "message=" not in page.url  # a reload follows the newest again
    send(server, make_message(address, subject="Third"))
    expect(subject).to_have_text("Third")
    expect(page.locator("#messages [aria-current=true] .subject")).to_have_text("Third")
    viewer.shoot("13-newest-opens-by-itself")

    viewer.message_button("First")()
    send(server, make_message(address, subject="Fourth"))

    expect(page.locator("#messages li")).to_have_count(4)
    expect(subject).to_have_text("First")  # what the reader picked stays open
    expect(subject).to_be_focused()
    assert "message=" in page.url
    viewer.shoot("14-picked-message-stays-open")


def test_a_mail_without_from_shows_its_envelope_sender(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    for sender, subject in (("bounce@app.example", "No From"), ("", "Null sender")):
        message = make_message(address, subject=subject)
        del message["From"]
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
            smtp.send_message(message, from_addr=sender, to_addrs=[address])
    viewer.open(address)
    page = viewer.page

    senders = page.locator("#messages .from")
    expect(senders).to_have_text(["<> (null sender)", "bounce@app.example (envelope)"])
    viewer.message_button("No From")()
    expect(page.locator("#summary")).to_contain_text("Frombounce@app.example (envelope)")
    viewer.shoot("15-envelope-sender")


def test_an_envelope_sender_unlike_from_is_shown_beside_it(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    message = make_message(address, subject="Bounces elsewhere")
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.send_message(message, from_addr="bounce+42@app.example", to_addrs=[address])
    viewer.open(address)

    summary = viewer.page.locator("#summary")
    expect(summary).to_contain_text("Fromapp@example.com")
    expect(summary).to_contain_text("Envelope frombounce+42@app.example")


def parts_mail(address: str) -> EmailMessage:
    """A mail with every part: text, HTML with links, an attachment."""
    html = (
        '<h1>Welcome</h1><p><a href="https://app.example/confirm?t=1">Confirm your address</a></p>'
    )
    message = html_mail(address, html, subject="Every part")
    message.get_body(("plain",)).set_content("See https://app.example/text-link\n")  # type: ignore[union-attr]
    message.add_attachment(b"a,b\n1,2\n", maintype="text", subtype="csv", filename="data.csv")
    return message


def test_each_tab_shows_its_part(
    viewer: Viewer, server: InboxServer, http: requests.Session, address: str
) -> None:
    id = deliver(server, http, parts_mail(address))
    viewer.open(address)
    page = viewer.page

    tabs = page.get_by_role("tablist", name="Parts of the message").get_by_role("tab")
    expect(tabs).to_have_text(["HTML", "Text", "Links (2)", "Attachments (1)", "Headers", "Source"])
    html_tab = page.get_by_role("tab", name="HTML")
    expect(html_tab).to_have_attribute("aria-selected", "true")
    expect(page.frame_locator("#html-frame").get_by_role("heading", name="Welcome")).to_be_visible()
    expect(page.get_by_role("button", name="Load remote images")).to_be_visible()
    viewer.shoot("16-tab-html")

    page.get_by_role("tab", name="Text").click()
    expect(page.get_by_role("tabpanel")).to_have_text("See https://app.example/text-link\n")
    expect(page.locator("#html-frame")).to_be_hidden()

    page.get_by_role("tab", name="Links").click()
    rows = page.get_by_role("tabpanel").locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="confirm").locator("td")).to_have_text(
        ["Confirm your address", "https://app.example/confirm?t=1", "html"]
    )
    expect(rows.filter(has_text="text-link").locator("td")).to_have_text(
        ["(none)", "https://app.example/text-link", "text"]
    )
    expect(page.get_by_role("link", name="https://app.example/confirm?t=1")).to_have_attribute(
        "href", "https://app.example/confirm?t=1"
    )
    viewer.shoot("17-tab-links")

    page.get_by_role("tab", name="Attachments").click()
    expect(page.get_by_role("link", name="data.csv")).to_have_attribute(
        "href", f"api/messages/{quote(address, safe='')}/{id}/attachments/0"
    )
    expect(page.get_by_role("tabpanel")).to_contain_text("text/csv")
    viewer.shoot("18-tab-attachments")

    page.get_by_role("tab", name="Headers").click()
    expect(page.get_by_role("row", name="subject Every part")).to_be_visible()

    page.get_by_role("tab", name="Source").click()
    expect(page.locator("#raw")).to_contain_text("Subject: Every part")
    expect(page.locator("#raw")).to_contain_text("Content-Disposition: attachment")
    viewer.shoot("19-tab-source")


def test_the_tabs_switch_by_keyboard_and_the_choice_is_kept(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    send(server, make_message(address, subject="Text only"))
    send(server, parts_mail(address))
    viewer.open(address)
    page = viewer.page

    def selected(name: str) -> None:
        tab = page.get_by_role("tab", name=name)
        expect(tab).to_have_attribute("aria-selected", "true")
        expect(tab).to_be_focused()
        expect(page.get_by_role("tabpanel")).to_have_attribute(
            "id", f"panel-{tab.get_attribute('data-part')}"
        )

    page.get_by_role("tab", name="HTML").focus()
    page.keyboard.press("ArrowRight")
    selected("Text")
    page.keyboard.press("End")
    selected("Source")
    page.keyboard.press("ArrowRight")  # wraps around
    selected("HTML")
    page.keyboard.press("ArrowLeft")
    selected("Source")
    page.keyboard.press("Home")
    selected("HTML")
    # Only the selected tab is in the Tab order; Tab goes on into the panel.
    expect(page.locator("[role=tab][tabindex='0']")).to_have_count(1)

    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    selected("Links (2)")
    viewer.message_button("Text only")()
    # That message has no links: its first part is shown, and its missing parts are hidden.
    expect(page.get_by_role("tab", name="Text")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tab")).to_have_text(["Text", "Headers", "Source"])

    page.get_by_role("tab", name="Headers").click()
    viewer.message_button("Every part")()
    expect(page.get_by_role("tab", name="Headers")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("row", name="subject Every part")).to_be_visible()
    viewer.shoot("20-tab-kept-across-messages")


def test_at_1280x900_the_tabs_and_the_panel_fit_the_window(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    tall = "".join(f"<p>Paragraph {n} of a long newsletter.</p>" for n in range(200))
    message = html_mail(address, tall + '<p><a href="https://app.example/end">The end</a></p>')
    message.get_body(("plain",)).set_content(  # type: ignore[union-attr]
        "".join(f"Line {n} of the text part.\n" for n in range(300))
    )
    for n in range(40):
        message[f"X-Header-{n}"] = f"value {n}"
    send(server, message)
    for n in range(30):
        send(server, make_message(address, subject=f"Filler {n}"))
    viewer.open(address)
    page = viewer.page
    viewer.message_button("An HTML mail")()
    assert page.viewport_size == {"width": 1280, "height": 900}

    def fits(selector: str) -> None:
        box = page.locator(selector).bounding_box()
        assert box is not None, selector
        top, bottom = box["y"], box["y"] + box["height"]
        left, right = box["x"], box["x"] + box["width"]
        assert 0 <= top < bottom <= 900, (selector, box)
        assert 0 <= left < right <= 1280, (selector, box)

    def page_does_not_scroll() -> None:
        assert page.evaluate("document.scrollingElement.scrollHeight") <= 900

    for name, panel in (
        ("HTML", "#panel-html"),
        ("Text", "#panel-text"),
        ("Headers", "#panel-headers"),
    ):
        page.get_by_role("tab", name=name).click()
        expect(page.locator(panel)).to_be_visible()
        fits("#tabs")
        fits(panel)
        fits("#list-pane")
        page_does_not_scroll()
    viewer.shoot("21-layout-1280x900-headers")

    # The panel, not the page, scrolls to the end of a long part.
    page.get_by_role("tab", name="Text").click()
    scrolls = "(el) => el.scrollHeight > el.clientHeight"
    assert page.locator("#panel-text").evaluate(scrolls)
    page.locator("#panel-text").focus()  # a panel is in the Tab order, to scroll by keyboard
    page.keyboard.press("End")
    at_end = "(el) => el.scrollTop > 0 && el.scrollTop + el.clientHeight >= el.scrollHeight - 1"
    page.wait_for_function(at_end, arg=page.locator("#panel-text").element_handle())
    fits("#tabs")
    page_does_not_scroll()
    viewer.shoot("22-layout-1280x900-text-scrolled")

    page.get_by_role("tab", name="HTML").click()
    fits("#html-frame")
    frame = page.frame_locator("#html-frame")
    frame.get_by_role("link", name="The end").scroll_into_view_if_needed()
    expect(frame.get_by_role("link", name="The end")).to_be_visible()
    fits("#tabs")
    page_does_not_scroll()
    viewer.shoot("23-layout-1280x900-html")
