"""An async test of a FastAPI app that sends its mail from a task on the event loop.

Run by the project's test suite (pytest-asyncio, strict mode). The application
sends with aiosmtplib on the same loop as the test, so the test must wait with
``await tempinbox.wait_for_message_async(...)``: the blocking
``wait_for_message`` would freeze the loop, the mail would never leave, and the
wait would time out.
"""

from __future__ import annotations

import asyncio
from email.message import EmailMessage

import aiosmtplib
import httpx
import pytest
from fastapi import FastAPI

from pytest_tempinbox import Inbox
from pytest_tempinbox.plugin import TempInboxServer


def create_app(smtp_host: str, smtp_port: int) -> FastAPI:
    """The application under test: sign-up answers at once and mails in the background."""
    app = FastAPI()
    outbox: set[asyncio.Task[None]] = set()

    async def send_welcome(to: str) -> None:
        message = EmailMessage()
        message["From"] = "welcome@app.test"
        message["To"] = to
        message["Subject"] = "Welcome to the app"
        message.set_content(f"Confirm your address: https://app.test/confirm?email={to}")
        await aiosmtplib.send(
            message, hostname=smtp_host, port=smtp_port, local_hostname="app.test"
        )

    @app.post("/signup")
    async def signup(email: str) -> dict[str, str]:
        task = asyncio.create_task(send_welcome(email))
        outbox.add(task)
        task.add_done_callback(outbox.discard)
        return {"status": "check your mail"}

    return app


@pytest.mark.asyncio
async def test_signup_sends_a_welcome_mail(
    tempinbox: Inbox, tempinbox_server: TempInboxServer
) -> None:
    """Sign-up answers at once; the welcome mail arrives soon after, with its link."""
    app = create_app(tempinbox_server.smtp_host, tempinbox_server.smtp_port)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app.test") as client:
        response = await client.post("/signup", params={"email": tempinbox.address})
    assert response.json() == {"status": "check your mail"}

    # --8<-- [start:wait]
    message = await tempinbox.wait_for_message_async(subject="Welcome")
    # --8<-- [end:wait]

    assert message.links == (f"https://app.test/confirm?email={tempinbox.address}",)
