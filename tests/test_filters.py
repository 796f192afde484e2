"""Filters on the server: ``GET /api/messages/{email}?subject=&from=&text=``.

The rules are :mod:`pytest_tempinbox.parsing.match`'s, so the server and the Python
filters mean the same; these tests hold the server to them from clients that
are not the Python one (curl, node), through the Python client over both
transports, and in the store, where a filtered long-poll must outlast the
deliveries it does not want.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import smtplib
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tempinbox.client.http import Inbox, TempInboxClient
from pytest_tempinbox.errors import InboxNotFound, InvalidRequest
from pytest_tempinbox.limits import MAX_FILTER_LENGTH
from pytest_tempinbox.models import Message
from pytest_tempinbox.parsing.match import (
    searchable_text,
    sender_matches,
    subject_matches,
    text_matches,
)
from pytest_tempinbox.server.endpoints import INLINE_PARSE_BYTES, messages_now
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store import Store, StoredMessage

from .helpers import CLIENT_NAME, make_message, send

CURL = shutil.which("curl")
NODE = shutil.which("node")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")


def html_message(to: str, subject: str, html: str, sender: str = "app@example.com") -> EmailMessage:
    """A message whose only body is HTML."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message.set_content(html, subtype="html")
    return message


def send_raw(server: InboxServer, to: str, raw: bytes) -> None:
    """Send ``raw`` as it is, envelope sender app@example.com."""
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname=CLIENT_NAME) as smtp:
        smtp.sendmail("app@example.com", [to], raw)


@contextmanager
def sending_later(server: InboxServer, *timed: tuple[float, EmailMessage]) -> Iterator[None]:
    """Send each message at its delay (seconds from now) in a thread, during the block."""

    def run() -> None:
        started = time.monotonic()
        for delay, message in timed:
            time.sleep(max(0.0, started + delay - time.monotonic()))
            send(server, message)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        thread.join(30)


def curl(url: str, *data: str, timeout: float = 30) -> tuple[int, Any]:
    """GET ``url`` with curl, each of ``data`` (``name=value``) URL-encoded into the query."""
    assert CURL is not None
    arguments = [CURL, "-sS", "--noproxy", "*", "-G", "-w", "\n%{http_code}", url]
    for item in data:
        arguments += ["--data-urlencode", item]
    done = subprocess.run(arguments, capture_output=True, text=True, timeout=timeout, check=True)
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body)


def subjects(found: list[Any]) -> list[str]:
    """The subjects of messages, as JSON objects or as Message objects."""
    return [item["subject"] if isinstance(item, dict) else item.subject for item in found]


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


# --- the Python client, over HTTP and in-process ----------------------------------------


def test_subject_is_contained_case_sensitively(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    for subject in ("Welcome aboard", "welcome back", "Your Welcome pack"):
        send(server, make_message(inbox.address, subject=subject))

    found = client.messages(inbox.address, subject="Welcome")

    assert subjects(found) == ["Welcome aboard", "Your Welcome pack"]


def test_from_is_the_address_contained_case_insensitively(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address, subject="a", sender='"Shop" <Billing@Shop.TEST>'))
    send(server, make_message(inbox.address, subject="b", sender='"Billing" <noreply@other.test>'))
    send(server, make_message(inbox.address, subject="c", sender="support@shop.test"))

    assert subjects(client.messages(inbox.address, sender="billing@shop.test")) == ["a"]
    assert subjects(client.messages(inbox.address, sender="SHOP.test")) == ["a", "c"]
    # The display name is not the address.
    assert subjects(client.messages(inbox.address, sender="Billing")) == ["a"]


def test_from_never_matches_a_message_without_a_from_header(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    send_raw(server, inbox.address, b"Subject: no sender\r\n\r\nHello\r\n")

    assert client.messages(inbox.address, sender="app@example.com") == []
    assert subjects(client.messages(inbox.address, subject="no sender")) == ["no sender"]


def test_text_matches_across_wrapped_lines_and_runs_of_white_space(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    body = "Please confirm\n   your   address\twithin 24 hours.\n"
    send(server, make_message(inbox.address, subject="wrapped", body=body))

    assert subjects(client.messages(inbox.address, text="confirm your address")) == ["wrapped"]
    assert subjects(client.messages(inbox.address, text="  confirm\nyour  ")) == ["wrapped"]
    assert client.messages(inbox.address, text="Confirm your address") == []  # case counts


def test_text_matches_the_visible_text_of_html_only_mail(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    html = (
        "<html><body><p>Your&nbsp;code is\n <b>482913</b> &amp; expires soon.</p>"
        '<a href="https://app.test/secret-path">Open the app</a></body></html>'
    )
    send(server, html_message(inbox.address, "html only", html))

    for wanted in ("Your code is 482913 & expires", "Open the app"):
        assert subjects(client.messages(inbox.address, text=wanted)) == ["html only"], wanted
    assert client.messages(inbox.address, text="secret-path") == []  # an attribute, not text
    assert client.messages(inbox.address, text="<b>") == []


def test_filters_take_unicode(server: InboxServer, client: TempInboxClient, inbox: Inbox) -> None:
    send(server, make_message(inbox.address, subject="Bestätigung ✓", body="Grüße, 東京\n"))
    send(server, make_message(inbox.address, subject="Bestatigung", body="Grusse\n"))

    assert subjects(client.messages(inbox.address, subject="tätig")) == ["Bestätigung ✓"]
    assert subjects(client.messages(inbox.address, text="東京")) == ["Bestätigung ✓"]
    assert subjects(client.messages(inbox.address, subject="✓", text="Grüße")) == ["Bestätigung ✓"]


def test_a_message_must_pass_every_filter_given(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address, "Reset", "code 1\n", "a@shop.test"))
    send(server, make_message(inbox.address, "Reset", "code 2\n", "b@other.test"))
    send(server, make_message(inbox.address, "Receipt", "code 2\n", "a@shop.test"))
    send(server, make_message(inbox.address, "Reset", "code 2\n", "a@shop.test"))

    found = client.messages(inbox.address, subject="Reset", sender="shop.test", text="code 2")

    assert [(m.subject, m.sender and m.sender.email, m.text) for m in found] == [
        ("Reset", "a@shop.test", "code 2\n")
    ]


def test_an_empty_filter_is_no_filter(
    server: InboxServer, client: TempInboxClient, inbox: Inbox, http: requests.Session
) -> None:
    send_raw(server, inbox.address, b"Subject: no sender\r\n\r\nHello\r\n")
    send(server, make_message(inbox.address, subject="with sender"))
    everything = http.get(f"{server.api_url}/messages/{inbox.address}").content

    empty = {"subject": "", "from": "", "text": ""}
    assert http.get(f"{server.api_url}/messages/{inbox.address}", params=empty).content == (
        everything
    )
    assert len(client.messages(inbox.address, subject="", sender="", text="")) == 2


def test_filters_apply_to_the_messages_after_the_cursor(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    for subject in ("Reset 1", "Other", "Reset 2"):
        send(server, make_message(inbox.address, subject=subject))
    first = client.messages(inbox.address)[0]

    found = client.messages(inbox.address, after=first.id, subject="Reset")

    assert subjects(found) == ["Reset 2"]


def test_a_filtered_answer_holds_the_same_objects_as_the_unfiltered_one(
    server: InboxServer, api: str, address: str, http: requests.Session
) -> None:
    send(server, make_message(address, subject="keep"))
    send(server, html_message(address, "drop", "<p>other</p>"))
    send(server, make_message(address, subject="keep too"))
    everything = http.get(f"{api}/messages/{address}").json()

    filtered = http.get(f"{api}/messages/{address}", params={"subject": "keep"}).json()

    assert filtered == [everything[0], everything[2]]


def test_a_filtered_wait_outlasts_a_delivery_it_does_not_want(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    unwanted = make_message(inbox.address, subject="Weekly newsletter")
    wanted = make_message(inbox.address, subject="Reset your password")

    started = time.monotonic()
    with sending_later(server, (0.2, unwanted), (0.6, wanted)):
        found = client.messages(inbox.address, wait=20, subject="Reset")

    assert subjects(found) == ["Reset your password"]
    assert time.monotonic() - started < 10
    assert len(client.messages(inbox.address)) == 2


def test_a_filtered_wait_answers_at_once_when_a_message_passes_already(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address, subject="Reset your password"))

    started = time.monotonic()
    found = client.messages(inbox.address, wait=20, subject="Reset")

    assert subjects(found) == ["Reset your password"]
    assert time.monotonic() - started < 5


def test_a_filtered_wait_answers_an_empty_list_when_time_is_up(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address, subject="Weekly newsletter"))

    started = time.monotonic()
    assert client.messages(inbox.address, wait=0.5, subject="Reset") == []
    assert time.monotonic() - started >= 0.45


def test_a_filtered_wait_ends_with_404_when_the_inbox_is_deleted(
    client: TempInboxClient, inbox: Inbox
) -> None:
    timer = threading.Timer(0.3, inbox.delete)
    timer.start()
    try:
        with pytest.raises(InboxNotFound):
            client.messages(inbox.address, wait=20, subject="never")
    finally:
        timer.join()


def test_a_filtered_wait_awaited_lets_the_loop_run(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    async def main() -> tuple[list[str], int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        with sending_later(
            server,
            (0.2, make_message(inbox.address, subject="Weekly newsletter")),
            (0.5, make_message(inbox.address, subject="Reset")),
        ):
            found = await client.messages_async(inbox.address, wait=20, subject="Reset")
        ticker.cancel()
        return subjects(found), ticks

    found, ticks = asyncio.run(main())

    assert found == ["Reset"]
    assert ticks >= 3


def test_a_large_message_is_filtered_off_the_callers_thread_when_awaited(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    body = ("A line of a large report, wrapped.\n" * (INLINE_PARSE_BYTES // 30)) + "The end.\n"
    send(server, make_message(inbox.address, subject="report", body=body))

    found = asyncio.run(client.messages_async(inbox.address, text="wrapped. The end."))

    assert subjects(found) == ["report"]


def test_a_filter_of_1000_characters_is_taken_and_of_1001_refused(
    client: TempInboxClient, inbox: Inbox
) -> None:
    assert client.messages(inbox.address, text="x" * MAX_FILTER_LENGTH) == []
    too_long = "x" * (MAX_FILTER_LENGTH + 1)
    calls: dict[str, Callable[[], object]] = {
        "subject": lambda: client.messages(inbox.address, subject=too_long),
        "from": lambda: client.messages(inbox.address, sender=too_long),
        "text": lambda: client.messages(inbox.address, text=too_long),
    }
    for name, call in calls.items():
        with pytest.raises(InvalidRequest, match=f"{name} may hold at most 1000 characters"):
            call()


def test_a_filter_value_is_checked_before_the_inbox(api: str, http: requests.Session) -> None:
    response = http.get(f"{api}/messages/nobody@tempinbox.test", params={"from": "x" * 1001})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"


def test_the_client_sends_strings_only(client: TempInboxClient, inbox: Inbox) -> None:
    import re

    with pytest.raises(TypeError, match="strings only"):
        client.messages(inbox.address, subject=re.compile("x"))  # type: ignore[arg-type]


def test_unknown_query_parameters_are_still_ignored(
    server: InboxServer, api: str, address: str, http: requests.Session
) -> None:
    send(server, make_message(address, subject="Reset"))

    response = http.get(f"{api}/messages/{address}", params={"subject": "Reset", "sender": "x"})

    assert response.status_code == 200
    assert subjects(response.json()) == ["Reset"]


def test_both_transports_give_the_same_filtered_answer(server: InboxServer, address: str) -> None:
    send(server, make_message(address, subject="Reset ✓", sender="a@shop.test"))
    send(server, make_message(address, subject="Other"))
    params = {"subject": "Reset", "from": "SHOP", "text": "Hi  there."}
    local = server.local_transport()
    with TempInboxClient(server.api_url) as over_http:
        for query in (params, {**params, "wait": "1"}, {"text": "y" * 1001}):
            by_http = over_http.transport.request(
                "GET", f"/messages/{address}", params=query, timeout=10
            )
            by_local = local.request("GET", f"/messages/{address}", params=query, timeout=10)
            assert by_local == by_http


# --- what the server keeps, and the hot path --------------------------------------------


def test_a_read_without_filters_computes_no_facets(
    server: InboxServer, client: TempInboxClient, inbox: Inbox
) -> None:
    send(server, make_message(inbox.address, subject="plain"))

    client.messages(inbox.address)
    client.messages(inbox.address, wait=1)

    (stored,) = server.store.messages(inbox.address)
    assert stored.is_parsed
    assert not stored.has_facets


def test_facets_are_the_same_from_the_parse_and_from_the_json() -> None:
    raw = (
        b"From: Shop <Billing@Shop.test>\r\nSubject: Caf\xc3\xa9\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/html; charset=utf-8\r\n\r\n<p>Hello\r\n <i>there</i></p>\r\n"
    )
    store = Store()
    inbox = store.generate()
    fresh, parsed_first = (store.deliver("a@b.test", [inbox.address], raw)[0] for _ in range(2))
    assert parsed_first.json  # its facets now come from the JSON

    expected = ("Café", "Billing@Shop.test", ("Hello there",))
    assert fresh.facets() == parsed_first.facets() == expected
    assert fresh.is_parsed  # the facets brought the JSON along
    # The same JSON but for what each delivery has of its own: its id, its arrival.
    mine = ("id", "received_at")
    assert {k: v for k, v in json.loads(fresh.json).items() if k not in mine} == {
        k: v for k, v in json.loads(parsed_first.json).items() if k not in mine
    }


def test_messages_now_hops_to_the_loop_for_a_large_unfiltered_parse_only_with_a_limit() -> None:
    store = Store()
    inbox = store.generate()
    big = b"Subject: big\r\n\r\n" + b"x" * INLINE_PARSE_BYTES + b"\r\n"
    store.deliver("a@b.test", [inbox.address], big)

    assert messages_now(store, inbox.address, None, None, 1024, subject="big") is None
    reply = messages_now(store, inbox.address, None, None, None, subject="big")
    assert reply is not None
    assert subjects(json.loads(reply.body)) == ["big"]


# --- the store's filtered wait ---------------------------------------------------------


def _subject_is(wanted: str) -> Any:
    async def select(found: list[StoredMessage]) -> list[StoredMessage]:
        return [message for message in found if message.facets()[0] == wanted]

    return select


def test_store_wait_with_select_goes_on_past_what_it_drops() -> None:
    store = Store()
    inbox = store.generate()

    async def main() -> list[StoredMessage]:
        waiting = asyncio.create_task(
            store.wait(inbox.address, timeout=30, select=_subject_is("yes"))
        )
        await asyncio.sleep(0.05)
        store.deliver("a@b.test", [inbox.address], b"Subject: no\r\n\r\n.\r\n")
        await asyncio.sleep(0.05)
        assert not waiting.done()
        store.deliver("a@b.test", [inbox.address], b"Subject: yes\r\n\r\n.\r\n")
        return await asyncio.wait_for(waiting, 5)

    found = asyncio.run(main())

    assert [message.facets()[0] for message in found] == ["yes"]


def test_store_wait_with_select_looks_at_each_message_once() -> None:
    store = Store()
    inbox = store.generate()
    seen: list[str] = []

    async def select(found: list[StoredMessage]) -> list[StoredMessage]:
        seen.extend(message.id for message in found)
        return []

    async def main() -> list[StoredMessage]:
        waiting = asyncio.create_task(store.wait(inbox.address, timeout=0.5, select=select))
        for _ in range(3):
            await asyncio.sleep(0.05)
            store.deliver("a@b.test", [inbox.address], b"Subject: no\r\n\r\n.\r\n")
        return await waiting

    assert asyncio.run(main()) == []
    assert seen == [message.id for message in store.messages(inbox.address)]


def test_a_wait_ends_with_404_when_its_address_is_created_again_meanwhile() -> None:
    store = Store()
    address = store.generate(address="seed@tempinbox.test").address

    async def main(select: Any) -> None:
        waiting = asyncio.create_task(store.wait(address, timeout=30, select=select))
        await asyncio.sleep(0.05)
        with store._lock:  # deleted and made again before the wait resumes
            store.delete(address)
            store.generate(address=address)
        with pytest.raises(InboxNotFound):
            await asyncio.wait_for(waiting, 5)
        store.delete(address)
        store.generate(address=address)

    asyncio.run(main(None))
    asyncio.run(main(_subject_is("x")))


# --- the server and the Python filters agree -------------------------------------------

_WORDS = st.sampled_from(["Reset", "reset", "your", "Ünïcode", "code", "  ", "\n", "<b>", "&amp;"])
_PHRASES = st.lists(_WORDS, max_size=6).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    subject=_PHRASES,
    body=_PHRASES,
    html=st.booleans(),
    wanted_subject=st.one_of(st.none(), _PHRASES),
    wanted_text=st.one_of(st.none(), _PHRASES),
    wanted_sender=st.sampled_from([None, "", "shop", "SHOP.test", "Shop <", "nobody"]),
)
def test_the_server_keeps_what_the_python_filters_keep(
    subject: str,
    body: str,
    html: bool,
    wanted_subject: str | None,
    wanted_text: str | None,
    wanted_sender: str | None,
) -> None:
    store = Store()
    inbox = store.generate()
    message = EmailMessage()
    message["From"] = "Shop <Billing@Shop.test>"
    message["Subject"] = subject.replace("\n", " ")  # a header holds no line break
    message.set_content(f"<p>{body}</p>" if html else body, subtype="html" if html else "plain")
    store.deliver("a@b.test", [inbox.address], message.as_bytes())
    reply = messages_now(
        store,
        inbox.address,
        None,
        None,
        subject=wanted_subject,
        sender=wanted_sender,
        text=wanted_text,
    )
    assert reply is not None
    parsed = Message.from_json(json.loads(store.messages(inbox.address)[0].json))

    expected = (
        (not wanted_subject or subject_matches(wanted_subject, parsed.subject))
        and (
            not wanted_sender
            or sender_matches(wanted_sender, None if parsed.sender is None else parsed.sender.email)
        )
        and (
            not wanted_text or text_matches(wanted_text, searchable_text(parsed.text, parsed.html))
        )
    )
    assert len(json.loads(reply.body)) == int(expected)
