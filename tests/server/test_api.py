"""The HTTP API over real sockets: info, the OpenAPI document, routing and host names."""

from __future__ import annotations

import smtplib

import requests

from pytest_tempinbox import __version__
from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, make_message, send
from .api_support import assert_problem

# --- /api/info, /api/openapi.json, routing --------------------------------------------


def test_info_tells_where_the_smtp_listener_is(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    info = http.get(api + "/info").json()
    assert info["version"] == __version__
    assert info["smtp"] == {
        "host": "127.0.0.1",
        "port": server.smtp_port,
        "tls": "off",
        "auth": "any",
    }
    assert info["domains"] == ["tempinbox.test", "other.test"]
    assert info["limits"] == {
        "message_size": 10 * 1024 * 1024,
        "recipients": 100,
        "command_line": 512,
        "data_line": 1000,
        "connections": 100,
        "idle_timeout": 300.0,
        "messages_per_inbox": 1000,
        "stored_bytes": 256 * 1024 * 1024,
        "inbox_ttl": None,
        "request_body": 64 * 1024,
        "wait": 60.0,
        "faults_per_inbox": 100,
        "fault_delay": 60.0,
        "streams": 100,
        "streams_per_inbox": 10,
        "listen_backlog": 2048,
        "heartbeat": 15.0,
    }
    assert set(info["stats"]) == {"inboxes", "messages", "stored_bytes", "evictions", "streams"}


def test_info_counts_what_is_stored(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    before = http.get(api + "/info").json()["stats"]
    send(server, make_message(address))
    after = http.get(api + "/info").json()["stats"]
    assert after["messages"] == before["messages"] + 1
    assert after["stored_bytes"] > before["stored_bytes"]


def test_openapi_document_lists_every_route(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    from starlette.routing import Route

    from pytest_tempinbox.server.api.settings import ApiSettings
    from pytest_tempinbox.server.http.app import create_app

    document = http.get(api + "/openapi.json").json()
    assert document["openapi"].startswith("3.")
    app = create_app(server.store, ApiSettings(ServerConfig(), 25))
    # The inbox viewer's routes, outside /api, are a web page, not API.
    # /metrics, outside /api where Prometheus looks for it, is documented too.
    served = {
        (route.path.replace("{index:int}", "{index}"), method.lower())
        for route in app.routes
        if isinstance(route, Route) and route.path.startswith(("/api/", "/metrics"))
        for method in route.methods or ()
        if method != "HEAD"
    }
    documented = {
        (path, method)
        for path, item in document["paths"].items()
        if path.startswith(("/api/", "/metrics"))
        for method in item
    }
    assert served == documented
    assert ("/metrics", "get") in documented


def test_openapi_document_lists_every_provider_route(
    server: InboxServer, api: str, http: requests.Session
) -> None:
    from pytest_tempinbox.server.api.routes import API_PREFIX, ROUTES

    document = http.get(api + "/openapi.json").json()
    # A provider's route is named "<provider>:<method> <path>" (server.providers.ENDPOINTS).
    served = {
        (route.path, method.lower())
        for route in ROUTES
        if ":" in route.name
        for method in route.endpoints
    }
    documented = {
        (path, method)
        for path, item in document["paths"].items()
        if not path.startswith((API_PREFIX + "/", "/metrics"))
        for method in item
    }
    assert served == documented
    assert ("/providers/brevo/v3/smtp/email", "post") in documented


def test_requests_for_another_host_name_are_refused(api: str, http: requests.Session) -> None:
    # A page on evil.example, rebound to 127.0.0.1, must not read the inboxes.
    response = http.get(api + "/info", headers={"Host": "evil.example"})
    assert_problem(response, 421, "host_not_allowed")
    port = api.split(":")[2].split("/")[0]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert http.get(api + "/info", headers={"Host": host}).status_code == 200


def test_allowed_hosts_extend_the_names_a_server_answers_to() -> None:
    with InboxServer(allowed_hosts=["TempInbox.Internal"]) as server:
        response = requests.get(
            server.api_url + "/info", headers={"Host": "tempinbox.internal:80"}, timeout=5
        )
    assert response.status_code == 200


def test_unknown_routes_answer_404_problem(api: str, http: requests.Session) -> None:
    assert_problem(http.get(api + "/nope"), 404, "not_found")
    assert_problem(http.get(api.removesuffix("/api") + "/nope"), 404, "not_found")


def test_wrong_methods_answer_405_problem(api: str, http: requests.Session, address: str) -> None:
    response = http.get(api + "/generate")
    assert_problem(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
    assert_problem(http.post(f"{api}/messages/{address}"), 405, "method_not_allowed")
    assert_problem(http.get(f"{api}/delete/{address}"), 405, "method_not_allowed")


def test_a_message_with_raw_utf8_headers_is_served_as_json(
    server: InboxServer, api: str, http: requests.Session, address: str
) -> None:
    raw = (
        f"From: Jöhn <jöhn@exämple.com>\r\nTo: {address}\r\nSubject: Grüße\r\n\r\nHallo\r\n"
    ).encode()
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as client:
        client.sendmail("sender@example.com", [address], raw, mail_options=["SMTPUTF8"])
    (got,) = http.get(f"{api}/messages/{address}").json()
    assert got["from"] == {"name": "Jöhn", "email": "jöhn@exämple.com"}
    assert got["subject"] == "Grüße"
