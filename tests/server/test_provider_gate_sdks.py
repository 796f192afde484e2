"""Provider keys and faults on SES (v1 and v2), Postmark, Mailgun and Brevo, through their clients.

The key check and the fault's answer are made once for every provider route
(``server/providers/gate.py``); these tests hold that each of the later
providers answers them in its own shape, read by its real client where the
client is in the test extra (boto3, postmarker), by hand where the shape is
the point (Mailgun's and Brevo's JSON).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import pytest
import requests
from postmarker.core import PostmarkClient

from pytest_tempinbox import Inbox, InboxServer, TempInboxClient

KEYS = {"ses": "AKIDRIGHT", "postmark": "pm-right", "mailgun": "mg-right", "brevo": "br-right"}
SENDER = "app@example.test"
NO_RETRY = botocore.config.Config(retries={"total_max_attempts": 1})

Send = Callable[[InboxServer, str, str], str]


def ses(version: int) -> Send:
    """A boto3 send through SES ``version`` (1: the query API, 2: JSON): the message id or error."""

    def send(server: InboxServer, key: str, to: str) -> str:
        # Either API's client, by name: Any, as their stubs' types differ.
        client: Any = boto3.client(
            "sesv2" if version == 2 else "ses",
            endpoint_url=server.provider_url("ses"),
            region_name="us-east-1",
            aws_access_key_id=key,
            aws_secret_access_key="secret",
            config=NO_RETRY,
        )
        body = {"Subject": {"Data": "Hi"}, "Body": {"Text": {"Data": "Hello"}}}
        try:
            if version == 2:
                answer = client.send_email(
                    FromEmailAddress=SENDER,
                    Destination={"ToAddresses": [to]},
                    Content={"Simple": body},
                )
            else:
                answer = client.send_email(
                    Source=SENDER, Destination={"ToAddresses": [to]}, Message=body
                )
        except botocore.exceptions.ClientError as error:
            status = error.response["ResponseMetadata"]["HTTPStatusCode"]
            return f"{status} {error.response['Error']['Code']}"
        return f"sent {answer['MessageId']}"

    return send


def postmark(server: InboxServer, key: str, to: str) -> str:
    """A postmarker send: ``sent`` or its error's code and status."""
    client = PostmarkClient(server_token=key, root_api_url=server.provider_url("postmark"))
    try:
        client.emails.send(From=SENDER, To=to, Subject="Hi", TextBody="Hello")
    except Exception as error:  # postmarker's ClientError carries the status in its text
        return f"{type(error).__name__} {error}"
    return "sent"


def mailgun(server: InboxServer, key: str, to: str) -> str:
    """A Mailgun form send by hand: the status and body."""
    answer = requests.post(
        server.provider_url("mailgun") + "/v3/example.test/messages",
        auth=("api", key),
        data={"from": SENDER, "to": to, "subject": "Hi", "text": "Hello"},
        timeout=10,
    )
    return f"{answer.status_code} {answer.headers.get('retry-after')} {answer.text}"


def brevo(server: InboxServer, key: str, to: str) -> str:
    """A Brevo send by hand: the status and body."""
    answer = requests.post(
        server.provider_url("brevo") + "/v3/smtp/email",
        headers={"api-key": key},
        json={
            "sender": {"email": SENDER},
            "to": [{"email": to}],
            "subject": "Hi",
            "textContent": "x",
        },
        timeout=10,
    )
    return f"{answer.status_code} {answer.headers.get('retry-after')} {answer.text}"


SENDS: dict[str, tuple[Send, str, str]] = {
    # name: (send, what a wrong key gets, what a fault's 429 gets)
    "ses v1": (ses(1), "401 InvalidClientTokenId", "429 Throttling"),
    "ses v2": (ses(2), "401 UnrecognizedClientException", "429 TooManyRequestsException"),
    "postmark": (postmark, "[10]", "[429]"),
    "mailgun": (mailgun, '401 None {"message":', '429 1 {"message":'),
    "brevo": (brevo, '401 None {"code":"unauthorized"', '429 1 {"code":"too_many_requests"'),
}


@pytest.fixture(scope="module")
def keyed() -> Iterator[InboxServer]:
    """A server taking only the keys of :data:`KEYS`."""
    with InboxServer(provider_keys=KEYS) as server:
        yield server


@pytest.fixture
def inbox(keyed: InboxServer) -> Iterator[Inbox]:
    """A fresh inbox of the keyed server, deleted after the test."""
    with TempInboxClient(keyed.api_url) as client:
        inbox = client.generate()
        yield inbox
        inbox.delete()


def provider_key(name: str) -> str:
    """The right key of the provider of send ``name``."""
    return KEYS[name.split()[0]]


@pytest.mark.parametrize("name", SENDS)
def test_the_right_key_sends_and_a_wrong_one_gets_the_providers_refusal(
    keyed: InboxServer, inbox: Inbox, name: str
) -> None:
    send, refused, _ = SENDS[name]
    assert send(keyed, provider_key(name), inbox.address).startswith(("sent", "200", "201"))
    answer = send(keyed, "wrong-key", inbox.address)
    assert refused in answer
    assert "wrong-key" not in answer  # a key is never echoed
    assert len(inbox.messages()) == 1


@pytest.mark.parametrize("name", SENDS)
def test_a_fault_is_the_providers_own_error_and_then_the_send_goes_through(
    keyed: InboxServer, inbox: Inbox, name: str
) -> None:
    send, _, throttled = SENDS[name]
    inbox.fail_next(429)
    assert throttled in send(keyed, provider_key(name), inbox.address)
    send(keyed, provider_key(name), inbox.address)
    assert len(inbox.messages()) == 1


@pytest.mark.parametrize("name", SENDS)
def test_a_disconnect_fault_drops_the_request_unanswered(
    keyed: InboxServer, inbox: Inbox, name: str
) -> None:
    send, _, _ = SENDS[name]
    inbox.disconnect_next()
    try:
        answer = send(keyed, provider_key(name), inbox.address)
    except (requests.ConnectionError, botocore.exceptions.ConnectionClosedError) as error:
        answer = type(error).__name__
    assert "Connection" in answer  # postmarker's own ConnectionError is caught by postmark()
    assert inbox.messages() == []
