"""One configuration: built once from keywords, the command line or the plugin, and handed down."""

from __future__ import annotations

import smtplib
import subprocess
import sys
from typing import Any

import pytest

from pytest_tempinbox import InboxServer
from pytest_tempinbox._cli import _config, _parser
from pytest_tempinbox.config import DEFAULT_DOMAIN, DEFAULT_HOST, ServerConfig
from pytest_tempinbox.limits import LIMIT_SETTINGS
from pytest_tempinbox.server.store.factory import REDIS_EXTRA_MISSING
from pytest_tempinbox.smtp_security import SMTPAuth


def test_the_defaults_are_written_once() -> None:
    config = ServerConfig()
    assert (config.host, config.smtp_port, config.api_port) == (DEFAULT_HOST, 0, 0)
    assert config.domains == (DEFAULT_DOMAIN,)
    assert config.tls == "off"
    assert config.smtp_auth == SMTPAuth("any")
    assert config.limits()["message_size"] == 10 * 1024 * 1024


def test_bad_values_fail_when_the_configuration_is_built() -> None:
    with pytest.raises(ValueError, match="not a TLS mode"):
        ServerConfig(tls="sometimes")
    with pytest.raises(ValueError, match="USER:PASSWORD"):
        ServerConfig(smtp_auth="alice")
    with pytest.raises(ValueError, match="event_heartbeat"):
        ServerConfig(event_heartbeat=0)


def test_it_is_immutable_and_replace_reads_again() -> None:
    config = ServerConfig(smtp_auth="alice:s3cret")
    with pytest.raises(AttributeError, match="immutable"):
        config.tls = "starttls"
    changed = config.replace(tls="STARTTLS", max_recipients=3)
    assert (changed.tls, changed.max_recipients) == ("starttls", 3)
    assert changed.smtp_auth == config.smtp_auth
    assert config.tls == "off"
    assert changed != config
    assert config.replace() == config
    assert hash(config.replace()) == hash(config)
    with pytest.raises(ValueError, match="not a TLS mode"):
        config.replace(tls="never")


def test_its_repr_never_shows_the_password() -> None:
    config = ServerConfig(smtp_auth="alice:s3cret")
    assert "s3cret" not in repr(config)
    assert "username='alice'" in repr(config)


def test_the_command_line_builds_the_configuration_the_keywords_build() -> None:
    arguments = "--smtp-port 0 --api-port 0 --domain Mail.Test --tls off --smtp-auth alice:s3cret"
    options = _parser("tempinbox").parse_args([*arguments.split(), "--max-recipients", "3"])
    from_cli = _config(options)
    # The standalone server's own defaults (a shared service's), the flag given.
    limits: dict[str, Any] = {setting.name: setting.standalone for setting in LIMIT_SETTINGS}
    expected = ServerConfig(
        domains=["Mail.Test"],
        smtp_auth="alice:s3cret",
        compress_read_messages=True,  # the standalone command's default, off for InboxServer
        **{**limits, "max_recipients": 3},
    )
    assert from_cli == expected
    # The AUTH setting is read once, not written back to USER:PASSWORD and read again.
    assert isinstance(from_cli.smtp_auth, SMTPAuth)
    assert from_cli.smtp_auth.password == "s3cret"


def test_a_server_from_a_configuration_serves_it() -> None:
    config = ServerConfig(domains=["Mail.Test"], max_recipients=1, smtp_auth="none")
    with InboxServer.from_config(config) as server:
        assert server.config == config.replace(hostname="mail.test")
        assert server.store.domains == ("mail.test",)
        assert server.limits == server.config.limits()
        inbox = server.store.generate()
        with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client") as smtp:
            code, _ = smtp.ehlo()
            assert code == 250
            assert not smtp.has_extn("auth")
            smtp.mail("sender@example.test")
            assert smtp.rcpt(inbox.address)[0] == 250
            assert smtp.rcpt(inbox.address)[0] == 452  # max_recipients=1


def test_the_keywords_make_the_same_configuration() -> None:
    server = InboxServer(domains=["mail.test"], tls="off", smtp_auth="alice:pw")
    assert server.config == ServerConfig(
        domains=["mail.test"], hostname="mail.test", smtp_auth="alice:pw"
    )


BLOCK_REDIS = "import sys; sys.modules['redis'] = None  # as if the redis extra were missing\n"
BLOCK_HIREDIS = "import sys; sys.modules['hiredis'] = None  # redis-py without hiredis\n"


@pytest.mark.parametrize(("block", "package"), [(BLOCK_REDIS, "redis"), (BLOCK_HIREDIS, "hiredis")])
def test_the_command_without_the_redis_extra_says_so_in_one_line(block: str, package: str) -> None:
    code = block + (
        "from pytest_tempinbox._cli import main\n"
        "sys.exit(main(['--smtp-port', '0', '--api-port', '0', '--store', 'redis://127.0.0.1:1/0']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: {REDIS_EXTRA_MISSING.format(package)}"]


def test_the_plugin_without_the_redis_extra_ends_the_run_once(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(BLOCK_REDIS)
    pytester.makepyfile(
        "def test_one(tempinbox):\n    pass\n\ndef test_two(tempinbox):\n    pass\n"
    )
    result = pytester.runpytest_subprocess("--tempinbox-store", "redis://127.0.0.1:1/0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    missing = REDIS_EXTRA_MISSING.format("redis")
    assert result.stdout.str().count(missing) + result.stderr.str().count(missing) == 1
