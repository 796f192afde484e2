"""A retrying sender, tested against an address that fails on purpose.

The sender stands in for an application's mail code: it retries a temporary
failure (a 4xx reply, a dropped connection, a timeout) with exponential backoff,
and gives up at once on a permanent one (a 5xx reply). Each test injects the
failures with ``fail_next``, ``delay_next`` and ``disconnect_next``, so it
knows exactly what the server will do, and asserts what the sender did: how
many attempts, which pauses, and that the mail arrived once, or not at all.
"""

from __future__ import annotations

import smtplib
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage

import pytest

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


class PermanentFailure(Exception):
    """The server refused the mail for good (a 5xx reply): retrying will not help."""

    def __init__(self, code: int, error: Exception) -> None:
        super().__init__(f"refused with {code}: {error}")
        self.code = code


class GaveUp(Exception):
    """Every attempt failed temporarily."""


@dataclass
class RetryingSender:
    """Sends a message over SMTP, retrying temporary failures with exponential backoff.

    After failed attempt ``n`` (from 1) it waits ``backoff * 2 ** (n - 1)``
    seconds, through ``sleep``, which a test replaces to record the pauses
    instead of taking them. ``timeout`` bounds each SMTP command's answer.
    """

    host: str
    port: int
    attempts: int = 4
    backoff: float = 0.5
    timeout: float = 10.0
    sleep: Callable[[float], None] = time.sleep

    def send(self, message: EmailMessage) -> int:
        """Send ``message``; return how many attempts it took.

        Raises :class:`PermanentFailure` on a 5xx reply and :class:`GaveUp`
        when every attempt failed temporarily.
        """
        for attempt in range(1, self.attempts + 1):
            try:
                with smtplib.SMTP(
                    self.host, self.port, local_hostname="localhost", timeout=self.timeout
                ) as smtp:
                    smtp.send_message(message)
                return attempt
            except smtplib.SMTPRecipientsRefused as refused:
                code, _ = next(iter(refused.recipients.values()))
                error: Exception = refused
            except smtplib.SMTPResponseException as answered:  # MAIL or DATA refused
                code, error = answered.smtp_code, answered
            except OSError as lost:  # dropped, timed out (smtplib's errors are OSErrors too)
                code, error = 0, lost
            if code >= 500:
                raise PermanentFailure(code, error) from error
            if attempt == self.attempts:
                raise GaveUp(f"{self.attempts} attempts failed; the last: {error}") from error
            self.sleep(self.backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable")


def receipt(to: str) -> EmailMessage:
    """The mail the application sends."""
    message = EmailMessage()
    message["From"] = "orders@shop.test"
    message["To"] = to
    message["Subject"] = "Your receipt"
    message.set_content("Thank you for your order A-1042.")
    return message


@pytest.fixture
def pauses() -> list[float]:
    """The pauses the sender took, in seconds, recorded instead of slept."""
    return []


@pytest.fixture
def sender(tempinbox_server: TempInboxServer, pauses: list[float]) -> RetryingSender:
    """The sender, pointed at the test server, recording its pauses."""
    return RetryingSender(
        tempinbox_server.smtp_host, tempinbox_server.smtp_port, sleep=pauses.append
    )


def test_a_temporary_failure_is_retried_with_backoff(
    tempinbox: Inbox, sender: RetryingSender, pauses: list[float]
) -> None:
    """Two 451s at RCPT: the third attempt delivers, after pauses of 0.5 and 1 s."""
    tempinbox.fail_next(451, "4.7.1 greylisted, try again later", times=2)

    assert sender.send(receipt(tempinbox.address)) == 3

    assert pauses == [0.5, 1.0]
    assert len(tempinbox.messages()) == 1
    assert tempinbox.faults() == []


def test_a_temporary_failure_at_data_is_retried(
    tempinbox: Inbox, sender: RetryingSender, pauses: list[float]
) -> None:
    """A 452 to the message text: the message was stored nowhere, and the retry delivers it once."""
    tempinbox.fail_next(452, "4.3.1 insufficient system storage", stage="data")

    assert sender.send(receipt(tempinbox.address)) == 2

    assert pauses == [0.5]
    assert len(tempinbox.messages()) == 1


def test_a_permanent_failure_is_not_retried(
    tempinbox: Inbox, sender: RetryingSender, pauses: list[float]
) -> None:
    """A 550 at RCPT: one attempt, no pause, nothing delivered."""
    tempinbox.fail_next(550, "5.1.1 no such user")

    with pytest.raises(PermanentFailure) as failure:
        sender.send(receipt(tempinbox.address))

    assert failure.value.code == 550
    assert pauses == []
    assert tempinbox.messages() == []


def test_the_sender_gives_up_after_its_attempts(
    tempinbox: Inbox, sender: RetryingSender, pauses: list[float]
) -> None:
    """Four attempts, four 451s: it gives up; the server had more refusals in store."""
    tempinbox.fail_next(451, times=10)

    with pytest.raises(GaveUp):
        sender.send(receipt(tempinbox.address))

    assert pauses == [0.5, 1.0, 2.0]
    assert tempinbox.faults()[0].times == 6  # 10, less the 4 attempts made
    assert tempinbox.messages() == []


def test_a_slow_server_times_out_and_is_retried(
    tempinbox: Inbox, sender: RetryingSender, pauses: list[float]
) -> None:
    """The first DATA answer takes 3 s; the sender gives up on it after 0.5 s and tries again.

    The server stores a delayed message only if the client is still there when
    the delay ends: the retry's copy is the only one.
    """
    tempinbox.delay_next(3.0)
    sender.timeout = 0.5

    started = time.monotonic()
    assert sender.send(receipt(tempinbox.address)) == 2

    assert time.monotonic() - started < 3.0  # it did not wait for the slow answer
    assert pauses == [0.5]
    assert len(tempinbox.messages()) == 1


def test_a_dropped_connection_is_retried(
    tempinbox: Inbox, sender: RetryingSender, pauses: list[float]
) -> None:
    """The connection drops after the message text, nothing stored; the retry delivers."""
    tempinbox.disconnect_next()

    assert sender.send(receipt(tempinbox.address)) == 2

    assert pauses == [0.5]
    assert len(tempinbox.messages()) == 1
