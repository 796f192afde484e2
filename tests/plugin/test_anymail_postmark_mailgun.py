"""django-anymail's Postmark and Mailgun backends send to the plugin's server, memory and Redis."""

from __future__ import annotations

import pytest

pytest.importorskip("anymail", reason="django-anymail is in the test extra")

CONFTEST = """
import django
import pytest
from django.conf import settings

settings.configure(DEFAULT_FROM_EMAIL="App <app@example.com>", ANYMAIL={})
django.setup()


@pytest.fixture
def backend(tempinbox_server):
    # The setting and value of docs/providers.md, read when a backend is made.
    settings.ANYMAIL = {
        "POSTMARK_SERVER_TOKEN": "any-token",
        "POSTMARK_API_URL": tempinbox_server.provider_url("postmark"),
        "MAILGUN_API_KEY": "key-any",
        "MAILGUN_API_URL": tempinbox_server.provider_url("mailgun") + "/v3",
    }
    from django.core.mail import get_connection

    return lambda name: get_connection(f"anymail.backends.{name}.EmailBackend")
"""

SENDS = """
import pytest
from anymail.message import AnymailMessage

PNG = b"\\x89PNG\\r\\n\\x1a\\n fake"


@pytest.mark.parametrize("esp", ["postmark", "mailgun"])
def test_text_html_attachment_inline_headers_cc_bcc(esp, backend, tempinbox_client):
    to, cc, bcc = (tempinbox_client.generate() for _ in range(3))
    message = AnymailMessage(
        subject="Welcome",
        body="Your code is 482913",
        to=[to.address],
        cc=[cc.address],
        bcc=[bcc.address],
        reply_to=["help@example.com"],
        headers={"X-Entity-Ref-ID": "123"},
        tags=["welcome"],
        metadata={"user": "42"},
        connection=backend(esp),
    )
    cid = message.attach_inline_image(PNG, "logo.png")
    message.attach_alternative(
        f'<a href="https://app.test/confirm">Confirm</a><img src="cid:{cid}">', "text/html"
    )
    message.attach("report.pdf", b"%PDF-1.4", "application/pdf")
    message.send()
    assert message.anymail_status.status == {"sent" if esp == "postmark" else "queued"}
    got = to.wait_for_message(timeout=10)
    assert got.link(text="Confirm") == "https://app.test/confirm"
    assert got.code() == "482913"
    assert got.headers["x-entity-ref-id"] == ("123",)
    assert [address.email for address in got.reply_to] == ["help@example.com"]
    assert got.attachment("report.pdf").content() == b"%PDF-1.4"
    # Mailgun names an inline file by its cid: its file name is lost on the way.
    inline = "logo.png" if esp == "postmark" else cid
    assert got.attachment(inline, inline=True).content() == PNG
    assert got.provider.name == esp
    assert got.provider.tags == ("welcome",)
    assert got.provider.metadata == {"user": "42"}
    for inbox in (cc, bcc):
        assert inbox.wait_for_message(timeout=10).subject == "Welcome"


@pytest.mark.parametrize("esp", ["postmark", "mailgun"])
def test_a_template_send(esp, backend, tempinbox):
    message = AnymailMessage(to=[tempinbox.address], connection=backend(esp))
    message.template_id = "welcome"
    message.merge_global_data = {"name": "Ada"}
    message.send()
    got = tempinbox.wait_for_message(timeout=10)
    assert got.provider.template_id == "welcome"
    if esp == "postmark":
        assert got.provider.template_data == {"name": "Ada"}


@pytest.mark.parametrize("esp", ["postmark", "mailgun"])
def test_a_batch_send_with_merge_data(esp, backend, tempinbox_client):
    ada, bob = tempinbox_client.generate(), tempinbox_client.generate()
    message = AnymailMessage(
        subject="Hi", to=[ada.address, bob.address], connection=backend(esp)
    )
    if esp == "postmark":
        message.template_id = "welcome"
    else:
        message.subject = "Hi %recipient.name%"
        message.body = "Dear %recipient.name%"
    message.merge_data = {ada.address: {"name": "Ada"}, bob.address: {"name": "Bob"}}
    message.send()
    for inbox, name in ((ada, "Ada"), (bob, "Bob")):
        got = inbox.wait_for_message(timeout=10)
        assert [address.email for address in got.to] == [inbox.address]
        if esp == "postmark":
            assert got.provider.template_data == {"name": name}
        else:
            assert got.subject == f"Hi {name}"


@pytest.mark.parametrize("esp", ["postmark", "mailgun"])
def test_no_live_recipient_is_refused(esp, backend):
    from anymail.exceptions import AnymailAPIError, AnymailRecipientsRefused

    message = AnymailMessage(
        subject="x", body="y", to=["nobody@tempinbox.test"], connection=backend(esp)
    )
    with pytest.raises(AnymailRecipientsRefused if esp == "postmark" else AnymailAPIError):
        message.send()
"""


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_anymails_postmark_and_mailgun_backends_deliver(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, store: str
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(SENDS)
    arguments = ["-p", "no:django", "-p", "no:randomly"]
    if store == "redis":
        arguments += ["--tempinbox-store", request.getfixturevalue("redis_url")]
    pytester.runpytest_subprocess(*arguments).assert_outcomes(passed=8)
