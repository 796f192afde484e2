"""A browser end-to-end test: sign up in headless Chromium, confirm from the mail.

Playwright drives the Chromium that the system package manager installed
(Debian: ``apt-get install chromium``) through ``executable_path``, so no
browser download is needed; without one the tests are skipped, saying why.
The web app is served on a real port, from a thread, so the browser can reach
it, and the confirmation link from the mail is opened in the same browser, so
the app can tell the person who signed up from anyone else holding the link.

The test is a plain ``def``: Playwright's sync API runs its own event loop and
refuses to start inside a running one (an ``async def`` test would use
``playwright.async_api`` instead).
"""

from __future__ import annotations

import os
import secrets
import shutil
import smtplib
import threading
from collections.abc import Iterator
from email.message import EmailMessage

import pytest
from flask import Flask, request, session, url_for
from playwright.sync_api import Browser, Page, expect, sync_playwright
from werkzeug.serving import make_server

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer

SIGNUP_FORM = """<!doctype html>
<title>Sign up</title>
<form method="post">
  <label>Email <input type="email" name="email" required></label>
  <button>Sign up</button>
</form>
"""


def create_app(smtp_host: str, smtp_port: int, accounts: dict[str, bool]) -> Flask:
    """The application under test: a sign-up form, a mail, a confirmation page.

    ``accounts`` maps each address that signed up to whether it was confirmed.
    """
    app = Flask(__name__)
    app.secret_key = secrets.token_bytes(16)
    pending: dict[str, str] = {}  # token -> address

    @app.get("/signup")
    def signup_form() -> str:
        return SIGNUP_FORM

    @app.post("/signup")
    def signup() -> str:
        email = request.form["email"]
        token = secrets.token_urlsafe(16)
        pending[token], accounts[email] = email, False
        session["signing_up"] = email
        message = EmailMessage()
        message["From"] = "hello@app.test"
        message["To"] = email
        message["Subject"] = "Confirm your address"
        message.set_content(
            f"Open this link to confirm: {url_for('confirm', token=token, _external=True)}"
        )
        with smtplib.SMTP(smtp_host, smtp_port, local_hostname="localhost") as smtp:
            smtp.send_message(message)
        return "<h1>Check your mail</h1>"

    @app.get("/confirm/<token>")
    def confirm(token: str) -> tuple[str, int]:
        email = pending.get(token)
        if email is None or session.get("signing_up") != email:
            return "<h1>This link is not for this browser</h1>", 403
        del pending[token]
        accounts[email] = True
        return f"<h1>Welcome, {email}</h1>", 200

    return app


def find_chromium() -> str | None:
    """The Chromium to drive: ``$CHROMIUM_PATH``, else ``chromium`` or an alias on the PATH."""
    names = [os.environ.get("CHROMIUM_PATH", ""), "chromium", "chromium-browser", "google-chrome"]
    return next((path for name in names if name and (path := shutil.which(name))), None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium, once per module; skips the tests when none is installed."""
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
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (cookies and all) and a page in it, for one test."""
    context = browser.new_context()
    yield context.new_page()
    context.close()


@pytest.fixture
def accounts() -> dict[str, bool]:
    """The app's accounts: each address that signed up, and whether it was confirmed."""
    return {}


@pytest.fixture
def app_url(tempinbox_server: TempInboxServer, accounts: dict[str, bool]) -> Iterator[str]:
    """The app, sending to the session's inbox server, served from a thread on a free port."""
    app = create_app(tempinbox_server.smtp_host, tempinbox_server.smtp_port, accounts)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()


def test_signing_up_in_the_browser_and_confirming_from_the_mail(
    page: Page, app_url: str, accounts: dict[str, bool], tempinbox: Inbox
) -> None:
    """The form sends a mail whose link, opened in the same browser, confirms the account."""
    page.goto(f"{app_url}/signup")
    page.get_by_label("Email").fill(tempinbox.address)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("heading")).to_have_text("Check your mail")

    message = tempinbox.wait_for_message(subject="Confirm your address")
    (link,) = message.links
    page.goto(link)

    expect(page.get_by_role("heading")).to_have_text(f"Welcome, {tempinbox.address}")
    assert accounts == {tempinbox.address: True}


def test_the_link_confirms_nothing_in_another_browser(
    page: Page, browser: Browser, app_url: str, accounts: dict[str, bool], tempinbox: Inbox
) -> None:
    """Opened where the sign-up did not happen, the link is refused."""
    page.goto(f"{app_url}/signup")
    page.get_by_label("Email").fill(tempinbox.address)
    page.get_by_role("button", name="Sign up").click()
    (link,) = tempinbox.wait_for_message(subject="Confirm your address").links

    other = browser.new_context()  # no cookies: another browser, as far as the app can tell
    try:
        other_page = other.new_page()
        other_page.goto(link)
        expect(other_page.get_by_role("heading")).to_have_text("This link is not for this browser")
    finally:
        other.close()
    assert accounts == {tempinbox.address: False}
