"""The client's two transports: blocking, and awaited (in-process as it is, HTTP in a thread)."""

from __future__ import annotations

import asyncio
import threading

from pytest_tempinbox.client.http import HTTPTransport, InThread, TempInboxClient
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.transport import Answer, Body, Params, Transport

from ..helpers import make_message, send

LATE = 1.3  # seconds: past the first one-second slice of an awaited long-poll


class Blocking:
    """A transport that only blocks: it notes the thread and the query of each request."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.seen: list[tuple[int, dict[str, str]]] = []

    def request(
        self, method: str, path: str, *, params: Params = None, body: Body = None, timeout: float
    ) -> Answer:
        self.seen.append((threading.get_ident(), dict(params or {})))
        return self.transport.request(method, path, params=params, body=body, timeout=timeout)

    def close(self) -> None:
        self.transport.close()

    def waits(self) -> list[float]:
        return [float(params["wait"]) for _, params in self.seen if "wait" in params]


def send_late(server: InboxServer, address: str) -> threading.Timer:
    timer = threading.Timer(LATE, send, args=(server, make_message(address, subject="late")))
    timer.start()
    return timer


def test_the_in_process_transport_is_awaited_as_it_is(server: InboxServer) -> None:
    local = server.local_transport()
    with TempInboxClient(server.api_url, transport=local) as client:
        assert client.async_transport is local


def test_a_blocking_transport_is_awaited_in_a_worker_thread(server: InboxServer) -> None:
    blocking = Blocking(HTTPTransport(server.api_url))

    async def scenario(client: TempInboxClient) -> int:
        await client.info_async()
        return threading.get_ident()

    with TempInboxClient(server.api_url, transport=blocking) as client:
        assert isinstance(client.async_transport, InThread)
        loop_thread = asyncio.run(scenario(client))
    ((request_thread, _),) = blocking.seen
    assert request_thread != loop_thread


def test_an_awaited_long_poll_in_a_thread_goes_in_slices_of_a_second(server: InboxServer) -> None:
    blocking = Blocking(HTTPTransport(server.api_url))
    with TempInboxClient(server.api_url, transport=blocking) as client:
        inbox = client.generate()
        timer = send_late(server, inbox.address)
        message = asyncio.run(inbox.wait_for_message_async(subject="late", timeout=10))
        timer.join()
    assert message.subject == "late"
    # Sliced, so that a cancelled wait lets go of its thread within a second.
    assert len(blocking.waits()) >= 2
    assert max(blocking.waits()) <= 1.0


def test_a_blocking_long_poll_is_one_request(server: InboxServer) -> None:
    blocking = Blocking(HTTPTransport(server.api_url))
    with TempInboxClient(server.api_url, transport=blocking) as client:
        inbox = client.generate()
        timer = send_late(server, inbox.address)
        message = inbox.wait_for_message(subject="late", timeout=10)
        timer.join()
    assert message.subject == "late"
    assert blocking.waits() == [10.0]
