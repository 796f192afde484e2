"""Filters on the server as clients other than the Python one use them: curl and node."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import make_message, send
from .filters_support import html_message, sending_later, subjects

CURL = shutil.which("curl")
NODE = shutil.which("node")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")


def curl(url: str, *data: str, timeout: float = 30) -> tuple[int, Any]:
    """GET ``url`` with curl, each of ``data`` (``name=value``) URL-encoded into the query."""
    assert CURL is not None
    arguments = [CURL, "-sS", "--noproxy", "*", "-G", "-w", "\n%{http_code}", url]
    for item in data:
        arguments += ["--data-urlencode", item]
    done = subprocess.run(arguments, capture_output=True, text=True, timeout=timeout, check=True)
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body)


# --- clients other than the Python one ---------------------------------------------------


@needs_curl
def test_curl_gets_only_the_messages_whose_subject_matches(
    server: InboxServer, address: str
) -> None:
    for subject in ("Your receipt", "Reset your password", "Reset your PIN"):
        send(server, make_message(address, subject=subject))

    status, found = curl(f"{server.api_url}/messages/{address}", "subject=Reset your")

    assert status == 200
    assert subjects(found) == ["Reset your password", "Reset your PIN"]


@needs_curl
def test_curl_long_poll_with_a_filter_outlasts_a_delivery_it_does_not_want(
    server: InboxServer, address: str, http: requests.Session
) -> None:
    unwanted = make_message(address, subject="Weekly newsletter")
    wanted = make_message(address, subject="Reset your password")
    url = f"{server.api_url}/messages/{address}"

    started = time.monotonic()
    with sending_later(server, (0.3, unwanted), (1.0, wanted)):
        status, found = curl(url, "subject=Reset", "wait=20")
    elapsed = time.monotonic() - started

    assert status == 200
    assert subjects(found) == ["Reset your password"]  # not [] at 0.3 s: it kept waiting
    assert 1.0 <= elapsed < 10
    assert subjects(http.get(url).json()) == ["Weekly newsletter", "Reset your password"]


@needs_curl
def test_curl_long_poll_with_a_filter_answers_an_empty_list_when_time_is_up(
    server: InboxServer, address: str
) -> None:
    with sending_later(server, (0.1, make_message(address, subject="Weekly newsletter"))):
        started = time.monotonic()
        status, found = curl(f"{server.api_url}/messages/{address}", "subject=Reset", "wait=1")
        elapsed = time.monotonic() - started

    assert (status, found) == (200, [])
    assert elapsed >= 0.9


@needs_curl
def test_curl_gets_a_problem_for_a_filter_over_the_limit(server: InboxServer, address: str) -> None:
    status, problem = curl(f"{server.api_url}/messages/{address}", "text=" + "x" * 1001)

    assert status == 400
    assert problem["code"] == "invalid_request"
    assert "text" in problem["detail"]


NODE_SCRIPT = """
const [url, sender, text] = process.argv.slice(1);  // node -e: no script path
const query = new URLSearchParams({from: sender, text: text, wait: "20"});
fetch(`${url}?${query}`).then(async (response) => {
  console.log(JSON.stringify({status: response.status, body: await response.json()}));
});
"""


@needs_node
def test_node_fetch_long_polls_by_sender_and_unicode_text(
    server: InboxServer, address: str
) -> None:
    url = f"{server.api_url}/messages/{address}"
    wrong_sender = make_message(address, body="Ihre Bestätigung: Grüße\n", sender="x@spam.test")
    wrong_text = make_message(address, body="Something else\n", sender="Billing@Shop.test")
    wanted = html_message(
        address, "Rechnung", "<p>Ihre <b>Bestätigung</b>:\n  Grüße ✓</p>", "Billing@Shop.test"
    )

    assert NODE is not None
    with sending_later(server, (0.2, wrong_sender), (0.4, wrong_text), (0.8, wanted)):
        done = subprocess.run(
            [NODE, "-e", NODE_SCRIPT, url, "billing@shop", "Bestätigung: Grüße ✓"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )

    answer = json.loads(done.stdout)
    assert answer["status"] == 200
    assert subjects(answer["body"]) == ["Rechnung"]
