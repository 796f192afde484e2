"""The link check against a real HTTP server on a loopback port: statuses, redirects, errors."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pytest_tempinbox.checks.links import (
    LinkReport,
    LinkResult,
    Redirect,
    assert_links_work,
    check_links,
)
from pytest_tempinbox.errors import MailAssertionError


@dataclass
class Site:
    """The test server: its base URL and what it saw."""

    base: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    cookies: list[str | None] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return self.base + path

    def methods(self, path: str) -> list[str]:
        return [method for method, seen in self.requests if seen == path]


REDIRECTS = {
    "/r1": (301, "/r2"),
    "/r2": (302, "/final"),
    "/loop-a": (302, "/loop-b"),
    "/loop-b": (302, "/loop-a"),
    "/to-mailto": (302, "mailto:unsubscribe@example.com"),
}
STATUSES = {"/ok": 200, "/final": 200, "/missing": 404, "/gone": 410, "/error": 500}


@pytest.fixture
def site() -> Iterator[Site]:
    """A server on a free loopback port with one route per behaviour under test."""
    state = Site("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status: int, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def route(self) -> None:
            path = self.path
            with state.lock:
                state.requests.append((self.command, path))
            if path in STATUSES:
                self.answer(STATUSES[path])
            elif path in REDIRECTS:
                status, location = REDIRECTS[path]
                self.answer(status, {"Location": location})
            elif path.startswith("/hop/"):
                self.answer(302, {"Location": f"/hop/{int(path[5:]) + 1}"})
            elif path in ("/no-head", "/head-forbidden"):
                refused = 405 if path == "/no-head" else 403
                self.answer(refused if self.command == "HEAD" else 200)
            elif path == "/slow":
                state.release.wait(10)
                self.answer(200)
            elif path.startswith("/count"):
                with state.lock:
                    state.in_flight += 1
                    state.most_in_flight = max(state.most_in_flight, state.in_flight)
                time.sleep(0.2)
                with state.lock:
                    state.in_flight -= 1
                self.answer(200)
            elif path == "/set-cookie":
                self.answer(200, {"Set-Cookie": "session=secret; Path=/"})
            elif path == "/echo-cookie":
                state.cookies.append(self.headers.get("Cookie"))
                self.answer(200)
            elif path == "/endless":
                self.endless()
            else:
                self.answer(404)

        def endless(self) -> None:
            if self.command == "HEAD":
                self.answer(405)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                while not state.release.wait(0.01):
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True

        do_GET = do_HEAD = route

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    state.base = f"http://127.0.0.1:{server.server_port}"
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


def one(report: LinkReport) -> LinkResult:
    (result,) = report.results
    return result


def test_a_page_that_answers_200_works(site: Site) -> None:
    result = one(check_links([site.url("/ok")]))
    assert (result.ok, result.status, result.method, result.error) == (True, 200, "HEAD", None)
    assert site.methods("/ok") == ["HEAD"]


@pytest.mark.parametrize(("path", "status"), [("/missing", 404), ("/gone", 410)])
def test_a_missing_page_is_broken_and_is_not_asked_again_with_get(
    site: Site, path: str, status: int
) -> None:
    result = one(check_links([site.url(path)]))
    assert (result.ok, result.status, result.method) == (False, status, "HEAD")
    assert site.methods(path) == ["HEAD"]


def test_a_server_error_is_broken_after_get_confirms_it(site: Site) -> None:
    result = one(check_links([site.url("/error")]))
    assert (result.ok, result.status, result.method) == (False, 500, "GET")
    assert site.methods("/error") == ["HEAD", "GET"]


@pytest.mark.parametrize("path", ["/no-head", "/head-forbidden"])
def test_a_server_refusing_head_is_asked_with_get(site: Site, path: str) -> None:
    result = one(check_links([site.url(path)]))
    assert (result.ok, result.status, result.method) == (True, 200, "GET")
    assert site.methods(path) == ["HEAD", "GET"]


def test_get_does_not_read_a_body_that_never_ends(site: Site) -> None:
    result = one(check_links([site.url("/endless")], timeout=5.0))
    assert (result.ok, result.status, result.method) == (True, 200, "GET")


def test_redirects_are_followed_and_each_hop_reported(site: Site) -> None:
    result = one(check_links([site.url("/r1")]))
    assert result.ok
    assert result.status == 200
    assert result.redirects == (
        Redirect(301, site.url("/r2")),
        Redirect(302, site.url("/final")),
    )


def test_a_redirect_loop_is_broken(site: Site) -> None:
    result = one(check_links([site.url("/loop-a")]))
    assert not result.ok
    assert result.error == f"redirect loop: back to {site.url('/loop-a')}"
    assert [hop.location for hop in result.redirects] == [site.url("/loop-b"), site.url("/loop-a")]


def test_more_than_ten_redirects_are_not_followed(site: Site) -> None:
    result = one(check_links([site.url("/hop/0")]))
    assert not result.ok
    assert result.error == "more than 10 redirects"
    assert len(result.redirects) == 10
    assert site.methods("/hop/10") == []


def test_a_redirect_to_mailto_is_reported_and_not_followed(site: Site) -> None:
    result = one(check_links([site.url("/to-mailto")]))
    assert (result.ok, result.status, result.error) == (True, 302, None)
    assert result.redirects == (Redirect(302, "mailto:unsubscribe@example.com"),)


def test_a_slow_page_times_out(site: Site) -> None:
    result = one(check_links([site.url("/slow")], timeout=0.3))
    assert not result.ok
    assert result.status is None
    assert result.error == "timed out after 0.3 s"


def test_the_total_time_bounds_the_whole_check(site: Site) -> None:
    report = check_links([site.url("/slow"), site.url("/ok")], concurrency=1, total=0.3)
    slow, ok = report.results
    assert slow.error == "timed out: the check's total of 0.3 s ran out"
    assert ok.error == "not checked: the check's total of 0.3 s ran out"
    assert ok.method is None


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_closed_port_is_connection_refused() -> None:
    result = one(check_links([f"http://127.0.0.1:{closed_port()}/"]))
    assert (result.ok, result.status, result.error) == (False, None, "connection refused")


def test_a_name_that_does_not_resolve_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    result = one(check_links(["http://no-such-host.invalid/"]))
    assert result.error == "name does not resolve"


def test_loopback_links_bypass_the_environments_proxy(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert one(check_links([site.url("/ok")])).ok


def test_other_schemes_are_skipped_and_never_requested(site: Site) -> None:
    others = [
        "mailto:a@example.com",
        "tel:+15551234",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "cid:logo@x",
        "/relative",
    ]
    report = check_links([*others, site.url("/ok")])
    assert report.skipped == tuple(others)
    assert [result.url for result in report.results] == [site.url("/ok")]


def test_ignore_takes_substrings_and_patterns(site: Site) -> None:
    urls = [site.url("/missing"), site.url("/error"), site.url("/ok")]
    report = check_links(urls, ignore=["/missing", re.compile(r"/err\w+$")])
    assert report.ignored == (site.url("/missing"), site.url("/error"))
    assert [result.url for result in report.results] == [site.url("/ok")]
    assert site.methods("/missing") == site.methods("/error") == []


def test_a_url_given_twice_is_requested_once(site: Site) -> None:
    report = check_links([site.url("/ok"), site.url("/final"), site.url("/ok")])
    assert [result.url for result in report.results] == [site.url("/ok"), site.url("/final")]
    assert site.methods("/ok") == ["HEAD"]


def test_no_more_links_are_requested_at_once_than_allowed(site: Site) -> None:
    urls = [site.url(f"/count/{number}") for number in range(8)]
    report = check_links(urls, concurrency=3)
    assert report.ok
    assert 1 <= site.most_in_flight <= 3


def test_no_cookie_passes_from_one_link_to_the_next(site: Site) -> None:
    report = check_links([site.url("/set-cookie"), site.url("/echo-cookie")], concurrency=1)
    assert report.ok
    assert site.cookies == [None]


def test_requests_name_the_package_as_user_agent(site: Site) -> None:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            seen.append(self.headers.get("User-Agent", ""))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        assert one(check_links([f"http://localhost:{server.server_port}/"])).ok
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert seen[0].startswith("pytest-tempinbox/")


def test_the_report_survives_its_json_form(site: Site) -> None:
    report = check_links(
        [site.url("/r1"), site.url("/missing"), "mailto:a@example.com", site.url("/error")],
        ignore=["/error"],
    )
    data = json.loads(json.dumps(report.to_json()))
    assert data["ok"] is False
    assert data["results"][0]["redirects"][0] == {"status": 301, "location": site.url("/r2")}
    again = LinkReport.from_json(data)
    assert [(r.url, r.ok, r.status, r.redirects) for r in again.results] == [
        (r.url, r.ok, r.status, r.redirects) for r in report.results
    ]
    assert (again.skipped, again.ignored) == (report.skipped, report.ignored)


def test_the_assertion_lists_each_broken_link_and_counts_the_rest(site: Site) -> None:
    urls = [site.url("/ok"), site.url("/missing"), site.url("/r1"), site.url("/loop-a")]
    report = check_links([*urls, f"http://127.0.0.1:{closed_port()}/x", "mailto:a@example.com"])
    with pytest.raises(MailAssertionError) as caught:
        assert_links_work(report)
    text = str(caught.value)
    assert "3 of 5 did not (2 worked; 1 skipped as not http(s), 0 ignored)" in text
    assert f"{site.url('/missing')} -> 404 Not Found (HEAD)" in text
    assert "redirect loop" in text
    assert "connection refused" in text
    assert site.url("/ok") not in text


def test_the_assertion_passes_when_every_link_works(site: Site) -> None:
    assert_links_work(check_links([site.url("/ok"), site.url("/r1")]))


def test_nothing_to_check_is_an_empty_report() -> None:
    report = check_links(["mailto:a@example.com"])
    assert (report.results, report.ok) == ((), True)


def test_nonsense_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        check_links([], timeout=0)
    with pytest.raises(ValueError, match="at least 1"):
        check_links([], concurrency=0)


@pytest.fixture
def tls_site() -> Iterator[tuple[str, str]]:
    """An https server on a loopback port with a certificate of a CA of its own: URL, CA file."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

        def handle(self) -> None:
            with contextlib.suppress(ssl.SSLError):  # the client refused the certificate
                super().handle()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(
        server.socket, server_side=True, do_handshake_on_connect=False
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    with ca.cert_pem.tempfile() as ca_file:
        yield f"https://localhost:{server.server_port}/", ca_file
    server.shutdown()
    server.server_close()
    thread.join()


def test_an_untrusted_certificate_is_a_tls_error(
    tls_site: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    result = one(check_links([tls_site[0]]))
    assert not result.ok
    assert result.error is not None
    assert result.error.startswith("TLS: certificate verify failed")


def test_the_ca_bundle_of_the_environment_is_trusted(
    tls_site: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, ca_file = tls_site
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca_file)
    assert one(check_links([url])).ok
