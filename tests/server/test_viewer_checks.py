"""The inbox viewer's Checks tab in headless Chromium: HTML support, links, spam, DKIM, unsubscribe.

Each check runs on the real server: the links are requested from local web
servers of the test's own (one answers every request, one redirects to it, and
a closed port stands for a dead site), SpamAssassin is the installed program.
What the page shows is compared with what the API answers for the same message.
"""

from __future__ import annotations

import re
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Locator, Request, expect

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .viewer_support import TIMEOUT, Observer, Viewer, deliver, html_mail

# A first SpamAssassin run reads its rules: slower than a page's usual wait.
SPAM_TIMEOUT = 60_000

NEWSLETTER = (
    "<style>@media (prefers-color-scheme: dark) { p { color: #ffffff } }</style>"
    '<div style="display:flex"><p>Our news</p>'
    '<p style="background-image:url(paper.png)">This week</p></div>'
)


def closed_port() -> int:
    """A loopback port that nothing listens on: a connection to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def redirector(observer: Observer) -> Iterator[str]:
    """A local web server answering every request with a 302 to the same path on the observer."""

    class Redirect(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(302)
            self.send_header("Location", observer.url + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD

        def log_message(self, format: str, *args: object) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=web.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"http://127.0.0.1:{web.server_port}"
    web.shutdown()
    web.server_close()
    thread.join()


def shown_number(locator: Locator) -> float:
    """The number a cell shows, rounded to one decimal ("75.1%", "\N{MINUS SIGN}15.2")."""
    text = locator.inner_text().strip().rstrip("%").replace("\N{MINUS SIGN}", "-")
    return float(text)


def api_problem(server: InboxServer, http: requests.Session, path: str, status: int) -> Any:
    """The problem document the API answers at ``/api/messages/{path}``, with ``status``."""
    response = http.get(f"{server.api_url}/messages/{path}", timeout=TIMEOUT)
    assert response.status_code == status, response.text
    return response.json()


def api_json(server: InboxServer, http: requests.Session, path: str) -> Any:
    """What the API answers at ``/api/messages/{path}``: what the page must show."""
    response = http.get(f"{server.api_url}/messages/{path}", timeout=TIMEOUT)
    response.raise_for_status()
    return response.json()


def test_the_checks_tab_scores_the_html_once_per_message(
    viewer: Viewer, server: InboxServer, http: requests.Session, address: str
) -> None:
    send(server, make_message(address, subject="Plain words"))
    id = deliver(server, http, html_mail(address, NEWSLETTER, subject="Newsletter"))
    report = api_json(server, http, f"{address}/{id}/html-check")
    features = report["features"]
    assert features, report
    worst = features[0]
    viewer.open(address)
    page = viewer.page
    checks: list[str] = []

    def record(request: Request) -> None:
        if request.url.endswith("-check"):
            checks.append(request.url)

    page.on("request", record)

    page.get_by_role("tab", name="Checks").click()
    expect(page.get_by_role("tab", name="Checks")).to_have_attribute("aria-selected", "true")
    html = page.locator("#html-check")
    expect(html.locator(".verdict")).to_contain_text(re.compile(r"^\d+(\.\d)?% supported"))
    assert shown_number(html.locator(".verdict strong")) == pytest.approx(report["score"], abs=0.05)
    expect(html.locator(".verdict")).to_contain_text("email clients")
    rows = html.locator("tbody tr")
    expect(rows).to_have_count(len(features))
    # Worst first, the title linking to caniemail.com in a window that cannot reach back.
    title = rows.first.get_by_role("link", name=worst["title"], exact=True)
    expect(title).to_have_attribute("href", worst["url"])
    expect(title).to_have_attribute("rel", "noopener noreferrer")
    loss = rows.first.locator("td").nth(1)
    expect(loss).to_have_text(re.compile("^\N{MINUS SIGN}\\d"))
    assert shown_number(loss) == pytest.approx(-worst["loss"], abs=0.05)
    expect(rows.first.locator("td").nth(2)).to_contain_text(
        f"{len(worst['unsupported'])} of {worst['tested']}"
    )
    expect(html.get_by_role("link", name="display:flex", exact=True)).to_be_visible()
    viewer.shoot("24-checks-html-support")

    # Shown again, the report is not fetched again; no link or spam check ran unasked.
    page.get_by_role("tab", name="Text").click()
    page.get_by_role("tab", name="Checks").click()
    expect(rows).to_have_count(len(features))
    assert [url.rsplit("/", 1)[-1] for url in checks] == ["html-check"]

    viewer.message_button("Plain words")()
    expect(page.get_by_role("tab", name="Checks")).to_have_attribute("aria-selected", "true")
    expect(html).to_have_text("No HTML body.")


def test_check_links_lists_the_broken_first_with_redirects(
    viewer: Viewer,
    server: InboxServer,
    http: requests.Session,
    address: str,
    observer: Observer,
    redirector: str,
) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/gone"
    links = [f"{observer.url}/welcome", dead, f"{redirector}/moved"]
    body = "".join(f'<p><a href="{url}">Link {n}</a></p>' for n, url in enumerate(links))
    deliver(server, http, html_mail(address, body, subject="Three links"))
    viewer.open(address)
    page = viewer.page
    page.get_by_role("tab", name="Checks").click()
    expect(page.locator("#html-check .verdict")).to_be_visible()
    # The server requests the links only when asked.
    assert observer.settle(0.3) == []

    page.get_by_role("button", name="Check links").click()
    region = page.locator("#link-check")
    expect(region.locator(".verdict")).to_have_text("3 links checked: 1 broken.")
    rows = region.locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_have_class("broken")
    expect(rows.first.locator("td").first).to_have_text("Broken")
    expect(rows.first.locator("td").nth(1)).to_have_text(dead)
    expect(rows.first.locator("td").nth(2)).to_contain_text("refused")
    ok = rows.filter(has_text="/welcome")
    # The observer refuses HEAD (501): the check fell back to GET.
    expect(ok.locator("td")).to_have_text(["OK", f"{observer.url}/welcome", "200 (GET)", "none"])
    expect(ok.get_by_role("link")).to_have_attribute("rel", "noopener noreferrer")
    moved = rows.filter(has_text=f"{redirector}/moved")
    expect(moved.locator("td").first).to_have_text("OK")
    expect(moved.locator(".hops li")).to_have_text([f"302 → {observer.url}/moved"])
    expect(page.get_by_role("button", name="Check links")).to_be_enabled()
    assert "/welcome" in observer.paths
    assert "/moved" in observer.paths
    viewer.shoot("25-checks-links")


def test_a_server_with_link_checks_off_says_so(
    browser: Browser, screenshots: Path, http: requests.Session, observer: Observer
) -> None:
    with InboxServer(link_checks=False) as server:
        address = http.post(f"{server.api_url}/generate", timeout=TIMEOUT).json()["email"]
        body = f'<p><a href="{observer.url}/welcome">Welcome</a></p>'
        id = deliver(server, http, html_mail(address, body, subject="Not to be checked"))
        problem = api_problem(server, http, f"{address}/{id}/link-check", 403)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT * 1000)
            viewer = Viewer(page, server.viewer_url, screenshots)
            page.on("pageerror", lambda error: viewer.errors.append(str(error)))
            viewer.open(address)
            page.get_by_role("tab", name="Checks").click()
            page.get_by_role("button", name="Check links").click()
            expect(page.locator("#link-check")).to_have_text(problem["detail"])
            viewer.shoot("26-checks-links-off")
            assert viewer.errors == []
        finally:
            context.close()
    assert problem["code"] == "link_checks_off"
    assert observer.paths == []


@pytest.mark.skipif(
    shutil.which("spamassassin") is None,
    reason="SpamAssassin is not installed (Debian: apt-get install spamassassin)",
)
def test_spam_score_shows_the_score_against_the_threshold_and_the_rules(
    viewer: Viewer, server: InboxServer, http: requests.Session, address: str
) -> None:
    deliver(server, http, html_mail(address, NEWSLETTER, subject="FREE MONEY!!! Act now"))
    viewer.open(address)
    page = viewer.page
    page.get_by_role("tab", name="Checks").click()

    page.get_by_role("button", name="Spam score").click()
    region = page.locator("#spam-check")
    expect(region.locator(".verdict")).to_contain_text(
        "against a threshold of 5", timeout=SPAM_TIMEOUT
    )
    rows = region.locator("tbody tr")
    expect(rows.first).to_be_visible()
    scores = [float(text) for text in rows.locator("td:nth-child(2)").all_inner_texts()]
    assert scores == sorted(scores, reverse=True)
    expect(page.get_by_role("button", name="Spam score")).to_be_enabled()
    rows.last.scroll_into_view_if_needed()  # the panel scrolls, not the page
    viewer.shoot("27-checks-spam")


def test_dkim_and_unsubscribe_are_shown_from_the_message(
    viewer: Viewer, server: InboxServer, http: requests.Session, address: str
) -> None:
    news = html_mail(address, "<p>Weekly news</p>", subject="Weekly news")
    news["List-Unsubscribe"] = (
        "<https://app.example/unsubscribe?u=42>, <mailto:leave@app.example?subject=unsubscribe>"
    )
    news["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    id = deliver(server, http, news)
    sloppy = make_message(address, subject="Sloppy list")
    sloppy["List-Unsubscribe"] = "<http://app.example/unsubscribe?u=42>"
    sloppy_id = deliver(server, http, sloppy)
    sloppy_json = api_json(server, http, f"{address}/{sloppy_id}")
    dkim = api_json(server, http, f"{address}/{id}")["dkim"]
    assert dkim["result"] == "none", dkim  # the mail is not signed
    viewer.open(address)
    page = viewer.page
    viewer.message_button("Weekly news")()
    page.get_by_role("tab", name="Checks").click()

    facts = page.locator("#sender-check")
    expect(facts.locator("dt")).to_have_text(["DKIM", "Unsubscribe", "One-click", "Problems"])
    expect(facts.locator("dd").first).to_contain_text("none (not signed)")
    link = facts.get_by_role("link", name="https://app.example/unsubscribe?u=42")
    expect(link).to_have_attribute("href", "https://app.example/unsubscribe?u=42")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(facts.locator(".targets li")).to_have_text(
        ["https://app.example/unsubscribe?u=42", "mailto:leave@app.example?subject=unsubscribe"]
    )
    expect(facts.locator("dd").nth(2)).to_have_text(
        "yes List-Unsubscribe-Post: List-Unsubscribe=One-Click"
    )
    expect(facts.locator("dd").nth(3)).to_have_text("none")
    viewer.shoot("28-checks-dkim-unsubscribe")

    viewer.message_button("Sloppy list")()
    unsubscribe = sloppy_json["unsubscribe"]
    assert unsubscribe["problems"], sloppy_json
    expect(facts.locator("dd").nth(2)).to_have_text("no")
    expect(facts.locator(".problems li")).to_have_text(unsubscribe["problems"])
    viewer.shoot("29-checks-unsubscribe-problems")
