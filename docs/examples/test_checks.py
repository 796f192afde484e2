"""Checking a mail as its recipients will meet it: HTML support, links, unsubscribe, spam.

A newsletter sent over SMTP to the test's inbox, checked the ways a test says
what it expects. The links point at a small web server standing in for the
application under test; the spam check needs SpamAssassin (Debian:
``apt-get install spamassassin``) and the browser test Chromium (Debian:
``apt-get install chromium``, driven by Playwright); each skips without it.
"""

from __future__ import annotations

import os
import shutil
import smtplib
import threading
from collections.abc import Iterator
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from pytest_tempinbox import Inbox, MailAssertionError
from pytest_tempinbox.plugin import TempInboxServer


@pytest.fixture
def app() -> Iterator[str]:
    """Stands in for the application under test: every page answers 200."""

    class Pages(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            body = b"<h1>The news of March</h1>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def send_newsletter(server: TempInboxServer, to: str, app: str) -> None:
    """Stands in for the application's newsletter."""
    message = EmailMessage()
    message["From"] = "Example <news@app.example>"
    message["To"] = to
    message["Subject"] = "What's new in March"
    message["Date"] = "Mon, 03 Mar 2026 09:00:00 +0000"
    message["Message-ID"] = "<march-2026@app.example>"
    message["List-Unsubscribe"] = "<https://app.example/u/42>, <mailto:leave@app.example>"
    message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(f"What's new: {app}/news\n")
    message.add_alternative(
        f'<table role="presentation" width="600"><tr><td style="padding: 16px">'
        f'<img src="{app}/logo.png" alt="Example" width="120">'
        f'<p>What is new this month: <a href="{app}/news">read the news</a>.</p>'
        f"</td></tr></table>",
        subtype="html",
    )
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


def test_the_newsletter_reaches_its_readers(
    tempinbox: Inbox, tempinbox_server: TempInboxServer, app: str
) -> None:
    """Each check passes for a careful newsletter."""
    send_newsletter(tempinbox_server, tempinbox.address, app)
    message = tempinbox.wait_for_message()

    # --8<-- [start:html]
    report = message.assert_html_support(at_least=90)
    print(f"{report.score}% supported; worst: {[f.slug for f in report.features[:3]]}")
    message.assert_html_support(at_least=95, clients=["gmail", "apple-mail", "outlook"])
    # --8<-- [end:html]

    # --8<-- [start:links]
    message.assert_links_work()  # every link and image answers, from this process
    links = message.check_links(ignore=["/logo.png"], timeout=2)
    assert [result.url for result in links.results] == [f"{app}/news"]
    # --8<-- [end:links]

    # --8<-- [start:unsubscribe]
    assert message.unsubscribe is not None
    assert message.unsubscribe.mailto == ("mailto:leave@app.example",)
    link = message.unsubscribe_link(one_click=True)  # what Gmail and Yahoo require
    assert link == "https://app.example/u/42"
    # --8<-- [end:unsubscribe]

    # --8<-- [start:dkim]
    assert message.dkim is not None
    assert message.dkim.result == "none"  # not signed; "pass" or "fail" with a reason else
    # --8<-- [end:dkim]


@pytest.mark.skipif(shutil.which("spamassassin") is None, reason="SpamAssassin is not installed")
def test_the_newsletter_is_not_spam(
    tempinbox: Inbox, tempinbox_server: TempInboxServer, app: str
) -> None:
    """SpamAssassin scores it below its threshold."""
    send_newsletter(tempinbox_server, tempinbox.address, app)
    message = tempinbox.wait_for_message()

    # --8<-- [start:spam]
    report = message.assert_spam_score(below=5.0)
    print(report.score, [rule.name for rule in report.rules])
    # --8<-- [end:spam]


def test_a_failing_check_says_what_holds_the_mail_back(
    tempinbox: Inbox, tempinbox_server: TempInboxServer, app: str
) -> None:
    """A bar the mail misses fails with what holds it back."""
    send_newsletter(tempinbox_server, tempinbox.address, app)
    message = tempinbox.wait_for_message()
    with pytest.raises(MailAssertionError, match="at least 100%"):
        message.assert_html_support(at_least=100)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium; skips the test when none is installed."""
    names = [os.environ.get("CHROMIUM_PATH", ""), "chromium", "chromium-browser", "google-chrome"]
    executable = next((path for name in names if name and (path := shutil.which(name))), None)
    if executable is None:
        pytest.skip("no Chromium to drive (Debian: apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page, for one test."""
    context = browser.new_context()
    yield context.new_page()
    context.close()


def test_a_reader_follows_the_link(
    tempinbox: Inbox, tempinbox_server: TempInboxServer, app: str, page: Page
) -> None:
    """The mail in a browser, its link clicked like a person."""
    send_newsletter(tempinbox_server, tempinbox.address, app)

    # --8<-- [start:browser]
    message = tempinbox.wait_for_message(subject="What's new")
    message.open(page)  # its HTML as the reader sees it; scripts never run
    page.get_by_role("link", name="read the news").click()
    expect(page.get_by_role("heading")).to_have_text("The news of March")
    png = message.screenshot(page)  # the whole mail, as a PNG
    # --8<-- [end:browser]
    assert png.startswith(b"\x89PNG")
