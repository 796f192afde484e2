"""The checks from a test's side: ``Message``'s methods and the routes that other languages call.

Real mail goes through a real server over SMTP; the client reads it over HTTP
and in-process (the ``client`` fixture), and each check must answer alike
from ``Message`` and from its route. The links point at a real web server on
loopback; DKIM signatures are real (dkimpy); SpamAssassin is Debian's, where
installed.
"""

from __future__ import annotations

import json
import shutil
import smtplib
import threading
import time
from collections.abc import Iterator
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from pytest_tempinbox import TempInboxClient
from pytest_tempinbox.checks.html_support import HtmlCompatibility
from pytest_tempinbox.checks.links import LinkReport
from pytest_tempinbox.errors import MailAssertionError
from pytest_tempinbox.models import Message
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, make_message, send
from .dkim_support import Signer

TIMEOUT = 10.0
MODERN = (
    '<div style="display: flex; gap: 8px"><div style="display: grid">'
    '<a href="{app}/confirm">Confirm</a></div></div>'
)


@pytest.fixture(scope="module")
def app() -> Iterator[str]:
    """The application under test: 200 on ``/ok`` and ``/confirm``, 404 elsewhere."""

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            status = 200 if self.path in ("/ok", "/confirm", "/logo.png") else 404
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def html_mail(to: str, html: str, **headers: str) -> EmailMessage:
    message = make_message(to, subject="Welcome", body="Hello.\n")
    message.add_alternative(html, subtype="html")
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    return message


def received(client: TempInboxClient, server: InboxServer, message: EmailMessage) -> Message:
    """Send ``message`` over SMTP; return it as its inbox received it (the newest there)."""
    address = str(message["To"])
    before = client.messages(address)
    send(server, message)
    (arrived,) = client.messages(address, after=before[-1].id if before else None, wait=TIMEOUT)
    return arrived


def route(server: InboxServer, message: Message, check: str, **params: str) -> requests.Response:
    url = f"{server.api_url}/messages/{message.inbox}/{message.id}/{check}"
    return requests.get(url, params=params, timeout=60)


# --- HTML support ----------------------------------------------------------------------


def test_html_support_is_the_same_from_the_message_and_the_route(
    client: TempInboxClient, server: InboxServer, app: str
) -> None:
    inbox = client.generate()
    message = received(client, server, html_mail(inbox.address, MODERN.format(app=app)))

    report = message.html_compatibility()
    over_http = route(server, message, "html-check")

    assert over_http.status_code == 200
    assert HtmlCompatibility.from_json(over_http.json()) == report
    assert {"css-display-flex", "css-display-grid", "css-gap"} <= set(report.used)
    gmail = route(server, message, "html-check", clients="gmail")
    assert HtmlCompatibility.from_json(gmail.json()) == message.html_compatibility(clients="gmail")
    with pytest.raises(MailAssertionError, match=r"(?s)at least 99% .*caniemail\.com"):
        message.assert_html_support(99)


def test_html_check_of_a_text_mail_and_of_unknown_clients(
    client: TempInboxClient, server: InboxServer
) -> None:
    inbox = client.generate()
    message = received(client, server, make_message(inbox.address))
    assert message.html_compatibility().score == 100.0
    assert route(server, message, "html-check").json()["code"] == "not_found"
    html = received(client, server, html_mail(inbox.address, "<p>Hi</p>"))
    refused = route(server, html, "html-check", clients="lotus-notes")
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")


# --- links -----------------------------------------------------------------------------


def test_links_and_images_are_checked_from_the_message_and_the_route(
    client: TempInboxClient, server: InboxServer, app: str
) -> None:
    inbox = client.generate()
    html = (
        f'<a href="{app}/ok">OK</a> <a href="{app}/gone">Gone</a>'
        f'<img src="{app}/logo.png" alt=""> <a href="mailto:help@example.com">Help</a>'
    )
    message = received(client, server, html_mail(inbox.address, html))

    report = message.check_links()
    over_http = LinkReport.from_json(route(server, message, "link-check").json())

    for checked in (report, over_http):
        assert {result.url: result.ok for result in checked.results} == {
            f"{app}/ok": True,
            f"{app}/gone": False,
            f"{app}/logo.png": True,
        }
    with pytest.raises(MailAssertionError, match=r"/gone -> 404"):
        message.assert_links_work()
    assert message.assert_links_work(ignore=["/gone"]).ok


def test_a_server_with_link_checks_off_refuses_and_bad_timeouts_are_refused(
    http: requests.Session, app: str
) -> None:
    with InboxServer(link_checks=False) as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        message = received(client, server, html_mail(inbox.address, f'<a href="{app}/ok">x</a>'))
        refused = route(server, message, "link-check")
        assert (refused.status_code, refused.json()["code"]) == (403, "link_checks_off")
        assert message.check_links().ok  # from the test's own process, all the same
    with InboxServer() as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        message = received(client, server, make_message(inbox.address))
        for timeout in ("0", "31", "soon"):
            bad = route(server, message, "link-check", timeout=timeout)
            assert (bad.status_code, bad.json()["code"]) == (400, "invalid_request")


# --- unsubscribe -----------------------------------------------------------------------


def test_the_unsubscribe_headers_are_in_the_message_and_its_json(
    client: TempInboxClient, server: InboxServer
) -> None:
    inbox = client.generate()
    message = received(
        client,
        server,
        html_mail(
            inbox.address,
            "<p>News</p>",
            List_Unsubscribe="<mailto:leave@example.com>, <https://example.com/u/42>",
            List_Unsubscribe_Post="List-Unsubscribe=One-Click",
        ),
    )
    assert message.unsubscribe is not None
    assert message.unsubscribe.one_click
    assert message.unsubscribe_link(one_click=True) == "https://example.com/u/42"
    url = f"{server.api_url}/messages/{message.inbox}/{message.id}"
    data = requests.get(url, timeout=TIMEOUT).json()
    assert data["unsubscribe"]["http"] == ["https://example.com/u/42"]
    assert data["unsubscribe"]["mailto"] == ["mailto:leave@example.com"]

    plain = received(client, server, make_message(inbox.address))
    assert plain.unsubscribe is None
    with pytest.raises(MailAssertionError, match="List-Unsubscribe"):
        plain.unsubscribe_link()


# --- DKIM --------------------------------------------------------------------------------


def test_dkim_is_verified_with_the_servers_keys(http: requests.Session) -> None:
    signer = Signer()
    keys = {"sel._domainkey.example.com": signer.record}
    raw = (
        b"From: Shop <noreply@example.com>\r\nTo: {to}\r\nSubject: Signed\r\n"
        b"Date: Mon, 03 Mar 2025 09:12:44 +0000\r\nMessage-ID: <s-1@example.com>\r\n\r\n"
        b"Thank you for your order.\r\n"
    )
    with InboxServer(dkim_keys=keys) as server, TempInboxClient(server.api_url) as client:
        inbox = client.generate()
        signed = signer.sign(raw.replace(b"{to}", inbox.address.encode()))
        tampered = signed.replace(b"Thank you", b"Thank YOU")
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
            for body in (signed, tampered):
                smtp.sendmail("noreply@example.com", [inbox.address], body)
            smtp.send_message(make_message(inbox.address))
        deadline = time.monotonic() + TIMEOUT
        while len(found := client.messages(inbox.address)) < 3:
            assert time.monotonic() < deadline, "the three messages never arrived"
            time.sleep(0.01)
        verdicts = [message.dkim for message in found]
    assert [(v.result, v.domain, v.selector) for v in verdicts if v is not None] == [
        ("pass", "example.com", "sel"),
        ("fail", "example.com", "sel"),
        ("none", None, None),
    ]
    assert verdicts[1] is not None
    assert verdicts[1].reason == "body hash did not verify"


def test_the_command_line_and_the_plugin_read_a_dkim_keys_file(
    tmp_path: Path, pytester: pytest.Pytester
) -> None:
    from pytest_tempinbox._cli import _config, _parser

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"sel._domainkey.example.com": "v=DKIM1; p=AAAA"}))
    options = _parser("tempinbox").parse_args(["--dkim-keys", str(keys), "--no-link-checks"])
    config = _config(options)
    assert dict(config.dkim_keys) == {"sel._domainkey.example.com": "v=DKIM1; p=AAAA"}
    assert config.link_checks is False

    pytester.makepyfile("def test_one(tempinbox):\n    pass\n")
    result = pytester.runpytest_subprocess("--tempinbox-dkim-keys", str(tmp_path / "missing"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tempinbox-dkim-keys: DKIM keys file *missing: no such file*"])


# --- spam --------------------------------------------------------------------------------


@pytest.mark.skipif(
    shutil.which("spamassassin") is None,
    reason="SpamAssassin is not installed (Debian: apt-get install spamassassin)",
)
def test_spam_score_from_the_message_and_the_route(
    client: TempInboxClient, server: InboxServer
) -> None:
    inbox = client.generate()
    clean = received(client, server, make_message(inbox.address, subject="Your receipt"))
    gtube = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"
    spam = received(client, server, make_message(inbox.address, subject="Hi", body=gtube))

    assert clean.assert_spam_score(below=5).score < 5
    over_http = route(server, spam, "spam-check").json()
    assert over_http["score"] >= 100
    assert "GTUBE" in [rule["name"] for rule in over_http["rules"]]
    with pytest.raises(MailAssertionError, match="GTUBE"):
        spam.assert_spam_score()
