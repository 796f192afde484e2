"""The inbox viewer on a server with tenants, in headless Chromium.

The page asks for a token once, keeps it for the tab, sends it in a header on
every call (the event stream too, read with fetch), lists the tenant's inboxes,
and asks again when the token is refused. No request the server sees carries
the token in its URL.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from playwright.sync_api import Browser, expect

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .tenants_support import TOKEN_A, TOKEN_B, bearer, generate, tenants_file
from .viewer_support import TIMEOUT, Viewer, html_mail


@pytest.fixture
def tenant_server(tmp_path: Path) -> Iterator[InboxServer]:
    """A server with two tenants, for one test."""
    with InboxServer(tenants=tenants_file(tmp_path)) as server:
        yield server


@pytest.fixture
def tenant_viewer(
    browser: Browser, tenant_server: InboxServer, screenshots: Path
) -> Iterator[tuple[Viewer, list[str]]]:
    """A fresh page on the viewer of the server with tenants, and every URL it requested."""
    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT * 1000)
    viewer = Viewer(page, tenant_server.viewer_url, screenshots)
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    page.on("pageerror", lambda error: viewer.errors.append(str(error)))
    yield viewer, urls
    context.close()
    assert viewer.errors == [], "the viewer's script failed"


def _sign_in(viewer: Viewer, token: str) -> None:
    viewer.page.get_by_label("API token").fill(token)
    viewer.page.keyboard.press("Enter")


def _open(viewer: Viewer, token: str, address: str | None = None) -> None:
    """Open the viewer (an inbox's page, with ``address``) and give it ``token``."""
    query = "" if address is None else f"?inbox={quote(address, safe='@')}"
    viewer.page.goto(viewer.url + query)
    _sign_in(viewer, token)


def test_the_page_asks_for_a_token_and_lists_the_tenants_inboxes(
    tenant_viewer: tuple[Viewer, list[str]], tenant_server: InboxServer
) -> None:
    viewer, urls = tenant_viewer
    mine = generate(tenant_server.api_url, TOKEN_A)
    theirs = generate(tenant_server.api_url, TOKEN_B)
    page = viewer.page
    page.goto(viewer.url)
    expect(page.get_by_label("API token")).to_be_focused()
    viewer.shoot("tenants-01-token-form")

    _sign_in(viewer, TOKEN_A)

    expect(page.get_by_role("heading", name="Your inboxes")).to_have_text("Your inboxes (1)")
    expect(page.locator("#inboxes a")).to_have_text([mine])
    expect(page.get_by_text(theirs)).to_have_count(0)
    expect(page.get_by_label("API token")).to_be_hidden()
    viewer.shoot("tenants-02-inboxes")
    assert not [url for url in urls if TOKEN_A in url]


def test_an_inbox_opens_from_the_list_and_mail_arrives_live(
    tenant_viewer: tuple[Viewer, list[str]], tenant_server: InboxServer
) -> None:
    viewer, urls = tenant_viewer
    address = generate(tenant_server.api_url, TOKEN_A)
    send(tenant_server, html_mail(address, "<p>Hello <b>there</b></p>", subject="Before"))
    page = viewer.page
    _open(viewer, TOKEN_A)
    page.get_by_role("link", name=address).click()

    expect(page.get_by_role("status")).to_contain_text(f"Watching {address}")
    expect(page.frame_locator("#html-frame").locator("b")).to_have_text("there")
    send(tenant_server, make_message(address, subject="Live with a token"))
    expect(page.locator("#messages li .subject")).to_have_text(["Live with a token", "Before"])
    viewer.shoot("tenants-03-live")
    assert not [url for url in urls if TOKEN_A in url]


def test_the_raw_source_loads_with_the_token(
    tenant_viewer: tuple[Viewer, list[str]], tenant_server: InboxServer
) -> None:
    viewer, _ = tenant_viewer
    address = generate(tenant_server.api_url, TOKEN_A)
    send(tenant_server, make_message(address, subject="Source of truth"))
    requests.get(
        f"{tenant_server.api_url}/messages/{address}?wait=5", headers=bearer(TOKEN_A), timeout=10
    )
    page = viewer.page
    _open(viewer, TOKEN_A, address)
    expect(page.get_by_role("status")).to_contain_text("Watching")
    page.get_by_role("tab", name="Source").click()
    expect(page.locator("#raw")).to_contain_text("Subject: Source of truth")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the message as received").click()
    assert b"Subject: Source of truth" in Path(download.value.path()).read_bytes()


def test_another_tenants_inbox_reads_as_gone(
    tenant_viewer: tuple[Viewer, list[str]], tenant_server: InboxServer
) -> None:
    viewer, _ = tenant_viewer
    theirs = generate(tenant_server.api_url, TOKEN_B)
    page = viewer.page
    _open(viewer, TOKEN_A, theirs)
    expect(page.get_by_role("status")).to_contain_text(f"No inbox {theirs} here")


def test_a_refused_token_brings_the_form_back(
    tenant_viewer: tuple[Viewer, list[str]], tenant_server: InboxServer
) -> None:
    viewer, _ = tenant_viewer
    page = viewer.page
    _open(viewer, "tit_wrong")
    expect(page.get_by_role("status")).to_have_text(
        "That token was refused: type it again, or another one."
    )
    expect(page.get_by_label("API token")).to_be_focused()
    assert page.evaluate("window.sessionStorage.getItem('tempinbox-token')") is None
    viewer.shoot("tenants-04-refused")


def test_the_token_stays_for_the_tab_across_reloads(
    tenant_viewer: tuple[Viewer, list[str]], tenant_server: InboxServer
) -> None:
    viewer, _ = tenant_viewer
    generate(tenant_server.api_url, TOKEN_A)
    page = viewer.page
    _open(viewer, TOKEN_A)
    expect(page.locator("#inboxes a")).to_have_count(1)
    page.reload()
    expect(page.locator("#inboxes a")).to_have_count(1)
    expect(page.get_by_label("API token")).to_be_hidden()


def test_the_html_frame_loads_with_a_ticket_under_the_mails_own_policy(
    tenant_viewer: tuple[Viewer, list[str]], tenant_server: InboxServer
) -> None:
    viewer, urls = tenant_viewer
    address = generate(tenant_server.api_url, TOKEN_A)
    styled = '<p id="red" style="color: rgb(255, 0, 0)">Styled</p>'
    send(tenant_server, html_mail(address, styled, subject="Styled"))
    _open(viewer, TOKEN_A, address)
    frame = viewer.page.frame_locator("#html-frame")
    expect(frame.locator("#red")).to_have_css("color", "rgb(255, 0, 0)")
    framed = [url for url in urls if "/viewer/messages/" in url]
    assert framed
    assert all("ticket=" in url and TOKEN_A not in url for url in framed)
    expect(viewer.page.get_by_role("button", name="Load remote images")).to_be_enabled()
    viewer.shoot("tenants-05-styled-frame")
