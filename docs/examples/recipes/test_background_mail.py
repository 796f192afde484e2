"""Applications that send mail after answering: a FastAPI background task, a thread pool.

The mail leaves some time after the request returns, so reading the inbox
right away may find nothing, and a ``time.sleep`` long enough for a slow CI
machine slows every run. ``tempinbox.wait_for_message`` waits exactly as long
as the mail takes: the server answers its long-poll the moment the mail
arrives.

The FastAPI app runs under uvicorn on a real port, as in production, so its
background task really runs after the response was sent (an in-process test
client would wait for the task before returning the response).
"""

from __future__ import annotations

import smtplib
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage

import httpx
import pytest
import uvicorn
from fastapi import BackgroundTasks, FastAPI

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def send_mail(smtp_host: str, smtp_port: int, to: str, subject: str, body: str) -> None:
    """Send one text mail through smtplib, as the applications below do."""
    message = EmailMessage()
    message["From"] = "orders@shop.test"
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    with smtplib.SMTP(smtp_host, smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


def create_app(smtp_host: str, smtp_port: int) -> FastAPI:
    """A FastAPI app that answers an order at once and mails the receipt afterwards."""
    app = FastAPI()

    @app.post("/orders")
    def place_order(email: str, background: BackgroundTasks) -> dict[str, str]:
        order = "A-1042"
        body = f"Thank you! Your order {order} is on its way."
        background.add_task(send_mail, smtp_host, smtp_port, email, f"Receipt for {order}", body)
        return {"order": order}

    return app


@pytest.fixture
def app_url(tempinbox_server: TempInboxServer) -> Iterator[str]:
    """The app, sending to the session's inbox server, served by uvicorn in a thread."""
    app = create_app(tempinbox_server.smtp_host, tempinbox_server.smtp_port)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    listener = socket.create_server(("127.0.0.1", 0))  # listening already: no wait for startup
    port = listener.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join()  # uvicorn closes the listener


def test_a_background_task_mails_the_receipt(tempinbox: Inbox, app_url: str) -> None:
    """The receipt that a background task sends arrives after the order is answered."""
    response = httpx.post(f"{app_url}/orders", params={"email": tempinbox.address})
    assert response.json() == {"order": "A-1042"}

    message = tempinbox.wait_for_message(subject="Receipt for A-1042")

    assert message.text == "Thank you! Your order A-1042 is on its way.\n"


class Mailer:
    """Sends mail from a pool of threads, so that callers never wait for the SMTP server."""

    def __init__(self, smtp_host: str, smtp_port: int, delay: float = 0.0) -> None:
        self.smtp_host = smtp_host
        self.smtp_port = smtp_port
        self.delay = delay  # stands in for a queue that is slow to drain
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mailer")

    def send_later(self, to: str, subject: str, body: str) -> None:
        """Queue a mail and return at once."""
        self.pool.submit(self._send, to, subject, body)

    def _send(self, to: str, subject: str, body: str) -> None:
        time.sleep(self.delay)
        send_mail(self.smtp_host, self.smtp_port, to, subject, body)

    def close(self) -> None:
        """Wait for the queued mail to be sent, then stop the threads."""
        self.pool.shutdown(wait=True)


@pytest.fixture
def mailer(tempinbox_server: TempInboxServer) -> Iterator[Mailer]:
    """The application's mailer, sending to the session's inbox server half a second late."""
    mailer = Mailer(tempinbox_server.smtp_host, tempinbox_server.smtp_port, delay=0.5)
    yield mailer
    mailer.close()


def test_a_thread_pool_mails_the_reminder(tempinbox: Inbox, mailer: Mailer) -> None:
    """The reminder queued on the pool arrives; the test waits for it, it does not sleep."""
    started = time.monotonic()
    mailer.send_later(tempinbox.address, "Your cart misses you", "Come back for 10% off.")

    message = tempinbox.wait_for_message(subject="cart", timeout=5)

    assert message.text == "Come back for 10% off.\n"
    assert time.monotonic() - started >= mailer.delay  # it really was sent late
