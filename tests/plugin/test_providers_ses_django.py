"""A Django project's SES backends send to the plugin's server: django-ses (v1, v2) and anymail."""

from __future__ import annotations

import pytest

pytest.importorskip("django_ses")
pytest.importorskip("anymail")

CONFTEST = """
import django
from django.conf import settings

settings.configure(DEFAULT_FROM_EMAIL="App <app@example.com>")
django.setup()
"""

SES_TESTS = """
from email.mime.image import MIMEImage

import pytest
from django.core.mail import EmailMultiAlternatives, get_connection
from django.test import override_settings

KEYS = {"AWS_ACCESS_KEY_ID": "AKIATESTKEY", "AWS_SECRET_ACCESS_KEY": "secret"}


@pytest.fixture(params=[False, True], ids=["v1", "v2"])
def django_ses(request, tempinbox_server):
    with override_settings(
        EMAIL_BACKEND="django_ses.SESBackend",
        AWS_SES_REGION_NAME="eu-west-1",
        AWS_SES_REGION_ENDPOINT_URL=tempinbox_server.provider_url("ses"),
        USE_SES_V2=request.param,
        **KEYS,
    ):
        yield "/v2/email/outbound-emails" if request.param else "/?Action=SendRawEmail"


@pytest.fixture
def anymail(tempinbox_server):
    client = {
        "endpoint_url": tempinbox_server.provider_url("ses"),
        "region_name": "eu-west-1",
        "aws_access_key_id": "AKIATESTKEY",
        "aws_secret_access_key": "secret",
    }
    with override_settings(
        EMAIL_BACKEND="anymail.backends.amazon_ses.EmailBackend",
        ANYMAIL={"AMAZON_SES_CLIENT_PARAMS": client},
    ):
        yield


def welcome(*to, **fields):
    message = EmailMultiAlternatives("Welcome", "Your code is 482913", to=list(to), **fields)
    html = '<a href="https://app.test/c">Confirm</a><img src="cid:logo">'
    message.attach_alternative(html, "text/html")
    return message


def test_django_ses_delivers_html_an_attachment_an_inline_image_and_headers(django_ses, tempinbox):
    message = welcome(tempinbox.address, headers={"X-Campaign": "spring"})
    message.attach("report.pdf", b"%PDF-1.4", "application/pdf")
    image = MIMEImage(b"\\x89PNG\\r\\n\\x1a\\n", "png")
    image.add_header("Content-ID", "<logo>")
    image.add_header("Content-Disposition", "inline", filename="logo.png")
    message.attach(image)
    assert message.send() == 1
    arrived = tempinbox.wait_for_message(timeout=10)
    assert arrived.link(text="Confirm") == "https://app.test/c"
    assert arrived.code() == "482913"
    assert arrived.attachment("report.pdf").content() == b"%PDF-1.4"
    assert arrived.attachment("logo.png", inline=True).content_id == "logo"
    assert arrived.headers["x-campaign"] == ("spring",)
    assert (arrived.provider.name, arrived.provider.endpoint) == ("ses", django_ses)
    assert arrived.provider.options["access_key_id"] == "AKIATESTKEY"


def test_django_ses_gives_cc_and_bcc_a_copy(django_ses, tempinbox_factory):
    to, cc, bcc = (tempinbox_factory() for _ in range(3))
    welcome(to.address, cc=[cc.address], bcc=[bcc.address]).send()
    for inbox in (to, cc, bcc):
        assert inbox.wait_for_message(timeout=10).subject == "Welcome"


def test_anymail_delivers_html_an_attachment_and_tags(anymail, tempinbox):
    message = welcome(tempinbox.address)
    message.attach("report.pdf", b"%PDF-1.4", "application/pdf")
    message.tags = ["onboarding"]
    message.send()
    assert message.anymail_status.status == {"queued"}
    arrived = tempinbox.wait_for_message(timeout=10)
    assert arrived.link(text="Confirm") == "https://app.test/c"
    assert arrived.attachment("report.pdf").content() == b"%PDF-1.4"
    assert arrived.provider.endpoint == "/v2/email/outbound-emails"


def test_anymail_sends_a_template_per_recipient_in_one_bulk_request(anymail, tempinbox_factory):
    ada, bob = tempinbox_factory(), tempinbox_factory()
    message = EmailMultiAlternatives(to=[ada.address, bob.address])
    message.template_id = "welcome"
    message.merge_data = {ada.address: {"name": "Ada"}, bob.address: {"name": "Bob"}}
    message.send()
    assert message.anymail_status.status == {"queued"}
    for inbox, name in ((ada, "Ada"), (bob, "Bob")):
        provider = inbox.wait_for_message(timeout=10).provider
        assert provider.endpoint == "/v2/email/outbound-bulk-emails"
        assert (provider.template_id, provider.template_data) == ("welcome", {"name": name})


def test_no_live_recipient_is_an_error_the_backend_raises(django_ses):
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match="MessageRejected"):
        welcome("nobody@tempinbox.test").send()
"""


def test_django_ses_and_anymails_backends_send_to_the_server(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(SES_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=8)
