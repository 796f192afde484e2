"""The Redis store's pipelined connection (``store/redis/connection.py``), on a real redis-server.

Every test talks to a real ``redis-server`` (:class:`~tests.redis_process.RedisProcess`)
on a loopback ephemeral port, never to a mock: round trips and their order,
scripts and Redis losing its script cache, the URL's password, database and TLS
(with a ``trustme`` CA), Redis refusing, stopping, freezing, running out of
memory and killing a subscriber, and :meth:`RedisConnection.close`. The tests
needing a server of their own (a password, TLS, a stop, a freeze) start a
private one; the others use the session's, emptied for each test. Each test runs
its coroutine with :func:`asyncio.run` and closes every connection it opens.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_tempinbox.errors import StoreUnavailable

from ..redis_process import RedisProcess, RedisTls

redis = pytest.importorskip("redis", reason="the redis extra is not installed")
pytest.importorskip("hiredis", reason="the redis extra is not installed")

from pytest_tempinbox.server.store.redis.connection import (  # noqa: E402
    RedisConnection,
    RedisReplyError,
    Script,
)

T = TypeVar("T")

TIMEOUT = 30.0
"""Seconds a test's coroutine may take before it counts as hung."""


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``main()`` on a new loop, failing (not hanging) after :data:`TIMEOUT`."""
    return asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def client(url: str) -> Any:
    """A redis-py client: the other client of a test."""
    return redis.Redis.from_url(url)


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def blocked_clients(url: str, count: int) -> None:
    """Return once ``count`` clients of the Redis at ``url`` are blocked (in BLPOP)."""

    def blocked() -> int:
        with client(url) as other:
            return int(other.info("clients")["blocked_clients"])

    while await asyncio.to_thread(blocked) != count:
        await asyncio.sleep(0.01)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A redis-server of the test's own, which it may stop, start and freeze."""
    process = RedisProcess(tmp_path / "redis")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server whose one port is TLS, with a certificate for 127.0.0.1 from a trustme CA."""
    trustme = pytest.importorskip("trustme", reason="the tls extra is not installed")
    folder = tmp_path_factory.mktemp("redis-tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    files = RedisTls(folder / "cert.pem", folder / "key.pem", folder / "ca.pem")
    cert.cert_chain_pems[0].write_to_path(files.cert_file)
    cert.private_key_pem.write_to_path(files.key_file)
    ca.cert_pem.write_to_path(files.ca_file)
    process = RedisProcess(folder / "redis", tls=files)
    try:
        yield process
    finally:
        process.stop()


# --- round trips ------------------------------------------------------------------------


def test_replies_come_back_as_bytes_int_none_and_lists(redis_url: str) -> None:
    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            assert await connection.call(b"SET", "key", b"v\x00\r\n\xff") == b"OK"
            assert await connection.call(b"GET", "key") == b"v\x00\r\n\xff"
            assert await connection.call(b"INCRBY", "number", 41) == 41
            assert await connection.call(b"GET", "missing") is None
            assert await connection.call(b"RPUSH", "list", "a", b"b", 3) == 3
            assert await connection.call(b"LRANGE", "list", 0, -1) == [b"a", b"b", b"3"]
            assert await connection.call(b"LRANGE", "missing", 0, -1) == []
        finally:
            connection.close()

    run(main)


def test_concurrent_calls_get_their_own_replies_in_order(redis_url: str) -> None:
    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            # Before the connection exists: the 200 callers share its connecting.
            echoes = await asyncio.gather(*(connection.call(b"ECHO", n) for n in range(200)))
            assert echoes == [str(n).encode() for n in range(200)]
            incrs = [connection.call(b"INCR", "counter") for _ in range(200)]
            counts = await asyncio.gather(*incrs)
            assert counts == list(range(1, 201))
        finally:
            connection.close()

    run(main)


# --- scripts ------------------------------------------------------------------------------


def test_a_script_is_sent_whole_when_redis_does_not_have_it(redis_url: str) -> None:
    script = Script("redis.call('SET', ARGV[1], ARGV[2]) return redis.call('INCR', ARGV[3])")

    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            assert await connection.run(script, "key", "value", "runs") == 1
            assert await connection.run(script, "key", "value", "runs") == 2
            await asyncio.to_thread(lambda: client(redis_url).script_flush())  # as a restart does
            assert await connection.run(script, "key", "again", "runs") == 3
            assert await connection.call(b"GET", "key") == b"again"
        finally:
            connection.close()

    with client(redis_url) as other:
        other.script_flush()
        run(main)
        assert other.script_exists(script.sha.decode()) == [True]


def test_a_script_sent_without_waiting_runs_even_when_redis_does_not_have_it(
    redis_url: str,
) -> None:
    script = Script("return redis.call('INCR', ARGV[1])")

    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            assert not connection.send(script, "runs")  # not connected yet: nothing sent
            await connection.call(b"PING")
            assert connection.send(script, "runs")  # NOSCRIPT: sent again whole
            assert connection.send(script, "runs")
            while await connection.call(b"GET", "runs") != b"2":
                await asyncio.sleep(0.001)
            connection.send(Script("return redis.call('NOSUCHCOMMAND')"))  # its error is dropped
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    with client(redis_url) as other:
        other.script_flush()
        run(main)


def test_an_error_of_a_script_is_a_reply_error(redis_url: str) -> None:
    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            with pytest.raises(RedisReplyError, match="boom"):
                await connection.run(Script("return redis.error_reply('boom')"))
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    run(main)


# --- what the URL says -------------------------------------------------------------------


def test_the_password_of_the_url_logs_in(tmp_path: Path) -> None:
    process = RedisProcess(tmp_path / "redis", password="secret")
    try:
        port = process.port
        assert process.url == f"redis://:secret@127.0.0.1:{port}/0"

        async def main() -> None:
            for url in (process.url, f"redis://default:secret@127.0.0.1:{port}/0"):
                connection = RedisConnection(url)
                try:
                    assert await connection.call(b"SET", "key", "value") == b"OK"
                    assert await connection.call(b"GET", "key") == b"value"
                finally:
                    connection.close()
            wrong = RedisConnection(f"redis://:wrong@127.0.0.1:{port}/0")
            try:
                with pytest.raises(StoreUnavailable, match="AUTH"):
                    await wrong.call(b"PING")
            finally:
                wrong.close()

        run(main)
    finally:
        process.stop()


def test_the_database_of_the_url_is_selected(redis_url: str) -> None:
    assert redis_url.endswith("/0")
    db3 = redis_url[: -len("/0")] + "/3"

    async def main() -> None:
        connection = RedisConnection(db3)
        try:
            assert await connection.call(b"SET", "in-three", "yes") == b"OK"
        finally:
            connection.close()

    run(main)
    with client(db3) as three, client(redis_url) as zero:
        assert three.get("in-three") == b"yes"
        assert zero.get("in-three") is None


def test_rediss_with_the_ca_of_the_url(tls_redis: RedisProcess) -> None:
    assert tls_redis.tls is not None
    url = f"{tls_redis.url}?ssl_ca_certs={tls_redis.tls.ca_file}"

    async def main() -> None:
        connection = RedisConnection(url)
        try:
            assert await connection.call(b"SET", "key", "over tls") == b"OK"
            assert await connection.call(b"GET", "key") == b"over tls"
        finally:
            connection.close()

    run(main)


def test_rediss_without_the_ca_is_refused(tls_redis: RedisProcess) -> None:
    async def main() -> None:
        connection = RedisConnection(tls_redis.url)  # verified against the system's CAs
        try:
            with pytest.raises(StoreUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
                await connection.call(b"PING")
        finally:
            connection.close()

    run(main)


def test_rediss_unverified_needs_no_ca(tls_redis: RedisProcess) -> None:
    async def main() -> None:
        connection = RedisConnection(f"{tls_redis.url}?ssl_cert_reqs=none")
        try:
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    run(main)


def test_rediss_checks_the_host_name_unless_told_not_to(tls_redis: RedisProcess) -> None:
    assert tls_redis.tls is not None
    # The certificate names 127.0.0.1, not localhost.
    url = f"rediss://localhost:{tls_redis.port}/0?ssl_ca_certs={tls_redis.tls.ca_file}"

    async def main() -> None:
        checked = RedisConnection(url)
        unchecked = RedisConnection(f"{url}&ssl_check_hostname=false")
        try:
            with pytest.raises(StoreUnavailable, match="localhost"):
                await checked.call(b"PING")
            assert await unchecked.call(b"PING") == b"PONG"
        finally:
            checked.close()
            unchecked.close()

    run(main)


# --- Redis away ---------------------------------------------------------------------------


def test_nothing_listening_is_unavailable_at_once() -> None:
    async def main() -> None:
        connection = RedisConnection(f"redis://127.0.0.1:{closed_port()}/0")
        try:
            for _ in range(2):
                started = time.monotonic()
                with pytest.raises(StoreUnavailable, match="cannot connect"):
                    await connection.call(b"PING")
                assert time.monotonic() - started < 1.5  # refused, not timed out (2 s)
        finally:
            connection.close()

    run(main)


def test_redis_stopped_between_commands_then_started_again(
    private_redis: RedisProcess,
) -> None:
    async def main() -> None:
        connection = RedisConnection(private_redis.url)
        try:
            assert await connection.call(b"PING") == b"PONG"
            await asyncio.to_thread(private_redis.stop)
            for _ in range(2):
                with pytest.raises(StoreUnavailable):
                    await connection.call(b"PING")
            await asyncio.to_thread(private_redis.start)
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    run(main)


def test_redis_stopped_with_a_command_pending_then_started_again(
    private_redis: RedisProcess,
) -> None:
    async def main() -> None:
        connection = RedisConnection(private_redis.url)
        try:
            pending = asyncio.create_task(connection.call(b"BLPOP", "nothing", 0))
            await blocked_clients(private_redis.url, 1)
            await asyncio.to_thread(private_redis.stop)
            with pytest.raises(StoreUnavailable):
                await pending
            await asyncio.to_thread(private_redis.start)
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    run(main)


def test_a_frozen_redis_is_unavailable_after_the_reply_timeout(
    private_redis: RedisProcess,
) -> None:
    async def main() -> None:
        connection = RedisConnection(private_redis.url, reply_timeout=0.3)
        try:
            assert await connection.call(b"PING") == b"PONG"
            os.kill(private_redis.pid, signal.SIGSTOP)
            try:
                started = time.monotonic()
                with pytest.raises(StoreUnavailable, match=r"no reply within 0\.3 s"):
                    await connection.call(b"PING")
                assert 0.25 <= time.monotonic() - started < 5
            finally:
                os.kill(private_redis.pid, signal.SIGCONT)
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    run(main)


# --- Redis refusing ----------------------------------------------------------------------


def test_an_error_reply_is_a_reply_error_and_the_connection_goes_on(redis_url: str) -> None:
    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            await connection.call(b"SET", "word", "abc")
            with pytest.raises(RedisReplyError, match="not an integer"):
                await connection.call(b"INCR", "word")
            with pytest.raises(RedisReplyError, match="unknown command"):
                await connection.call(b"NO-SUCH-COMMAND")
            assert await connection.call(b"GET", "word") == b"abc"
        finally:
            connection.close()

    run(main)


def test_redis_out_of_memory_is_unavailable(redis_url: str) -> None:
    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            with pytest.raises(StoreUnavailable, match="OOM"):
                await connection.call(b"SET", "key", "value")
            assert await connection.call(b"GET", "key") is None  # reads go on
        finally:
            connection.close()

    with client(redis_url) as other:
        policy = other.config_get("maxmemory-policy")["maxmemory-policy"]
        other.config_set("maxmemory-policy", "noeviction")
        other.config_set("maxmemory", 1)
        try:
            run(main)
        finally:
            other.config_set("maxmemory", 0)
            other.config_set("maxmemory-policy", policy)


# --- subscribing and closing ---------------------------------------------------------------


def test_a_subscription_gets_messages_until_redis_kills_it(redis_url: str) -> None:
    async def main() -> None:
        received: asyncio.Queue[bytes] = asyncio.Queue()
        connection = RedisConnection(redis_url)
        try:
            await connection.subscribe("notices", received.put_nowait)
            with client(redis_url) as other:
                for data in (b"one", b"two\x00\r\n\xff"):
                    assert await asyncio.to_thread(other.publish, "notices", data) == 1
                    assert await asyncio.wait_for(received.get(), 5) == data
                assert await asyncio.to_thread(other.publish, "elsewhere", b"x") == 0
                killed = await asyncio.to_thread(
                    other.execute_command, "CLIENT", "KILL", "TYPE", "pubsub"
                )
                assert killed == 1
            await asyncio.wait_for(connection.wait_closed(), 5)
            assert received.empty()
        finally:
            connection.close()

    run(main)


def test_close_fails_a_pending_call_and_the_next_call_connects_again(redis_url: str) -> None:
    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            pending = asyncio.create_task(connection.call(b"BLPOP", "nothing", 0))
            await blocked_clients(redis_url, 1)
            connection.close()
            with pytest.raises(StoreUnavailable, match="closing"):
                await pending
            await connection.wait_closed()
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    run(main)


def test_close_while_connecting_fails_the_waiting_call(redis_url: str) -> None:
    async def main() -> None:
        connection = RedisConnection(redis_url)
        try:
            waiting = asyncio.create_task(connection.call(b"PING"))
            await asyncio.sleep(0)  # the call is now waiting for the connection
            connection.close()
            with pytest.raises(StoreUnavailable):
                await waiting
            assert await connection.call(b"PING") == b"PONG"
        finally:
            connection.close()

    run(main)
