"""The inbox viewer in headless Chromium: opening inboxes and messages, what mail may not do.

The browser tests drive Debian's Chromium through Playwright (``executable_path``),
and skip, saying why, where none is installed. Each saves a screenshot of the
states it reaches into the ``screenshots`` directory (``$TEMPINBOX_SCREENSHOTS``,
else under pytest's base temporary directory; the run's summary names it). What a
mail must never cause (a script running, a remote image loading) is observed on
a local web server of the test's own, which records every request it gets.
"""

from __future__ import annotations

import base64
import re
import smtplib
from pathlib import Path
from urllib.parse import quote

import requests
from playwright.sync_api import expect

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, make_message, send
from .providers_support import send_through_sendgrid
from .viewer_support import PIXEL, TIMEOUT, Observer, Viewer, deliver, html_mail


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


def test_mail_sent_through_a_providers_api_says_which_provider(
    viewer: Viewer, server: InboxServer, address: str
) -> None:
    send(server, make_message(address, subject="By SMTP"))
    viewer.open(address)
    page = viewer.page
    send_through_sendgrid(server, address, "Through SendGrid")

    items = page.locator("#messages li")
    expect(items).to_have_count(2)  # the provider's mail arrives live, as SMTP mail does
    expect(items.nth(0).locator(".via")).to_have_text("via SendGrid")
    expect(items.nth(1).locator(".via")).to_have_count(0)
    viewer.message_button("Through SendGrid")()
    expect(page.locator("#summary")).to_contain_text("ViaSendGrid's API")
    viewer.shoot("30-sent-through-a-provider")
    viewer.message_button("By SMTP")()
    expect(page.locator("#summary")).not_to_contain_text("Via")
