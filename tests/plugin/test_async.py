"""Async tests as users write them: pytest-asyncio (strict and auto) and anyio, via pytester."""

from __future__ import annotations

import signal

import pytest

from ..helpers import Standalone

SENDER = """
import asyncio
from email.message import EmailMessage

import aiosmtplib
import pytest


async def send_welcome_later(server, to):
    # The application under test: it sends from a task on the test's own loop.
    await asyncio.sleep(0.2)
    message = EmailMessage()
    message["From"] = "app@example.com"
    message["To"] = to
    message["Subject"] = "Welcome aboard"
    message.set_content("code 482913")
    await aiosmtplib.send(
        message, hostname=server.smtp_host, port=server.smtp_port, local_hostname="client.test"
    )
"""

BODY = """
    sender = asyncio.create_task(send_welcome_later(tempinbox_server, tempinbox.address))
    message = await tempinbox.wait_for_message_async(subject="Welcome", timeout=10)
    await sender
    assert message.codes == ("482913",)

{marker}
async def test_cancelling_the_wait_ends_it(tempinbox):
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(tempinbox.wait_for_message_async(timeout=30), 0.2)
"""


def user_file(marker: str) -> str:
    head = f"\n{marker}\nasync def test_signup(tempinbox, tempinbox_server):"
    return SENDER + head + BODY.format(marker=marker)


def test_pytest_asyncio_strict_mode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(user_file("@pytest.mark.asyncio"))
    result = pytester.runpytest("-p", "asyncio", "-o", "asyncio_mode=strict")
    result.assert_outcomes(passed=2)


def test_pytest_asyncio_auto_mode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(user_file(""))
    result = pytester.runpytest("-p", "asyncio", "-o", "asyncio_mode=auto")
    result.assert_outcomes(passed=2)


def test_anyio_with_the_asyncio_backend(pytester: pytest.Pytester) -> None:
    conftest = '@pytest.fixture\ndef anyio_backend():\n    return "asyncio"\n'
    pytester.makeconftest("import pytest\n\n" + conftest)
    pytester.makepyfile(user_file("@pytest.mark.anyio"))
    result = pytester.runpytest("-p", "no:asyncio")
    result.assert_outcomes(passed=2)


def test_the_sync_api_would_deadlock_where_the_async_one_does_not(
    pytester: pytest.Pytester,
) -> None:
    # The docs' warning, pinned: the blocking wait freezes the loop the sender needs.
    pytester.makepyfile(
        SENDER
        + """
@pytest.mark.asyncio
async def test_blocking_wait(tempinbox, tempinbox_server):
    asyncio.create_task(send_welcome_later(tempinbox_server, tempinbox.address))
    tempinbox.wait_for_message(subject="Welcome", timeout=1)
"""
    )
    result = pytester.runpytest("-p", "asyncio")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*WaitTimeout: no message with subject containing 'Welcome'*"])


def test_async_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(user_file("@pytest.mark.asyncio"))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "asyncio")
    result.assert_outcomes(passed=2)


def test_async_against_a_standalone_server(pytester: pytest.Pytester) -> None:
    standalone = Standalone("--smtp-port", "0", "--api-port", "0")
    try:
        _, _, api_url = standalone.read_addresses()
        pytester.makepyfile(user_file("@pytest.mark.asyncio"))
        result = pytester.runpytest("-p", "asyncio", "--tempinbox-url", api_url)
        result.assert_outcomes(passed=2)
    finally:
        status, _, stderr = standalone.stop(signal.SIGTERM)
    assert status == 0, stderr
