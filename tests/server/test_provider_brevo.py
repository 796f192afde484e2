"""Brevo's SDK sends to ``provider_url("brevo") + "/v3"``; the mail lands in the inboxes."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from brevo import Brevo
from brevo.core.api_error import ApiError
from brevo.errors import BadRequestError

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.client.inbox import Inbox

from .providers_support import answer, post

SENDER = {"name": "App", "email": "app@example.com"}


@contextmanager
def brevo(server: InboxServer, key: str = "xkeysib-test") -> Iterator[Brevo]:
    """The SDK's client, pointed at ``server``, its connections closed after."""
    with httpx.Client() as client:
        yield Brevo(api_key=key, base_url=server.provider_url("brevo") + "/v3", httpx_client=client)


def send(server: InboxServer, **fields: Any) -> Any:
    """``send_transac_email`` with a sender and ``fields``, not retried; the SDK's answer."""
    with brevo(server) as sdk:
        return sdk.transactional_emails.send_transac_email(
            sender=SENDER, request_options={"max_retries": 0}, **fields
        )


def test_a_send_answers_its_message_id_which_is_the_messages(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    answered = send(
        provider_server,
        to=[{"email": recipient.address, "name": "Ann"}],
        subject="Welcome",
        html_content='<p>Code 482913</p><a href="https://app.test/confirm">Confirm</a>',
        text_content="Your code is 482913",
    )
    message = recipient.wait_for_message(timeout=5)
    assert answered.message_id == message.message_id
    assert message.code() == "482913"
    assert message.link(text="Confirm") == "https://app.test/confirm"
    assert message.provider is not None
    assert (message.provider.name, message.provider.endpoint) == ("brevo", "/v3/smtp/email")


def test_params_fill_in_the_subject_and_bodies(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    send(
        provider_server,
        to=[{"email": recipient.address}],
        subject="Hi {{ params.name }}",
        text_content="Code {{params.code}} for {{ params.user.city }}{{ params.missing }}.",
        params={"name": "Ann", "code": 4821, "user": {"city": "Oslo"}},
    )
    message = recipient.wait_for_message(timeout=5)
    assert message.subject == "Hi Ann"
    assert (message.text or "").strip() == "Code 4821 for Oslo."


def test_message_versions_are_one_message_each_with_their_params(
    provider_server: InboxServer, provider_client: TempInboxClient
) -> None:
    first, second = provider_client.generate(), provider_client.generate()
    answered = send(
        provider_server,
        subject="Code",
        text_content="Your code is {{ params.code }}",
        message_versions=[
            {"to": [{"email": first.address}], "params": {"code": "111111"}},
            {"to": [{"email": second.address}], "params": {"code": "222222"}, "subject": "Yours"},
        ],
    )
    assert answered.message_id is None
    assert len(answered.message_ids) == 2
    one, two = first.wait_for_message(timeout=5), second.wait_for_message(timeout=5)
    assert (one.subject, one.code()) == ("Code", "111111")
    assert (two.subject, two.code()) == ("Yours", "222222")
    assert [one.message_id, two.message_id] == answered.message_ids


def test_cc_bcc_reply_to_tags_and_headers(
    provider_server: InboxServer, provider_client: TempInboxClient
) -> None:
    to, cc, bcc = (provider_client.generate() for _ in range(3))
    send(
        provider_server,
        to=[{"email": to.address}],
        cc=[{"email": cc.address}],
        bcc=[{"email": bcc.address}],
        reply_to={"email": "help@example.com"},
        subject="Hi",
        text_content="Hello",
        tags=["welcome"],
        headers={"X-Campaign": "spring", "X-Mailin-custom": '{"user": 7}'},
    )
    message = to.wait_for_message(timeout=5)
    assert bcc.wait_for_message(timeout=5).subject == "Hi"
    assert cc.wait_for_message(timeout=5).subject == "Hi"
    assert message.headers["reply-to"] == ("help@example.com",)
    assert bcc.address not in str(message.headers)
    assert message.provider is not None
    assert message.provider.tags == ("welcome",)
    assert message.provider.metadata == {"user": 7}
    assert message.provider.headers["X-Campaign"] == "spring"


def test_an_attachment_arrives(provider_server: InboxServer, recipient: Inbox) -> None:
    content = base64.b64encode(b"%PDF-1.4 invoice").decode()
    send(
        provider_server,
        to=[{"email": recipient.address}],
        subject="Invoice",
        text_content="Attached",
        attachment=[{"content": content, "name": "invoice.pdf"}],
    )
    attachment = recipient.wait_for_message(timeout=5).attachment("invoice.pdf")
    assert attachment.content_type == "application/pdf"
    assert attachment.content() == b"%PDF-1.4 invoice"


def test_an_attachment_by_url_is_refused(provider_server: InboxServer, recipient: Inbox) -> None:
    with pytest.raises(BadRequestError) as raised:
        send(
            provider_server,
            to=[{"email": recipient.address}],
            subject="Invoice",
            text_content="Attached",
            attachment=[{"url": "https://example.com/invoice.pdf", "name": "invoice.pdf"}],
        )
    assert raised.value.body["code"] == "invalid_parameter"
    assert "fetches no remote attachment" in raised.value.body["message"]


def test_a_template_send_records_its_id_and_params(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    with brevo(provider_server) as sdk:
        sdk.transactional_emails.send_transac_email(
            template_id=12, to=[{"email": recipient.address}], params={"name": "Ann"}
        )
    message = recipient.wait_for_message(timeout=5)
    assert message.provider is not None
    assert message.provider.template_id == "12"
    assert message.provider.template_data == {"name": "Ann"}


@pytest.mark.parametrize(
    ("fields", "code", "said"),
    [
        ({"subject": "Hi", "text_content": "x"}, "missing_parameter", "to is missing"),
        ({"to": "TO", "text_content": "x"}, "missing_parameter", "subject is missing"),
        ({"to": "TO", "subject": "Hi"}, "missing_parameter", "htmlContent or textContent"),
        (
            {"to": [{"email": "nobody"}], "subject": "Hi", "text_content": "x"},
            "invalid_parameter",
            "email is not valid in to",
        ),
    ],
)
def test_what_brevo_refuses_is_a_400_in_its_shape(
    provider_server: InboxServer, recipient: Inbox, fields: dict[str, Any], code: str, said: str
) -> None:
    if fields.get("to") == "TO":
        fields["to"] = [{"email": recipient.address}]
    with pytest.raises(BadRequestError) as raised:
        send(provider_server, **fields)
    assert raised.value.body["code"] == code
    assert said in raised.value.body["message"]


def test_a_recipient_not_live_is_refused_and_none_live_is_a_400(
    provider_server: InboxServer,
) -> None:
    with pytest.raises(BadRequestError) as raised:
        send(
            provider_server,
            to=[{"email": "ghost@tempinbox.test"}],
            subject="Hi",
            text_content="x",
        )
    assert "ghost@tempinbox.test" in raised.value.body["message"]


@pytest.mark.parametrize(
    "body", [b"{", b"[]", b'{"to": 5}', b'{"messageVersions": [5]}', b"\xff", b"[" * 5000]
)
def test_a_hostile_body_is_a_400_never_a_500(provider_server: InboxServer, body: bytes) -> None:
    status, answered = answer(post(provider_server.provider_url("brevo") + "/v3/smtp/email", body))
    assert status == 400
    assert answered["code"] in ("invalid_parameter", "missing_parameter")


def test_a_wrong_key_is_brevos_401_unauthorized() -> None:
    with (
        InboxServer(provider_keys={"brevo": "xkeysib-right"}) as server,
        brevo(server, "xkeysib-wrong") as sdk,
        pytest.raises(ApiError) as raised,
    ):
        sdk.transactional_emails.send_transac_email(
            sender=SENDER, to=[{"email": "a@tempinbox.test"}], subject="x", text_content="y"
        )
    assert raised.value.status_code == 401
    assert raised.value.body["code"] == "unauthorized"


def test_brevos_sdk_retries_a_500_fault_by_itself(
    provider_server: InboxServer, recipient: Inbox
) -> None:
    recipient.fail_next(500)
    with brevo(provider_server) as sdk:  # its default: two retries
        sdk.transactional_emails.send_transac_email(
            sender=SENDER, to=[{"email": recipient.address}], subject="Hi", text_content="x"
        )
    assert recipient.faults() == []
    assert recipient.wait_for_message(timeout=5).subject == "Hi"
