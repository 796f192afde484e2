"""The inbox viewer in headless Chromium: the tabs of a message, by mouse and keyboard."""

from __future__ import annotations

from email.message import EmailMessage
from urllib.parse import quote

import requests
from playwright.sync_api import expect

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .viewer_support import Viewer, deliver, html_mail


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
    expect(tabs).to_have_text(
        [
            "HTML",
            "Text",
            "Links (2)",
            "Attachments (1)",
            "Checks",
            "Headers",
            "Source",
            "Transcript",
        ]
    )
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
    selected("Transcript")
    page.keyboard.press("ArrowRight")  # wraps around
    selected("HTML")
    page.keyboard.press("ArrowLeft")
    selected("Transcript")
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
    expect(page.get_by_role("tab")).to_have_text(
        ["Text", "Checks", "Headers", "Source", "Transcript"]
    )

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
