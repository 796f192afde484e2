"""An application that sends through Amazon SES with boto3, tested against the server."""

from __future__ import annotations

import boto3

from pytest_tempinbox import Inbox, InboxServer


def test_boto3_sesv2(tempinbox: Inbox, tempinbox_server: InboxServer) -> None:
    """boto3's SES v2 client, given the server's provider URL as its endpoint_url."""
    # --8<-- [start:ses]
    ses = boto3.client(
        "sesv2",  # or "ses", SES v1's query API: the same endpoint_url
        endpoint_url=tempinbox_server.provider_url("ses"),
        region_name="us-east-1",
        aws_access_key_id="AKIATEST",  # any key: requests are never signature-checked
        aws_secret_access_key="any",
    )
    ses.send_email(
        FromEmailAddress="app@example.com",
        Destination={"ToAddresses": [tempinbox.address]},
        Content={"Template": {"TemplateName": "welcome", "TemplateData": '{"name": "Ada"}'}},
        ConfigurationSetName="transactional",
    )

    message = tempinbox.wait_for_message()
    assert message.provider is not None
    assert message.provider.template_id == "welcome"
    assert message.provider.template_data == {"name": "Ada"}
    assert message.provider.options["ConfigurationSetName"] == "transactional"
    assert message.provider.options["access_key_id"] == "AKIATEST"
    # --8<-- [end:ses]
