"""A message in a real browser as its recipient sees it: ``Message.open`` and ``.screenshot``.

Headless Chromium (Debian's, driven by Playwright) opens a message's HTML from
the server's viewer route: inline ``cid:`` images come from the message's own
parts, remote images stay blocked unless asked for, scripts never run, and a
test clicks the mail's button like a person, landing on the application (a
recording web server here).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest
from playwright.async_api import async_playwright
from playwright.sync_api import Browser, Page

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.errors import MailAssertionError
from pytest_tempinbox.models import Message
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .viewer_support import PIXEL, TIMEOUT, Observer, find_chromium, html_mail


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page of the module's headless Chromium."""
    context = browser.new_context(viewport={"width": 800, "height": 600})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT * 1000)
    yield page
    context.close()


@pytest.fixture
def tempinbox_client(server: InboxServer) -> Iterator[TempInboxClient]:
    """A client of the session's server over HTTP."""
    with TempInboxClient(server.api_url) as client:
        yield client


def received(client: TempInboxClient, server: InboxServer, message: EmailMessage) -> Message:
    """Send ``message`` over SMTP; return it as its inbox received it."""
    send(server, message)
    (arrived,) = client.messages(str(message["To"]), wait=TIMEOUT)
    return arrived


def with_inline_logo(address: str, html: str) -> EmailMessage:
    """An HTML mail whose logo is an inline part named by ``cid:logo@shop.test``."""
    message = html_mail(address, html, subject="With an inline logo")
    html_part = list(message.iter_parts())[1]
    assert isinstance(html_part, EmailMessage)
    html_part.add_related(PIXEL, "image", "png", cid="<logo@shop.test>")
    return message


def test_a_button_is_clicked_like_a_person_and_lands_on_the_app(
    page: Page, server: InboxServer, tempinbox_client: TempInboxClient, observer: Observer
) -> None:
    inbox = tempinbox_client.generate()
    html = f'<p>Welcome!</p><a href="{observer.url}/confirm?token=abc">Confirm your email</a>'
    message = received(tempinbox_client, server, html_mail(inbox.address, html))

    message.open(page)
    page.get_by_role("link", name="Confirm your email").click()

    observer.wait_for("/confirm?token=abc")
    assert page.url == f"{observer.url}/confirm?token=abc"


def test_a_link_to_a_new_window_opens_one(
    page: Page, server: InboxServer, tempinbox_client: TempInboxClient, observer: Observer
) -> None:
    inbox = tempinbox_client.generate()
    html = f'<a href="{observer.url}/reset" target="_blank">Reset your password</a>'
    message = received(tempinbox_client, server, html_mail(inbox.address, html))

    message.open(page)
    with page.expect_popup() as popup:
        page.get_by_role("link", name="Reset your password").click()

    popup.value.wait_for_load_state()
    assert popup.value.url == f"{observer.url}/reset"


def test_inline_images_show_and_remote_ones_only_when_asked(
    page: Page, server: InboxServer, tempinbox_client: TempInboxClient, observer: Observer
) -> None:
    inbox = tempinbox_client.generate()
    html = (
        '<img id="logo" src="cid:logo@shop.test" alt="logo" width="20" height="20">'
        f'<img id="remote" src="{observer.url}/track.png" alt="tracker" width="1" height="1">'
        '<script>document.title = "a script ran"</script><p>Hello</p>'
    )
    message = received(tempinbox_client, server, with_inline_logo(inbox.address, html))

    message.open(page)
    assert page.eval_on_selector("#logo", "image => image.naturalWidth") == 1
    assert page.title() != "a script ran"
    assert observer.settle() == []

    message.open(page, remote_images=True)
    observer.wait_for("/track.png")
    assert page.title() != "a script ran"


def test_a_screenshot_is_a_png_of_the_whole_mail(
    page: Page, server: InboxServer, tempinbox_client: TempInboxClient, tmp_path: Path
) -> None:
    inbox = tempinbox_client.generate()
    html = "<div style='height: 1500px; background: #eef'>A long mail</div><p>The end</p>"
    message = received(tempinbox_client, server, html_mail(inbox.address, html))

    path = tmp_path / "mail.png"
    png = message.screenshot(page, str(path))

    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert path.read_bytes() == png
    height = int.from_bytes(png[20:24], "big")  # the IHDR chunk's height
    assert height >= 1500  # all of it, not just the 600-pixel viewport


def test_the_async_twins_open_and_shoot(
    server: InboxServer, tempinbox_client: TempInboxClient
) -> None:
    inbox = tempinbox_client.generate()
    message = received(tempinbox_client, server, html_mail(inbox.address, "<p>Async hello</p>"))
    executable = find_chromium()
    assert executable is not None  # the browser fixture of the other tests skips otherwise

    async def scenario() -> tuple[str, bytes]:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=executable)
            try:
                page = await browser.new_page()
                await message.open_async(page)
                text = await page.inner_text("body")
                return text, await message.screenshot_async(page)
            finally:
                await browser.close()

    # In a thread of its own: the other tests' sync Playwright holds this one's loop.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        text, png = thread.submit(asyncio.run, scenario()).result(timeout=60)
    assert "Async hello" in text
    assert png.startswith(b"\x89PNG")


def test_a_text_only_mail_has_no_page_to_open(
    server: InboxServer, tempinbox_client: TempInboxClient
) -> None:
    inbox = tempinbox_client.generate()
    message = received(tempinbox_client, server, make_message(inbox.address, subject="Plain"))
    with pytest.raises(MailAssertionError, match="only a text body"):
        message.html_url()
