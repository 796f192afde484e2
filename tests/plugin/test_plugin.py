"""The pytest plugin as users meet it: a user's test file run by pytester."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.server.inbox_server import InboxServer

from ..helpers import Standalone

SIGNUP_TEST = """
import smtplib
from email.message import EmailMessage

def send_welcome(host, port, to):
    message = EmailMessage()
    message["From"] = "app@example.com"
    message["To"] = to
    message["Subject"] = "Welcome aboard"
    message.set_content("Confirm at https://app.test/confirm/abc - code 482913")
    with smtplib.SMTP(host, port, local_hostname="client.test") as smtp:
        smtp.send_message(message)

def test_signup(tempinbox, tempinbox_server):
    send_welcome(tempinbox_server.smtp_host, tempinbox_server.smtp_port, tempinbox.address)
    message = tempinbox.wait_for_message(subject="Welcome", timeout=10)
    assert message.links == ("https://app.test/confirm/abc",)
    assert message.codes == ("482913",)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_user_test_receives_real_mail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SIGNUP_TEST)
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_session_fixture_can_use_the_client_until_its_own_teardown(
    pytester: pytest.Pytester,
) -> None:
    # The server is first requested after the user's fixture: without the client
    # depending on it, it would be torn down first, and the cleanup would fail.
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture(scope="session")
        def shared_inbox(tempinbox_client):
            inbox = tempinbox_client.generate(prefix="shared")
            yield inbox
            assert inbox.delete() == 0

        def test_uses_the_shared_inbox(shared_inbox):
            assert shared_inbox.address.startswith("shared-")

        def test_uses_the_server(tempinbox_server):
            assert tempinbox_server.smtp_port
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2, errors=0)


def test_options_are_in_a_tempinbox_help_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["disposable email inboxes (pytest-tempinbox):"])
    for flag in ("--tempinbox-port", "--tempinbox-smtp-port", "--tempinbox-host"):
        result.stdout.fnmatch_lines([f"*{flag}*"])
    result.stdout.fnmatch_lines(["*--tempinbox-domain*", "*--tempinbox-url*", "*TEMPINBOX_URL*"])
    result.stdout.fnmatch_lines(["*tempinbox_url (string)*"])


def test_fixtures_are_documented(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures")
    # Each fixture with its docstring; pytest lists them sorted by "file:line" as text, so
    # their order says nothing.
    for lines in (
        ["tempinbox_server *session*", "*disposable inbox server of this test session*"],
        ["tempinbox_client *session*"],
        ["tempinbox_factory *"],
        ["tempinbox *", "*brand new disposable inbox for this test*"],
    ):
        result.stdout.fnmatch_lines(lines)


def test_the_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:tempinbox", "--fixtures")
    assert "tempinbox_server" not in result.stdout.str()


def test_factory_makes_several_inboxes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_several(tempinbox_factory, tempinbox):
            first = tempinbox_factory(prefix="alice")
            second = tempinbox_factory()
            assert first.address.startswith("alice-")
            assert len({first.address, second.address, tempinbox.address}) == 3
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_domain_comes_from_the_command_line_before_the_ini_file(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\ntempinbox_domain = ini.test\n")
    pytester.makepyfile(
        """
        import os

        def test_domain(tempinbox):
            assert tempinbox.address.endswith("@" + os.environ["EXPECTED_DOMAIN"])
        """
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPECTED_DOMAIN", "ini.test")
        pytester.runpytest().assert_outcomes(passed=1)
        patch.setenv("EXPECTED_DOMAIN", "cli.test")
        pytester.runpytest("--tempinbox-domain", "cli.test").assert_outcomes(passed=1)


def test_ports_and_host_can_be_fixed(pytester: pytest.Pytester) -> None:
    api_port, smtp_port = free_port(), free_port()
    pytester.makeini(f"[pytest]\ntempinbox_port = {api_port}\ntempinbox_host = 127.0.0.1\n")
    pytester.makepyfile(
        f"""
        def test_ports(tempinbox_server):
            assert tempinbox_server.api_url == "http://127.0.0.1:{api_port}/api"
            assert tempinbox_server.smtp_port == {smtp_port}
        """
    )
    result = pytester.runpytest("--tempinbox-smtp-port", str(smtp_port))
    result.assert_outcomes(passed=1)


def test_limits_come_from_options_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_max_recipients = 3\ntempinbox_ttl = 120\n")
    pytester.makepyfile(
        """
        def test_limits(tempinbox_client):
            limits = tempinbox_client.info()["limits"]
            assert limits["recipients"] == 3
            assert limits["inbox_ttl"] == 120
            assert limits["idle_timeout"] == 4.5
        """
    )
    pytester.runpytest("--tempinbox-idle-timeout", "4.5").assert_outcomes(passed=1)


def test_the_stream_caps_and_backlog_come_from_options_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_max_streams = 3\ntempinbox_listen_backlog = 64\n")
    pytester.makepyfile(
        """
        def test_limits(tempinbox_client):
            limits = tempinbox_client.info()["limits"]
            assert limits["streams"] == 3
            assert limits["streams_per_inbox"] == 2
            assert limits["listen_backlog"] == 64
        """
    )
    result = pytester.runpytest("--tempinbox-max-streams-per-inbox", "2")
    result.assert_outcomes(passed=1)


def test_the_plugin_keeps_its_own_stream_caps_and_backlog(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_limits(tempinbox_client):
            limits = tempinbox_client.info()["limits"]
            assert (limits["streams"], limits["streams_per_inbox"]) == (100, 10)
            assert (limits["connections"], limits["listen_backlog"]) == (100, 2048)
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.skipif(pytest.version_tuple < (8, 4), reason="pytest 8.4 added int and float ini keys")
def test_the_help_gives_the_numeric_ini_keys_their_types(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*tempinbox_port (int):*",
            "*tempinbox_max_message_size (int):*",
            "*tempinbox_idle_timeout (float):*",
            "*tempinbox_ttl (float):*",
        ]
    )


def test_a_zero_in_the_ini_file_is_a_value(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_max_recipients = 0\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: tempinbox_max_recipients in tox.ini: '0' must be above 0"])


def test_a_word_for_a_number_in_the_ini_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_max_recipients = lots\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: tempinbox_max_recipients in tox.ini: 'lots' is not a whole number"]
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("tempinbox_port = 8025x", "tempinbox_port in tox.ini: '8025x' is not a port number"),
        ("tempinbox_ui = maybe", "tempinbox_ui in tox.ini: 'maybe' is not true or false"),
        ("tempinbox_keep = later", "tempinbox_keep in tox.ini: 'later' is not true or false"),
        ("tempinbox_tls = sometimes", "tempinbox_tls in tox.ini: 'sometimes' is not a TLS mode"),
        ("tempinbox_loop = fast", "tempinbox_loop in tox.ini: 'fast' is not an event loop"),
        ("tempinbox_store = disk", "tempinbox_store in tox.ini: *"),
        ("tempinbox_ttl = -1", "tempinbox_ttl in tox.ini: '-1' must be 0 or above *"),
        ("tempinbox_idle_timeout = 1s", "tempinbox_idle_timeout in tox.ini: '1s' is not a*"),
    ],
)
def test_a_bad_ini_value_is_a_usage_error_naming_its_key_and_file(
    pytester: pytest.Pytester, ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}*"])
    output = result.stderr.str()
    assert "--tempinbox" not in output
    assert "invalid literal" not in output
    assert "invalid truth value" not in output


@pytest.mark.skipif(pytest.version_tuple < (9,), reason="pytest 9 reads [tool.pytest] natively")
def test_pyproject_values_are_named_and_a_quoted_number_is_read(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        def test_limits(tempinbox_client):
            assert tempinbox_client.info()["limits"]["recipients"] == 3
        """
    )
    pytester.makepyprojecttoml('[tool.pytest]\ntempinbox_max_recipients = "3"\n')
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.makepyprojecttoml('[tool.pytest]\ntempinbox_port = "8025x"\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: tempinbox_port in pyproject.toml: '8025x' is not a port number (0-65535)"]
    )


def test_a_value_given_with_o_is_named_as_such(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("-o", "tempinbox_port=8025x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: -o tempinbox_port: '8025x' is not a port number (0-65535)"]
    )


def test_a_truth_value_of_the_ini_file_turns_a_switch_on(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_ui = yes\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tempinbox viewer: http://127.0.0.1:*/"])


def test_tls_without_trustme_names_the_ini_key_that_asked_for_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "trustme", None)  # as if the tls extra were missing
    pytester.makeini("[pytest]\ntempinbox_tls = starttls\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0].startswith(
        "ERROR: tempinbox_tls = starttls in tox.ini: TLS needs the trustme package"
    )


def test_a_url_without_a_scheme_asks_for_http(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--tempinbox-url", "127.0.0.1:8025/api")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --tempinbox-url: could not connect to 127.0.0.1:8025/api: not an http:// URL;"
            " add http:// (http://127.0.0.1:8025/api)"
        ]
    )
    assert "unknown url type" not in result.stderr.str()


def test_an_unreachable_url_of_the_environment_says_so_and_names_the_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()  # nothing listens there
    monkeypatch.setenv("TEMPINBOX_URL", f"http://127.0.0.1:{port}/api")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: $TEMPINBOX_URL: could not connect to http://127.0.0.1:{port}/api:"
            " connection refused; is the server running?"
        ]
    )
    assert "is not a pytest-tempinbox server" not in result.stderr.str()


def test_the_plugin_keeps_inboxes_until_teardown_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_no_ttl(tempinbox_client, tempinbox):
            assert tempinbox_client.info()["limits"]["inbox_ttl"] is None
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tempinbox-max-connections", "0"], "*--tempinbox-max-connections: '0' must be above 0"),
        (["--tempinbox-ttl", "soon"], "*--tempinbox-ttl: 'soon' is not a number of seconds"),
        (["--tempinbox-port", "http"], "*--tempinbox-port: 'http' is not a port number*"),
        (["--tempinbox-smtp-port", "70000"], "*--tempinbox-smtp-port: '70000' is not a port*"),
        (
            ["--tempinbox-url", "http://127.0.0.1:9/api"],
            "*--tempinbox-url: could not connect to http://127.0.0.1:9/api: connection refused*",
        ),
        (["--tempinbox-tls", "sometimes"], "*--tempinbox-tls: 'sometimes' is not a TLS mode*"),
        (
            ["--tempinbox-smtp-auth", "no-colon"],
            "*--tempinbox-smtp-auth: expected any, none or USER:PASSWORD*",
        ),
    ],
)
def test_bad_settings_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message.lstrip('*')}"])
    assert "Traceback" not in result.stderr.str()


def test_a_url_at_the_smtp_port_is_a_usage_error_naming_smtp(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    with InboxServer() as server:
        url = f"http://127.0.0.1:{server.smtp_port}/api"
        result = pytester.runpytest("--tempinbox-url", url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --tempinbox-url {url}: that port answered like an SMTP server ('220 *'),"
            " not an HTTP API; the API port is the other one"
            " (python -m pytest_tempinbox prints both)"
        ]
    )
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output


def test_a_url_without_api_asks_whether_api_was_meant(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    with InboxServer() as server:
        root = server.api_url.removesuffix("/api")
        result = pytester.runpytest("--tempinbox-url", root + "/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --tempinbox-url: {root} answered, but is not a pytest-tempinbox server: *404*"
            f"; did you mean {root}/api?"
        ]
    )


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 that a socket listens on for the whole test."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_a_taken_port_ends_the_run_once_as_a_usage_error(
    pytester: pytest.Pytester, taken_port: int
) -> None:
    port = taken_port
    pytester.makepyfile(
        """
        def test_plain(): pass
        def test_uses(tempinbox): pass
        def test_uses_too(tempinbox): pass
        """
    )
    # A process of its own, as a user's run is: the run ends with pytest.exit.
    result = pytester.runpytest_subprocess("--tempinbox-smtp-port", str(port))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=1)
    message = (
        f"pytest-tempinbox: cannot listen for SMTP on 127.0.0.1:{port}: address already in use;"
        " choose another --tempinbox-smtp-port, or 0 for a free one"
    )
    result.stdout.fnmatch_lines([f"*Exit: {message} *"])
    output = result.stdout.str()
    assert output.count("cannot listen") == 1
    assert "Traceback" not in output
    assert "plugin.py" not in output


def test_a_taken_port_of_the_ini_file_is_named_as_its_key(
    pytester: pytest.Pytester, taken_port: int
) -> None:
    port = taken_port
    pytester.makeini(f"[pytest]\ntempinbox_port = {port}\n")
    pytester.makepyfile("def test_uses(tempinbox): pass")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            f"*Exit: pytest-tempinbox: cannot listen for HTTP on 127.0.0.1:{port}: address already"
            " in use; choose another tempinbox_port in tox.ini, or 0 for a free one *"
        ]
    )


def test_a_failing_test_reports_the_mail_it_received(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import smtplib

        def test_expects_welcome(tempinbox, tempinbox_factory, tempinbox_server):
            other = tempinbox_factory(prefix="other")
            with smtplib.SMTP(tempinbox_server.smtp_host, tempinbox_server.smtp_port,
                              local_hostname="client.test") as smtp:
                raw = b"From: Shop <shop@example.com>\\r\\nSubject: Your receipt\\r\\n\\r\\nx"
                smtp.sendmail("shop@example.com", [tempinbox.address], raw)
            tempinbox.wait_for_message(subject="Welcome", timeout=0.2)
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*WaitTimeout: no message with subject containing 'Welcome' arrived at *",
            "*the inbox received 1 message(s):",
            "*- tempinbox -*",
            "*@tempinbox.test: 1 message(s)",
            "*from Shop <shop@example.com>: 'Your receipt'",
            "other-*@tempinbox.test: 0 message(s)",
        ]
    )


def test_a_passing_test_has_no_mail_section(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SIGNUP_TEST)
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1)
    assert "- tempinbox -" not in result.stdout.str()


def test_the_ui_option_starts_the_server_at_once_and_prints_the_viewer_url(
    pytester: pytest.Pytester,
) -> None:
    port = free_port()
    pytester.makepyfile(
        f"""
        import urllib.request

        def test_the_viewer_is_up_though_no_fixture_asked():
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
            with opener.open("http://127.0.0.1:{port}/", timeout=10) as page:
                assert page.headers["Content-Type"] == "text/html; charset=utf-8"
        """
    )
    result = pytester.runpytest("--tempinbox-ui", "--tempinbox-port", str(port))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"tempinbox viewer: http://127.0.0.1:{port}/"])


UI_TESTS = """
def test_one(tempinbox, tempinbox_factory):
    tempinbox_factory(prefix="extra")

def test_two(tempinbox):
    pass

def test_three():
    pass
"""


def test_the_ui_option_links_each_new_inbox_to_the_viewer_under_verbose(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(UI_TESTS)
    pytester.runpytest("-v").stdout.no_fnmatch_line("*tempinbox viewer*")
    result = pytester.runpytest("--tempinbox-ui", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "tempinbox viewer: http://127.0.0.1:*/",
            "*::test_one ",
            "tempinbox viewer: http://127.0.0.1:*/?inbox=*@tempinbox.test (*::test_one)",
            "tempinbox viewer: http://127.0.0.1:*/?inbox=extra-*@tempinbox.test (*::test_one)",
            "*::test_one PASSED*",
        ]
    )


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["default", "quiet"])
def test_the_ui_lines_stay_out_of_the_progress_dots(
    pytester: pytest.Pytester, quiet: list[str]
) -> None:
    pytester.makepyfile(UI_TESTS)
    result = pytester.runpytest("--tempinbox-ui", "-p", "no:randomly", *quiet)
    result.assert_outcomes(passed=3)
    lines = result.stdout.lines
    progress = [line for line in lines if line.rstrip().endswith("[100%]")]
    assert len(progress) == 1
    assert progress[0].split()[-2].endswith("...")  # the three dots on one line
    viewer = [number for number, line in enumerate(lines) if "tempinbox viewer" in line]
    assert len(viewer) == 2
    assert viewer[0] < lines.index(progress[0]) < viewer[1]
    assert lines[viewer[0]].startswith("tempinbox viewer: http://127.0.0.1:")
    assert lines[viewer[1]].endswith(
        "/ (3 inbox(es) made; pytest -v prints a link to each as its test runs)"
    )


def test_the_ui_line_is_among_the_header_lines(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--tempinbox-ui")
    result.stdout.fnmatch_lines(
        ["*test session starts*", "platform *", "tempinbox viewer: http://*/", "collected 1 item"]
    )
    assert result.stdout.str().count("tempinbox viewer") == 1


def test_the_ui_comes_from_the_ini_file_and_shows_under_quiet(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    assert "tempinbox viewer" not in pytester.runpytest("-q").stdout.str()
    pytester.makeini("[pytest]\ntempinbox_ui = true\n")
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tempinbox viewer: http://127.0.0.1:*/"])
    assert result.stdout.lines[0].startswith("tempinbox viewer: ")


def test_the_ui_of_a_remote_server_is_its_own_viewer(
    pytester: pytest.Pytester, server: InboxServer
) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--tempinbox-ui", "--tempinbox-url", server.api_url)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"tempinbox viewer: {server.viewer_url}"])


def test_remote_mode_uses_the_running_server_and_deletes_at_teardown(
    pytester: pytest.Pytester, server: InboxServer, http: requests.Session, tmp_path: Path
) -> None:
    record = tmp_path / "addresses.txt"
    pytester.makepyfile(
        SIGNUP_TEST
        + f"""

def test_records(tempinbox, tempinbox_factory, tempinbox_server):
    assert tempinbox_server.api_url == {server.api_url!r}
    assert tempinbox_server.smtp_port == {server.smtp_port}
    extra = tempinbox_factory()
    with open({str(record)!r}, "a") as out:
        out.write(tempinbox.address + "\\n" + extra.address + "\\n")
"""
    )
    pytester.runpytest("--tempinbox-url", server.api_url).assert_outcomes(passed=2)
    addresses = record.read_text().split()
    assert len(addresses) == 2
    for address in addresses:
        assert http.get(f"{server.api_url}/messages/{address}").status_code == 404


def test_the_url_comes_from_the_environment_before_the_ini_file(
    pytester: pytest.Pytester, server: InboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\ntempinbox_url = http://127.0.0.1:9/api\n")
    pytester.makepyfile(SIGNUP_TEST)
    monkeypatch.setenv("TEMPINBOX_URL", server.api_url)
    pytester.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("TEMPINBOX_URL", "http://127.0.0.1:9/api")
    result = pytester.runpytest("--tempinbox-url", server.api_url)
    result.assert_outcomes(passed=1)


def test_unused_plugin_imports_no_server_and_starts_no_thread(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys
        import threading

        def test_plain():
            assert 1 + 1 == 2

        def test_nothing_heavy_was_loaded():
            heavy = {"aiosmtpd", "starlette", "uvicorn", "requests"}
            heavy.add("pytest_tempinbox.server.inbox_server")
            # The values' dataclasses cost milliseconds to create: a run sending no mail skips them.
            heavy |= {"pytest_tempinbox.values", "pytest_tempinbox.plugin.providers"}
            assert heavy & set(sys.modules) == set()
            assert threading.active_count() == 1
            assert "pytest_tempinbox.plugin" in sys.modules
        """
    )
    # Only this plugin: others installed beside it (schemathesis) import requests.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        result = pytester.runpytest_subprocess("-p", "pytest_tempinbox.plugin")
    result.assert_outcomes(passed=2)


XDIST_TEST = """
import os
import pytest

@pytest.mark.parametrize("n", range(6))
def test_signup_under_xdist(tempinbox, tempinbox_server, n):
    send_welcome(tempinbox_server.smtp_host, tempinbox_server.smtp_port, tempinbox.address)
    assert tempinbox.wait_for_message(subject="Welcome").to[0].email == tempinbox.address
    assert len(tempinbox.messages()) == 1
    with open(os.environ["RECORD"], "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + " " + tempinbox_server.api_url + "\\n")
"""


def test_xdist_workers_share_one_server(pytester: pytest.Pytester, tmp_path: Path) -> None:
    record = tmp_path / "record.txt"
    pytester.makepyfile(SIGNUP_TEST + XDIST_TEST)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECORD", str(record))
        result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=7)
    lines = record.read_text().split("\n")[:-1]
    assert len(lines) == 6
    assert len({line.split()[0] for line in lines}) == 2  # both workers ran tests
    assert len({line.split()[1] for line in lines}) == 1  # and used the same server


def test_xdist_against_a_standalone_server(pytester: pytest.Pytester, tmp_path: Path) -> None:
    standalone = Standalone("--smtp-port", "0", "--api-port", "0")
    try:
        _, _, api_url = standalone.read_addresses()
        record = tmp_path / "record.txt"
        pytester.makepyfile(SIGNUP_TEST + XDIST_TEST)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RECORD", str(record))
            result = pytester.runpytest_subprocess("-n", "2", "--tempinbox-url", api_url)
        result.assert_outcomes(passed=7)
        assert {line.split()[1] for line in record.read_text().split("\n")[:-1]} == {api_url}
    finally:
        status, _, stderr = standalone.stop(signal.SIGTERM)
    assert status == 0, stderr


TLS_TEST = """
import os
import smtplib
from email.message import EmailMessage

import pytest

def message(to):
    message = EmailMessage()
    message["From"] = "app@example.com"
    message["To"] = to
    message["Subject"] = "Over TLS"
    message.set_content("hello")
    return message

def connect(server):
    if server.tls == "implicit":
        return smtplib.SMTP_SSL(server.smtp_host, server.smtp_port,
                                local_hostname="client.test", context=server.ssl_context())
    client = smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test")
    client.starttls(context=server.ssl_context())
    return client

def test_modes(tempinbox_server):
    assert tempinbox_server.tls == os.environ["EXPECTED_TLS"]
    assert tempinbox_server.smtp_auth == "password"
    with open(tempinbox_server.ca_path, "rb") as pem:
        assert pem.read().startswith(b"-----BEGIN CERTIFICATE-----")
    with open(os.environ["RECORD"], "w") as out:
        out.write(tempinbox_server.ca_path)

def test_the_right_password_delivers(tempinbox, tempinbox_server):
    with connect(tempinbox_server) as client:
        client.login("app", "s3cret")
        client.send_message(message(tempinbox.address))
    assert tempinbox.wait_for_message(subject="Over TLS", timeout=5)

def test_a_wrong_password_is_refused(tempinbox, tempinbox_server):
    with connect(tempinbox_server) as client:
        with pytest.raises(smtplib.SMTPAuthenticationError) as refused:
            client.login("app", "wrong")
    assert refused.value.smtp_code == 535
"""


def test_tls_and_smtp_auth_come_from_options_before_the_ini_file(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    record = tmp_path / "ca_path.txt"
    pytester.makeini("[pytest]\ntempinbox_tls = starttls\ntempinbox_smtp_auth = app:s3cret\n")
    pytester.makepyfile(TLS_TEST)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECORD", str(record))
        patch.setenv("EXPECTED_TLS", "starttls")
        pytester.runpytest().assert_outcomes(passed=3)
        assert not Path(record.read_text()).exists()  # removed when the server stopped
        patch.setenv("EXPECTED_TLS", "implicit")
        pytester.runpytest("--tempinbox-tls", "implicit").assert_outcomes(passed=3)
        patch.setenv("EXPECTED_TLS", "required")
        result = pytester.runpytest("--tempinbox-tls=required", "--tempinbox-smtp-auth=app:other")
    # The command line's credentials win over the ini file's.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * smtplib.SMTPAuthenticationError: (535, *",
            "FAILED *::test_the_right_password_delivers*",
        ]
    )


def test_by_default_tls_is_off_and_any_credentials_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_defaults(tempinbox_server):
            assert (tempinbox_server.tls, tempinbox_server.smtp_auth) == ("off", "any")
            assert tempinbox_server.ca_path is None
            with pytest.raises(RuntimeError, match="TLS is off"):
                tempinbox_server.ssl_context()
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_tls_without_trustme_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "trustme", None)  # as if the tls extra were missing
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--tempinbox-tls", "starttls")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        "ERROR: --tempinbox-tls starttls: TLS needs the trustme package, which is not "
        "installed: pip install 'pytest-tempinbox[tls]'"
    )


def test_remote_mode_downloads_the_ca_of_a_tls_server(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    record = tmp_path / "ca_path.txt"
    pytester.makepyfile(TLS_TEST)
    with (
        InboxServer(tls="required", smtp_auth="app:s3cret") as remote,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("RECORD", str(record))
        patch.setenv("EXPECTED_TLS", "required")
        # The server's own modes count: the plugin's TLS option is for a server it starts.
        result = pytester.runpytest("--tempinbox-url", remote.api_url, "--tempinbox-tls=off")
        result.assert_outcomes(passed=3)
        assert remote.ca_path is not None
        downloaded = record.read_text()
        assert downloaded != remote.ca_path
    assert not Path(downloaded).exists()  # removed at the end of the session
