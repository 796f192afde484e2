"""A wait that saw no mail says why: refusals, Django's outbox, a blocked loop, the SMTP port."""

from __future__ import annotations

import contextlib
import json
import shutil
import smtplib
import subprocess
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

import pytest
import requests

from pytest_tempinbox.client.explain import django_line
from pytest_tempinbox.client.http import Inbox, TempInboxClient
from pytest_tempinbox.errors import WaitTimeout
from pytest_tempinbox.server.in_process import LocalTransport
from pytest_tempinbox.server.inbox_server import InboxServer
from pytest_tempinbox.server.store.refusals import RefusalLog, similarity
from pytest_tempinbox.transport import Answer

from ..helpers import CLIENT_NAME, make_message, send

# A test whose application sends to an unrelated address and, as with Django's
# fail_silently=True, swallows the refusal.
SWALLOWED_INVOICE = """
import contextlib
import smtplib


def test_invoice(tempinbox, tempinbox_server):
    host, port = tempinbox_server.smtp_host, tempinbox_server.smtp_port
    with contextlib.suppress(smtplib.SMTPException):
        with smtplib.SMTP(host, port) as smtp:
            smtp.sendmail("app@example.com", ["billing@example.com"], b"Subject: Invoice")
    tempinbox.wait_for_message(subject="Invoice", timeout=0.2)
"""


def misspelt(address: str) -> str:
    """The address with the first two letters of its local part swapped (or, when they
    are the same letter, the first one changed), as a typing slip makes it."""
    if address[0] == address[1]:
        return ("x" if address[0] != "x" else "y") + address[1:]
    return address[1] + address[0] + address[2:]


def refuse(server: InboxServer, address: str) -> None:
    """Send to ``address`` and check that the server refuses it with 550 at RCPT."""
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        send(server, make_message(address, "Welcome"))
    assert refused.value.recipients[address][0] == 550


class Recording:
    """A transport that notes each request's method and path, and passes it on."""

    def __init__(self, transport: LocalTransport) -> None:
        self.transport = transport
        self.in_process = getattr(transport, "in_process", False)
        self.requests: list[str] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        self.requests.append(f"{method} {path.split('/')[1]}")
        return self.transport.request(method, path, params=params, body=body, timeout=timeout)

    async def request_async(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float,
    ) -> Answer:
        self.requests.append(f"{method} {path.split('/')[1]}")
        return await self.transport.request_async(
            method, path, params=params, body=body, timeout=timeout
        )

    def close(self) -> None:
        self.transport.close()


@pytest.fixture
def recording(server: InboxServer) -> Recording:
    return Recording(server.local_transport())


@pytest.fixture
def client(server: InboxServer, recording: Recording) -> TempInboxClient:
    return TempInboxClient(server.api_url, transport=recording)


# The refusal log, without a server.


def test_a_refusal_is_remembered_with_its_client() -> None:
    log = RefusalLog()
    log.record("alcie@tempinbox.test", "not a live generated address", "127.0.0.1", "app.test")
    (refusal,) = log.find()
    assert (refusal.address, refusal.client_ip, refusal.helo) == (
        "alcie@tempinbox.test",
        "127.0.0.1",
        "app.test",
    )
    assert refusal.reply == "not a live generated address"


def test_the_log_keeps_only_its_newest_refusals() -> None:
    log = RefusalLog(capacity=3)
    for number in range(5):
        log.record(f"user{number}@tempinbox.test", "refused", None, None)
    assert [refusal.address for refusal in log.find()] == [
        "user4@tempinbox.test",
        "user3@tempinbox.test",
        "user2@tempinbox.test",
    ]


def test_the_log_forgets_refusals_older_than_its_age() -> None:
    now = datetime(2026, 5, 4, 12, 0, tzinfo=timezone.utc)
    log = RefusalLog(max_age=60, clock=lambda: now)
    log.record("old@tempinbox.test", "refused", None, None)
    now += timedelta(seconds=61)
    log.record("new@tempinbox.test", "refused", None, None)
    assert [refusal.address for refusal in log.find()] == ["new@tempinbox.test"]
    assert len(log) == 1


def test_since_keeps_the_refusals_from_that_time_on() -> None:
    now = datetime(2026, 5, 4, 12, 0, tzinfo=timezone.utc)
    log = RefusalLog(clock=lambda: now)
    log.record("before@tempinbox.test", "refused", None, None)
    created = now = now + timedelta(seconds=1)
    log.record("after@tempinbox.test", "refused", None, None)
    assert [refusal.address for refusal in log.find(since=created)] == ["after@tempinbox.test"]


def test_similar_refusals_come_most_similar_first() -> None:
    log = RefusalLog()
    for address in ("alice@other.test", "zq81@tempinbox.test", "alcie@tempinbox.test"):
        log.record(address, "refused", None, None)
    found = log.find(similar_to="Alice@tempinbox.test")
    assert [refusal.address for refusal in found] == ["alice@other.test", "alcie@tempinbox.test"]
    assert [refusal.similarity for refusal in found] == [0.896, 0.85]


def test_two_generated_addresses_of_one_domain_are_not_alike() -> None:
    assert similarity("k3v9x0q2m7tb1@tempinbox.test", "p8w2hz5c0da4n2@tempinbox.test") < 0.6
    assert similarity("k3v9x0q2m7tb1@tempinbox.test", "3kv9x0q2m7tb1@tempinbox.test") > 0.9


# What a failed wait says, against the real server.


def _misspelt_wait(server: InboxServer, client: TempInboxClient) -> tuple[Inbox, list[str]]:
    """An inbox, and the failure of its wait after mail to an address one letter off."""
    inbox = client.generate(prefix="alice")
    refuse(server, misspelt(inbox.address))
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(subject="Welcome", timeout=0.2)
    return inbox, str(failure.value).splitlines()


def test_a_wait_lists_mail_refused_for_a_misspelt_address(
    server: InboxServer, client: TempInboxClient
) -> None:
    inbox, lines = _misspelt_wait(server, client)
    assert lines[:2] == [
        f"no message with subject containing 'Welcome' arrived at {inbox.address} within 0.2 s;",
        "the inbox received no mail at all.",
    ]
    assert lines[2].startswith("the server refused mail while this test ran (since its inbox")
    assert lines[2].endswith(
        "it reached the server, so the host and port (EMAIL_HOST, EMAIL_PORT) are right;"
        " the recipient is not:"
    )
    assert lines[3].startswith(f"  - {misspelt(inbox.address)!r} at ")
    assert lines[3].endswith(
        f" from 127.0.0.1 (EHLO {CLIENT_NAME}): not a live generated address (no inbox has"
        " this address, which is like this inbox's: a typing slip?)"
    )
    assert lines[9] == f"the server takes SMTP at {server.smtp_host}:{server.smtp_port}."


def test_a_wait_shows_the_end_of_the_first_refusal_s_smtp_conversation(
    server: InboxServer, client: TempInboxClient
) -> None:
    inbox, lines = _misspelt_wait(server, client)
    assert lines[4] == "    its SMTP conversation ended:"
    assert all(line[:8] in ("      C:", "      S:") for line in lines[5:9])
    assert lines[7].upper() == f"      C: RCPT TO:<{misspelt(inbox.address).upper()}>"
    assert lines[8] == (
        "      S: 550 5.1.1 Recipient address rejected: not a live generated address"
    )


def test_a_wait_lists_mail_refused_for_an_unrelated_address(
    server: InboxServer, client: TempInboxClient
) -> None:
    inbox = client.generate()
    with contextlib.suppress(smtplib.SMTPRecipientsRefused):  # fail_silently=True
        send(server, make_message("billing@example.com", "Invoice"))
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(timeout=0)
    message = str(failure.value)
    assert "  - 'billing@example.com' at " in message
    assert (
        ": not a live generated address ('example.com' is not one of the server's"
        " domains: tempinbox.test, other.test)" in message
    )
    assert "never reaches it" not in message


def test_a_wait_names_mail_refused_for_an_inbox_the_test_deleted(
    server: InboxServer, client: TempInboxClient
) -> None:
    inbox, gone = client.generate(), client.generate()
    gone.delete()
    with contextlib.suppress(smtplib.SMTPRecipientsRefused):
        send(server, make_message(gone.address, "Welcome"))
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(timeout=0)
    (line,) = [line for line in str(failure.value).splitlines() if line.startswith("  - ")]
    assert gone.address in line
    deleted = client.deleted(gone.address)
    assert deleted is not None
    when = deleted.strftime("%H:%M:%S.%f")[:-3]
    assert line.endswith(f": not a live generated address (its inbox was deleted at {when})")


def test_refusals_on_a_shared_server_may_be_another_process_s(server: InboxServer) -> None:
    with TempInboxClient(server.api_url) as client:  # over HTTP, as an xdist worker
        inbox = client.generate()
        refuse(server, misspelt(inbox.address))
        with pytest.raises(WaitTimeout) as failure:
            inbox.wait_for_message(timeout=0)
    lines = str(failure.value).splitlines()
    assert lines[2].endswith(
        "; other processes share this server (pytest-xdist workers, other runs), so some of"
        " it may be theirs:"
    )
    assert lines[-1] == (
        f"the server takes SMTP at {server.smtp_host}:{server.smtp_port}; if none of these"
        " refusals is this test's mail, check that the application sends there (EMAIL_HOST,"
        " EMAIL_PORT)."
    )


def test_a_wait_without_refusals_points_at_the_host_and_port(client: TempInboxClient) -> None:
    inbox = client.generate()
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(timeout=0)
    assert (
        str(failure.value)
        .splitlines()[-1]
        .endswith("; mail sent to another host or port (EMAIL_HOST, EMAIL_PORT) never reaches it.")
    )


def test_a_wait_shows_five_refusals_and_counts_the_others(
    server: InboxServer, client: TempInboxClient
) -> None:
    inbox = client.generate()
    for number in range(7):
        refuse(server, f"nobody{number}@tempinbox.test")
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(timeout=0)
    lines = [line for line in str(failure.value).splitlines() if not line.startswith("    ")]
    assert [line[:23] for line in lines[3:8]] == [
        f"  - 'nobody{number}@tempinbox.test'"[:23] for number in range(6, 1, -1)
    ]
    assert lines[8] == "  and 2 more"


def test_mail_refused_before_the_inbox_was_made_is_not_listed(
    server: InboxServer, client: TempInboxClient
) -> None:
    early = client.generate(prefix="early")
    refuse(server, misspelt(early.address))
    later = Inbox(early.address, client, created_at=datetime.now(timezone.utc) + timedelta(1))
    with pytest.raises(WaitTimeout) as failure:
        later.wait_for_message(timeout=0)
    assert "refused" not in str(failure.value)


def test_every_wait_explains_itself(server: InboxServer, client: TempInboxClient) -> None:
    inbox = client.generate(prefix="bob")
    refuse(server, misspelt(inbox.address))
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_messages(2, timeout=0)
    assert f"  - {misspelt(inbox.address)!r} at " in str(failure.value)


@pytest.mark.asyncio
async def test_an_awaited_wait_explains_itself(
    server: InboxServer, client: TempInboxClient
) -> None:
    inbox = await client.generate_async(prefix="carol")
    refuse(server, misspelt(inbox.address))
    with pytest.raises(WaitTimeout) as failure:
        await inbox.wait_for_message_async(timeout=0.1)
    message = str(failure.value)
    assert f"  - {misspelt(inbox.address)!r} at " in message
    assert f"the server takes SMTP at {server.smtp_host}:{server.smtp_port}." in message
    assert "blocked a running event loop" not in message
    with pytest.raises(WaitTimeout) as failure:
        await inbox.wait_for_messages_async(1, timeout=0)
    assert "the server takes SMTP at" in str(failure.value)


def test_a_successful_wait_makes_no_request_more(
    server: InboxServer, client: TempInboxClient, recording: Recording
) -> None:
    inbox = client.generate()
    send(server, make_message(inbox.address, "Welcome"))
    recording.requests.clear()
    inbox.wait_for_message(subject="Welcome", timeout=5)
    assert recording.requests == ["GET messages"]


def test_the_server_location_is_asked_for_once(
    client: TempInboxClient, recording: Recording
) -> None:
    inbox = client.generate()
    for _ in range(2):
        with pytest.raises(WaitTimeout):
            inbox.wait_for_message(timeout=0)
    assert recording.requests.count("GET info") == 1
    assert recording.requests.count("GET refused") == 4  # those like the address, and all


def test_a_server_that_cannot_say_leaves_the_failure_as_it_was(server: InboxServer) -> None:
    class Forgetful(Recording):
        def request(self, method: str, path: str, **options: object) -> Answer:
            if path in ("/info", "/refused"):
                return Answer(404, "text/plain", b"no such route")
            return super().request(method, path, **options)  # type: ignore[arg-type]

    client = TempInboxClient(server.api_url, transport=Forgetful(server.local_transport()))
    inbox = client.generate()
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(timeout=0)
    assert str(failure.value).splitlines()[1:] == ["the inbox received no mail at all."]


def test_the_failure_names_what_djangos_locmem_backend_kept(
    client: TempInboxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("django")
    from django.core import mail

    inbox = client.generate()
    message = mail.EmailMessage("Welcome", "Hi", "app@example.com", [f"Ada <{inbox.address}>"])
    monkeypatch.setattr(mail, "outbox", [message], raising=False)
    with pytest.raises(WaitTimeout) as failure:
        inbox.wait_for_message(timeout=0)
    assert (
        "Django's locmem backend kept 1 message(s) for this address (django.core.mail.outbox):"
        " the mail never reached SMTP; point Django's EMAIL_BACKEND (MAILERS on Django 6.1)"
        " at the SMTP backend"
        " (see the tempinbox_django fixture)."
    ) in str(failure.value).splitlines()


def test_djangos_outbox_is_read_as_the_server_reads_addresses_on_every_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("django")
    from django.core import mail

    # A display name that is an address: getaddresses() in its strict mode
    # (Python 3.13, 3.12.6, ...) reads this as no address at all.
    to = "ada@example.test <ada@tempinbox.test>"
    message = mail.EmailMessage("Welcome", "Hi", "app@example.com", [to])
    monkeypatch.setattr(mail, "outbox", [message], raising=False)
    assert django_line("ada@tempinbox.test") is not None


def test_without_django_imported_there_is_no_django_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(__import__("sys").modules, "django.core.mail", raising=False)
    assert django_line("anyone@tempinbox.test") is None


# GET /api/refused, over HTTP.


def test_the_refused_route_lists_similar_refusals(
    server: InboxServer, address: str, http: requests.Session
) -> None:
    created = datetime.now(timezone.utc) - timedelta(seconds=1)
    refuse(server, misspelt(address))
    params = {"similar_to": address, "since": created.isoformat()}
    response = http.get(server.api_url + "/refused", params=params)
    assert response.status_code == 200
    # Most similar first: other tests' refusals of this second may follow it.
    refusal = response.json()[0]
    assert refusal["address"] == misspelt(address)
    assert refusal["reply"] == "not a live generated address"
    assert (refusal["client_ip"], refusal["helo"]) == ("127.0.0.1", CLIENT_NAME)
    assert 0.8 < refusal["similarity"] <= 1
    assert datetime.fromisoformat(refusal["at"].replace("Z", "+00:00")) >= created


def test_the_refused_route_newest_first_without_similar_to(
    server: InboxServer, address: str, http: requests.Session
) -> None:
    refuse(server, "first-" + address)
    refuse(server, "second-" + address)
    response = http.get(server.api_url + "/refused", params={"limit": "2"})
    assert [item["address"] for item in response.json()] == [
        "second-" + address,
        "first-" + address,
    ]
    assert "similarity" not in response.json()[0]


@pytest.mark.parametrize(
    "params",
    [{"limit": "0"}, {"limit": "1001"}, {"limit": "two"}, {"since": "yesterday"}],
    ids=["limit-0", "limit-1001", "limit-word", "since-word"],
)
def test_the_refused_route_refuses_bad_parameters(
    server: InboxServer, http: requests.Session, params: dict[str, str]
) -> None:
    response = http.get(server.api_url + "/refused", params=params)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_refused_route_answers_curl(server: InboxServer, address: str) -> None:
    refuse(server, misspelt(address))
    command = ["curl", "-s", "-G", server.api_url + "/refused"]
    command += ["--data-urlencode", f"similar_to={address}"]
    answer = subprocess.run(command, capture_output=True, check=True, timeout=30)
    assert json.loads(answer.stdout)[0]["address"] == misspelt(address)


# The plugin, as users meet it.


def test_the_plugin_shows_a_misspelt_address_and_where_smtp_is(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import smtplib
        from email.message import EmailMessage

        import pytest


        def test_welcome(tempinbox_factory, tempinbox_server):
            inbox = tempinbox_factory(address="alice@tempinbox.test")
            message = EmailMessage()
            message["From"] = "app@example.com"
            message["To"] = "alcie@tempinbox.test"
            message["Subject"] = "Welcome"
            message.set_content("Hi")
            host, port = tempinbox_server.smtp_host, tempinbox_server.smtp_port
            with smtplib.SMTP(host, port, local_hostname="app.example") as smtp:
                with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
                    smtp.send_message(message)
            assert refused.value.recipients["alcie@tempinbox.test"][0] == 550
            inbox.wait_for_message(subject="Welcome", timeout=0.2)
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    header = (
        "the server refused mail while this test ran (since its inbox was made at ??:??:??.???):"
        " it reached the server, so the host and port (EMAIL_HOST, EMAIL_PORT) are right;"
        " the recipient is not:"
    )
    refused = (
        "  - 'alcie@tempinbox.test' at ??:??:??.??? from 127.0.0.1 (EHLO app.example): not a"
        " live generated address (no inbox has this address, which is like this inbox's:"
        " a typing slip?)"
    )
    where = "the server takes SMTP at 127.0.0.1:*."
    result.stdout.fnmatch_lines(
        [
            "E       pytest_tempinbox.errors.WaitTimeout: no message with subject containing"
            " 'Welcome' arrived at alice@tempinbox.test within 0.2 s;",
            "E       the inbox received no mail at all.",
            f"E       {header}",
            f"E       {refused}",
            f"E       {where}",
            "*- tempinbox -*",
            "alice@tempinbox.test: 0 message(s)",
            f"  {header}",
            f"  {refused}",
            where,
        ]
    )
    assert "never reaches it" not in result.stdout.str()


def test_the_plugin_names_mail_swallowed_for_an_unrelated_address(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(SWALLOWED_INVOICE)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       the inbox received no mail at all.",
            "E       the server refused mail while this test ran*the recipient is not:",
            "E         - 'billing@example.com' at * not a live generated address ('example.com'"
            " is not one of the server's domains: tempinbox.test)",
        ]
    )
    assert "EMAIL_PORT) never reaches it" not in result.stdout.str()


def test_the_plugin_shows_what_djangos_locmem_backend_kept(pytester: pytest.Pytester) -> None:
    pytest.importorskip("django")
    pytester.makeconftest(
        """
        import django
        from django.conf import settings

        settings.configure(
            EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
            DEFAULT_FROM_EMAIL="app@example.com",
        )
        django.setup()
        """
    )
    pytester.makepyfile(
        """
        from django.core.mail import send_mail


        def test_welcome(tempinbox):
            send_mail("Welcome", "Hi", None, [tempinbox.address])
            tempinbox.wait_for_message(subject="Welcome", timeout=0.2)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    kept = (
        "Django's locmem backend kept 1 message(s) for this address (django.core.mail.outbox):"
        " the mail never reached SMTP; point Django's EMAIL_BACKEND (MAILERS on Django 6.1)"
        " at the SMTP backend"
        " (see the tempinbox_django fixture)."
    )
    result.stdout.fnmatch_lines(
        [
            "E       the inbox received no mail at all.",
            f"E       {kept}",
            "E       the server takes SMTP at *",
            "*- tempinbox -*",
            "*@tempinbox.test: 0 message(s)",
            f"  {kept}",
        ]
    )


def test_the_plugin_names_the_awaitable_twin_of_a_wait_that_blocks_the_loop(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import asyncio
        import smtplib
        from email.message import EmailMessage

        import pytest


        async def send_welcome(host, port, to):
            await asyncio.sleep(0)
            message = EmailMessage()
            message["From"] = "app@example.com"
            message["To"] = to
            message["Subject"] = "Welcome"
            message.set_content("Hi")
            with smtplib.SMTP(host, port, local_hostname="app.example") as smtp:
                smtp.send_message(message)


        @pytest.mark.asyncio
        async def test_welcome(tempinbox, tempinbox_server):
            host, port = tempinbox_server.smtp_host, tempinbox_server.smtp_port
            task = asyncio.create_task(send_welcome(host, port, tempinbox.address))
            try:
                tempinbox.wait_for_message(subject="Welcome", timeout=0.3)
            finally:
                await task
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "--asyncio-mode=strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E   *pytest_tempinbox.errors.WaitTimeout: no message with subject containing"
            " 'Welcome' arrived at *@tempinbox.test within 0.3 s;",
            "E   *the inbox received no mail at all.",
            "E   *wait_for_message() blocked a running event loop (an async def test?): mail"
            " sent by a task on that loop could not go out while it waited; use await"
            " inbox.wait_for_message_async(...).",
            "E   *the server takes SMTP at *",
        ]
    )


def test_under_xdist_refusals_are_said_to_be_maybe_another_worker_s(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(SWALLOWED_INVOICE)
    result = pytester.runpytest("-p", "no:randomly", "-p", "xdist", "-n", "2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       the server refused mail while this test ran (since its inbox was made at *);"
            " other processes share this server (pytest-xdist workers, other runs), so some of"
            " it may be theirs:",
            "E         - 'billing@example.com' at *",
            "E       the server takes SMTP at *; if none of these refusals is this test's mail,"
            " check that the application sends there (EMAIL_HOST, EMAIL_PORT).",
        ]
    )


def test_the_report_names_mail_sent_to_an_inbox_the_test_deleted_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import contextlib
        import smtplib


        def test_welcome(tempinbox, tempinbox_factory, tempinbox_server):
            gone = tempinbox_factory(prefix="gone")
            gone.delete()
            host, port = tempinbox_server.smtp_host, tempinbox_server.smtp_port
            with contextlib.suppress(smtplib.SMTPException):
                with smtplib.SMTP(host, port) as smtp:
                    smtp.sendmail("app@example.com", [gone.address], b"Subject: Welcome")
            tempinbox.wait_for_message(subject="Welcome", timeout=0.2)
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    deleted = (
        "  - 'gone-*@tempinbox.test' at * not a live generated address (its inbox was deleted at *)"
    )
    result.stdout.fnmatch_lines(
        [
            f"E       {deleted}",
            "*- tempinbox -*",
            "*@tempinbox.test: 0 message(s)",
            "  the server refused mail while this test ran*",
            f"  {deleted}",
            "gone-*@tempinbox.test: could not be read (no inbox at *)",
            "the server takes SMTP at 127.0.0.1:*.",
        ]
    )
    # Up to pytest's short summary, which on CI (CI set) repeats the whole failure message.
    report = result.stdout.str().split("- tempinbox -")[1].split("short test summary info")[0]
    assert report.count("its inbox was deleted at") == 1
