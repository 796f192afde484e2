"""Filters inside the server: what it keeps, the store's filtered wait, agreement with Python."""

from __future__ import annotations

import asyncio
import json
from email.message import EmailMessage
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tempinbox.client.http import Inbox, TempInboxClient
from pytest_tempinbox.errors import InboxNotFound
from pytest_tempinbox.models import Message
from pytest_tempinbox.parsing.match import (
    searchable_text,
    sender_matches,
    subject_matches,
    text_matches,
)
from pytest_tempinbox.server.api.endpoints import INLINE_PARSE_BYTES
from pytest_tempinbox.server.api.messages import messages_now
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.memory.store import Store, StoredMessage

from ..helpers import make_message, send
from .filters_support import subjects
from .store_support import deliver

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
    fresh, parsed_first = (deliver(store, "a@b.test", [inbox.address], raw)[0] for _ in range(2))
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
    deliver(store, "a@b.test", [inbox.address], big)

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
        await store.deliver("a@b.test", [inbox.address], b"Subject: no\r\n\r\n.\r\n")
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await store.deliver("a@b.test", [inbox.address], b"Subject: yes\r\n\r\n.\r\n")
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
            await store.deliver("a@b.test", [inbox.address], b"Subject: no\r\n\r\n.\r\n")
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
    deliver(store, "a@b.test", [inbox.address], message.as_bytes())
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
