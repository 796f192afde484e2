"""The inbox viewer: its routes and headers over HTTP, without a browser."""

from __future__ import annotations

from html.parser import HTMLParser
from importlib import resources

import pytest
import requests

from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.server.api.settings import ApiSettings
from pytest_tempinbox.server.http.app import create_app
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.viewer import MAIL_POLICY, MAIL_POLICY_REMOTE_IMAGES, PAGE_POLICY

from ..helpers import make_message
from .viewer_support import TIMEOUT, deliver, html_mail, html_url, policy

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
        "/api/health",
        "/api/inboxes",  # a tenant's own, on a server with tenants; 404 without
        "/api/info",
        "/api/openapi.json",
        "/api/ready",
        "/api/refused",
        "/metrics",
        "/providers/ses/v2/email/account",  # SES's GetAccount: a quota, no inbox
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
    # The API, /metrics and the providers' endpoints beside it (Postmark's at the origin's root
    # too); the viewer's page and files are not.
    assert "/api/generate" in paths
    assert not any(path.startswith("/viewer") or path == "/" for path in paths)
