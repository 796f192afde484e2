"""A plain function sending with boto3's SES v2 client, tested end to end with no mock of boto3."""

from __future__ import annotations

import boto3

from pytest_tempinbox import Inbox


# --8<-- [start:sender]
def send_receipt(to: str, amount: str) -> str:
    """Mail a receipt through Amazon SES (v2); return SES's message id.

    The client is built as production builds it: boto3 reads its endpoint,
    region and keys from the environment and its configuration files.
    """
    ses = boto3.client("sesv2")
    answer = ses.send_email(
        FromEmailAddress="billing@shop.test",
        Destination={"ToAddresses": [to]},
        Content={
            "Simple": {
                "Subject": {"Data": f"Your receipt: {amount}"},
                "Body": {"Text": {"Data": f"We received {amount}. Receipt code: 734021."}},
            }
        },
        EmailTags=[{"Name": "kind", "Value": "receipt"}],
    )
    message_id: str = answer["MessageId"]
    return message_id


# --8<-- [end:sender]


# --8<-- [start:test]
def test_the_receipt_arrives_with_its_code(
    tempinbox: Inbox, tempinbox_providers: dict[str, str]
) -> None:
    """The receipt sent through SES v2 arrives with its code, SES's record beside it."""
    message_id = send_receipt(tempinbox.address, "12.50 EUR")

    message = tempinbox.wait_for_message(subject="Your receipt: 12.50 EUR")
    assert message.code() == "734021"
    assert message.provider is not None
    assert message.provider.name == "ses"
    assert message.provider.metadata == {"kind": "receipt"}  # SES message tags, by name
    assert message_id


# --8<-- [end:test]
