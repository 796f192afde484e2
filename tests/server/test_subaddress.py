"""Sub-addresses: mail to ``name+detail@domain`` reaches the live inbox ``name@domain``.

RFC 5233's ``+`` separator, as sign-up tests use it (``user+1@``, ``user+2@``):
the message records the detail it came through (``subaddress``), and every read
and wait can filter by it on the server. Over real sockets, with the memory
store and a real Redis.
"""

from __future__ import annotations

import smtplib
from collections.abc import Iterator

import pytest
import requests

from pytest_tempinbox.client.http import TempInboxClient
from pytest_tempinbox.errors import InboxNotFound, InvalidAddress, InvalidRequest, WaitTimeout
from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import CLIENT_NAME, RawSMTP, make_message, send
from .events_support import Events


@pytest.fixture(params=["memory", "redis"])
def plus_server(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A server of its own, with the memory store and with a real Redis."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(store=store, hostname="mx.tempinbox.test") as server:
        yield server


@pytest.fixture
def plus_client(plus_server: InboxServer) -> Iterator[TempInboxClient]:
    """A client of :func:`plus_server`."""
    with TempInboxClient(plus_server.api_url) as client:
        yield client


def plus(address: str, detail: str) -> str:
    """``name+detail@domain`` for ``address`` ``name@domain``."""
    local, _, domain = address.rpartition("@")
    return f"{local}+{detail}@{domain}"


def send_to_a_and_b(server: InboxServer, address: str) -> None:
    """Send "to a" to ``name+a@`` and "to b" to ``name+b@`` of ``address``."""
    for detail in ("a", "b"):
        send(server, make_message(plus(address, detail), subject=f"to {detail}"))


def test_mail_to_a_sub_address_reaches_the_inbox_and_records_its_detail(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()

    send(plus_server, make_message(plus(inbox.address, "signup"), subject="welcome"))

    (message,) = inbox.messages()
    assert message.inbox == inbox.address
    assert message.subaddress == "signup"
    assert message.envelope.rcpt_to == (plus(inbox.address, "signup"),)


def test_mail_to_the_address_itself_has_no_subaddress(
    plus_server: InboxServer, plus_client: TempInboxClient, http: requests.Session
) -> None:
    inbox = plus_client.generate()

    send(plus_server, make_message(inbox.address))

    (message,) = http.get(f"{plus_server.api_url}/messages/{inbox.address}").json()
    assert message["subaddress"] is None


def test_a_sub_address_keeps_its_detail_lowercased_and_whole(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()
    name, _, domain = inbox.address.upper().rpartition("@")

    send(plus_server, make_message(f"{name}+Tag+More@{domain}"))
    send(plus_server, make_message(f"{name}+@{domain}"))

    assert [message.subaddress for message in inbox.messages()] == ["tag+more", ""]


def test_each_user_of_a_signup_test_is_read_apart(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()
    for user in ("1", "2", "3"):
        send(plus_server, make_message(plus(inbox.address, user), subject=f"welcome {user}"))

    second = inbox.wait_for_message(subaddress="2", timeout=5)
    listed = plus_client.messages(inbox.address, subaddress="3")

    assert second.subject == "welcome 2"
    assert [message.subject for message in listed] == ["welcome 3"]
    assert len(inbox.wait_for_messages(1, subaddress="1", timeout=5)) == 1
    inbox.assert_no_message(subaddress="4", within=0.2)


def test_the_subaddress_filter_is_applied_by_the_server(
    plus_server: InboxServer, plus_client: TempInboxClient, http: requests.Session
) -> None:
    inbox = plus_client.generate()
    send_to_a_and_b(plus_server, inbox.address)
    url = f"{plus_server.api_url}/messages/{inbox.address}"

    kept = http.get(url, params={"subaddress": "B"}).json()
    every = http.get(url, params={"subaddress": ""}).json()

    assert [message["subject"] for message in kept] == ["to b"]
    assert len(every) == 2


def test_a_long_poll_filtered_by_subaddress_waits_for_that_one(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()
    send(plus_server, make_message(plus(inbox.address, "other"), subject="not this"))

    with smtplib.SMTP(plus_server.smtp_host, plus_server.smtp_port, CLIENT_NAME) as smtp:
        smtp.send_message(make_message(plus(inbox.address, "me"), subject="this one"))
        (message,) = plus_client.messages(inbox.address, wait=5, subaddress="me")

    assert message.subject == "this one"


@pytest.mark.asyncio
async def test_the_async_waits_filter_by_subaddress(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = await plus_client.generate_async()
    send(plus_server, make_message(plus(inbox.address, "x"), subject="to x"))

    found = await inbox.wait_for_message_async(subaddress="x", timeout=5)
    listed = await plus_client.messages_async(inbox.address, subaddress="y")

    assert found.subject == "to x"
    assert listed == []
    await inbox.assert_no_message_async(subaddress="y", within=0.2)


def test_a_wait_for_another_subaddress_times_out_listing_what_came(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()
    send(plus_server, make_message(plus(inbox.address, "1"), subject="welcome"))

    with pytest.raises(WaitTimeout) as failed:
        inbox.wait_for_message(subaddress="2", timeout=0.3)

    assert "no message with subaddress '2'" in str(failed.value)
    assert "'welcome' (to sub-address '1')" in str(failed.value)


def test_assert_no_message_fails_on_the_subaddress_it_names(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()
    send(plus_server, make_message(plus(inbox.address, "spam"), subject="offer"))

    with pytest.raises(AssertionError, match="expected no message with subaddress 'spam'"):
        inbox.assert_no_message(subaddress="spam", within=0.2)


def test_one_delivery_to_several_sub_addresses_is_stored_once_with_the_first(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()
    to = [plus(inbox.address, "first"), inbox.address, plus(inbox.address, "second")]

    send(plus_server, make_message(inbox.address), to=to)

    (message,) = inbox.messages()
    assert message.subaddress == "first"
    assert message.envelope.rcpt_to == tuple(to)


def test_a_sub_address_of_no_live_inbox_is_refused_and_remembered(
    plus_server: InboxServer, plus_client: TempInboxClient
) -> None:
    inbox = plus_client.generate()
    inbox.delete()
    smtp = RawSMTP(plus_server.smtp_host, plus_server.smtp_port)
    try:
        assert smtp.command(f"EHLO {CLIENT_NAME}")[0] == 250
        assert smtp.command("MAIL FROM:<app@example.test>")[0] == 250
        code, text = smtp.command(f"RCPT TO:<{plus(inbox.address, 'x')}>")
    finally:
        smtp.close()

    assert (code, text) == (550, "5.1.1 Recipient address rejected: not a live generated address")
    refused = [refusal.address for refusal in plus_client.refused()]
    assert plus(inbox.address, "x") in refused


def test_a_sub_address_in_a_path_is_no_inbox_and_says_which_to_read(
    plus_server: InboxServer, plus_client: TempInboxClient, http: requests.Session
) -> None:
    inbox = plus_client.generate()

    response = http.get(f"{plus_server.api_url}/messages/{plus(inbox.address, 'x')}")

    assert response.status_code == 404
    detail = response.json()["detail"]
    assert f"it is a sub-address of {inbox.address!r}" in detail
    assert "subaddress='x'" in detail
    with pytest.raises(InboxNotFound, match="sub-address"):
        plus_client.delete(plus(inbox.address, "x"))
    assert inbox.messages() == []  # the inbox itself is untouched


def test_the_event_stream_filters_by_subaddress(
    plus_server: InboxServer, plus_client: TempInboxClient, http: requests.Session
) -> None:
    inbox = plus_client.generate()
    send_to_a_and_b(plus_server, inbox.address)
    events = Events(
        http,
        f"{plus_server.api_url}/events/{inbox.address}",
        params={"subaddress": "b", "after": "0" * 20},
    )
    try:
        id, data = events.next_message()
    finally:
        events.close()

    assert data["subject"] == "to b"
    assert data["subaddress"] == "b"
    assert id == inbox.messages()[1].id


@pytest.mark.parametrize("prefix", ["shop+1", "+", "a+"])
def test_a_prefix_with_a_plus_is_refused_saying_why(
    plus_client: TempInboxClient, prefix: str
) -> None:
    with pytest.raises(InvalidRequest, match=r"holds '\+'.*sub-address"):
        plus_client.generate(prefix=prefix)


def test_a_chosen_address_with_a_plus_is_refused_saying_why(
    plus_client: TempInboxClient,
) -> None:
    with pytest.raises(InvalidAddress, match=r"holds '\+'.*choose name@domain"):
        plus_client.generate(address="alice+shop@tempinbox.test")


def test_a_generated_address_never_holds_a_plus(plus_client: TempInboxClient) -> None:
    addresses = [plus_client.generate(prefix="p").address for _ in range(20)]

    assert not any("+" in address for address in addresses)
