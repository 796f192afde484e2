"""``provider_keys``: a keyed provider takes its one key, refusing others in its own words."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests
import resend
from python_http_client.exceptions import UnauthorizedError
from sendgrid import SendGridAPIClient
from sendgrid.helpers.mail import Mail

from pytest_tempinbox import InboxServer, TempInboxClient
from pytest_tempinbox.config import ServerConfig

from .providers_support import answer

KEYS = {"sendgrid": "SG.right-key", "resend": "re_right_key"}
SENDER = "app@example.com"


@pytest.fixture(params=["memory", "redis"])
def keyed(request: pytest.FixtureRequest) -> Iterator[InboxServer]:
    """A server that takes only the keys of :data:`KEYS`, on each store."""
    store = "memory" if request.param == "memory" else request.getfixturevalue("redis_url")
    with InboxServer(store=store, provider_keys=KEYS) as server:
        yield server


@pytest.fixture
def address(keyed: InboxServer) -> str:
    """A fresh address of the keyed server."""
    with TempInboxClient(keyed.api_url) as client:
        return client.generate().address


def sendgrid_send(server: InboxServer, key: str, to: str) -> int:
    """Send through SendGrid's SDK with ``key``; the status."""
    client = SendGridAPIClient(api_key=key, host=server.provider_url("sendgrid"))
    mail = Mail(from_email=SENDER, to_emails=to, subject="Hi", plain_text_content="Hello")
    return int(client.send(mail).status_code)


def resend_send(server: InboxServer, key: str, to: str) -> None:
    """Send through Resend's SDK with ``key``."""
    saved = resend.api_url, resend.api_key
    resend.api_url, resend.api_key = server.provider_url("resend"), key
    try:
        resend.Emails.send({"from": SENDER, "to": to, "subject": "Hi", "text": "Hello"})
    finally:
        resend.api_url, resend.api_key = saved


def raw_send(server: InboxServer, headers: dict[str, str], to: str) -> requests.Response:
    """A SendGrid send by hand, with ``headers``."""
    body = {
        "personalizations": [{"to": [{"email": to}]}],
        "from": {"email": SENDER},
        "subject": "Hi",
        "content": [{"type": "text/plain", "value": "Hello"}],
    }
    url = server.provider_url("sendgrid") + "/v3/mail/send"
    with requests.Session() as session:
        session.trust_env = False
        return session.post(url, json=body, headers=headers, timeout=30)


def test_the_right_sendgrid_key_delivers(keyed: InboxServer, address: str) -> None:
    assert sendgrid_send(keyed, KEYS["sendgrid"], address) == 202


def test_a_wrong_sendgrid_key_is_sendgrids_401_and_delivers_nothing(
    keyed: InboxServer, address: str
) -> None:
    with pytest.raises(UnauthorizedError) as raised:
        sendgrid_send(keyed, "SG.wrong", address)
    (error,) = raised.value.to_dict["errors"]
    assert error["message"].startswith("The provided authorization grant is invalid")
    assert "SG.wrong" not in error["message"]
    assert KEYS["sendgrid"] not in error["message"]
    assert (error["field"], error["help"]) == (None, None)
    with TempInboxClient(keyed.api_url) as client:
        assert client.messages(address) == []


def test_no_key_at_all_is_a_401(keyed: InboxServer, address: str) -> None:
    status, body = answer(raw_send(keyed, {}, address))
    assert status == 401
    assert "No API key" in body["errors"][0]["message"]


def test_a_key_of_another_scheme_is_no_key(keyed: InboxServer, address: str) -> None:
    headers = {"Authorization": "Basic " + KEYS["sendgrid"]}
    assert raw_send(keyed, headers, address).status_code == 401


def test_a_wrong_resend_key_is_resends_403_invalid_api_key(
    keyed: InboxServer, address: str
) -> None:
    with pytest.raises(resend.exceptions.InvalidApiKeyError) as raised:
        resend_send(keyed, "re_wrong", address)
    assert str(raised.value.code) == "403"


def test_the_right_resend_key_delivers(keyed: InboxServer, address: str) -> None:
    resend_send(keyed, KEYS["resend"], address)
    with TempInboxClient(keyed.api_url) as client:
        assert [message.subject for message in client.messages(address)] == ["Hi"]


def test_a_provider_without_a_key_takes_any(address: str, keyed: InboxServer) -> None:
    with InboxServer(provider_keys={"resend": "re_only"}) as server:
        with TempInboxClient(server.api_url) as client:
            to = client.generate().address
        assert sendgrid_send(server, "SG.anything", to) == 202


def test_the_keys_are_in_neither_info_nor_repr(keyed: InboxServer) -> None:
    with requests.Session() as session:
        session.trust_env = False
        info = session.get(keyed.api_url + "/info", timeout=10).text
    for key in KEYS.values():
        assert key not in info
        assert key not in repr(keyed.config)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("sendgrid", "no '=' given"),
        ("sparkpost=K", "no provider 'sparkpost'"),
        ("resend=", "empty"),
    ],
)
def test_a_bad_provider_key_is_a_value_error(given: str, said: str) -> None:
    from pytest_tempinbox.config import parse_provider_key

    with pytest.raises(ValueError, match=said):
        parse_provider_key(given)


def test_a_config_refuses_a_key_for_an_unknown_provider() -> None:
    with pytest.raises(ValueError, match="no provider 'mandrill'"):
        ServerConfig(provider_keys={"mandrill": "k"})


def test_the_command_line_refuses_a_bad_provider_key_in_one_line() -> None:
    found = subprocess.run(
        [sys.executable, "-m", "pytest_tempinbox", "--provider-key", "sendgrid"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert found.returncode == 2
    assert "argument --provider-key: a provider key is NAME=KEY" in found.stderr
    assert found.stderr.count("error:") == 1
