"""Filters on the server: ``GET /api/messages/{email}?subject=&from=&text=``.

The rules are :mod:`pytest_tempinbox.parsing.match`'s, so the server and the Python
filters mean the same; these tests hold the server to them through the Python
client over both transports.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
import requests

from pytest_tempinbox.client.http import Inbox, TempInboxClient
from pytest_tempinbox.errors import InboxNotFound, InvalidRequest
from pytest_tempinbox.limits import MAX_FILTER_LENGTH
from pytest_tempinbox.server.api.endpoints import INLINE_PARSE_BYTES
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import TIMER_SLACK, make_message, send
from .filters_support import html_message, send_raw, sending_later, subjects

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
    assert time.monotonic() - started >= 0.45 - TIMER_SLACK


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
