"""The rate limits' core: buckets, trusted proxies, the tenants file's key and the flags."""

from __future__ import annotations

import json

import pytest

from pytest_tempinbox._cli import main
from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.proxies import TrustedProxies
from pytest_tempinbox.rate_limits import Buckets, Rate, RateLimits
from pytest_tempinbox.tenants import Tenants, hash_line


def test_a_bucket_answers_its_burst_then_the_seconds_to_wait() -> None:
    buckets, rate = Buckets(), Rate(2, burst=3)
    assert [buckets.take("a", rate, 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a", rate, 0.0) == pytest.approx(0.5)
    assert buckets.take("a", rate, 0.5) == 0.0, "half a second refills one request"


def test_a_flood_of_keys_never_grows_the_buckets_past_their_size() -> None:
    buckets = Buckets(size=100)
    for number in range(10_000):
        buckets.take(f"198.51.{number // 256}.{number % 256}", Rate(1), 0.0)
    assert len(buckets) == 100


def test_waiting_spends_nothing() -> None:
    buckets, rate = Buckets(), Rate(1, burst=1)
    assert buckets.wait("a", rate, 0.0) == 0.0
    buckets.take("a", rate, 0.0)
    assert buckets.wait("a", rate, 0.0) == buckets.wait("a", rate, 0.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("peer", "headers", "client"),
    [
        ("192.0.2.1", [(b"x-forwarded-for", b"203.0.113.9")], "192.0.2.1"),
        ("10.0.0.5", [(b"x-forwarded-for", b"203.0.113.9")], "203.0.113.9"),
        ("10.0.0.5", [(b"x-forwarded-for", b"6.6.6.6, 203.0.113.9, 10.0.0.7")], "203.0.113.9"),
        ("10.0.0.5", [(b"forwarded", b'for="[2001:db8::1]:443";proto=https')], "2001:db8::1"),
        ("10.0.0.5", [(b"forwarded", b"for=198.51.100.2:80, for=10.0.0.6")], "198.51.100.2"),
        ("10.0.0.5", [], "10.0.0.5"),
    ],
    ids=["untrusted peer", "one hop", "rightmost untrusted", "forwarded ipv6", "two hops", "none"],
)
def test_the_client_is_the_one_a_trusted_proxy_forwards(
    peer: str, headers: list[tuple[bytes, bytes]], client: str
) -> None:
    assert TrustedProxies(["10.0.0.0/8"]).client(peer, headers) == client


def test_a_tenants_rate_limits_are_read_from_the_file() -> None:
    entry = {
        "name": "team-a",
        "tokens": [hash_line("tit_x")],
        "rate_limits": {"requests_per_second": 3},
    }
    tenants = Tenants.parse(json.dumps({"tenants": [entry]}))
    assert tenants.rate_limits == {"team-a": Rate(3, burst=6)}


@pytest.mark.parametrize(
    ("rate_limits", "error"),
    [
        ({"requests_per_second": 0}, "requests_per_second must be a number above 0"),
        ({"burst": 4}, "rate_limits must be an object"),
        ({"requests_per_second": 1, "per_hour": 2}, "unknown rate_limits field(s) 'per_hour'"),
        ({"requests_per_second": 5, "burst": 0.5}, "burst must be at least 1"),
    ],
)
def test_a_bad_rate_limits_entry_is_named(rate_limits: object, error: str) -> None:
    entry = {"name": "team-a", "tokens": [hash_line("tit_x")], "rate_limits": rate_limits}
    with pytest.raises(ValueError, match="tenant 1 \\(team-a\\)") as raised:
        Tenants.parse(json.dumps({"tenants": [entry]}))
    assert error in str(raised.value)


def test_without_tenants_and_flags_no_rate_limit_is_in_force() -> None:
    assert ServerConfig().rate_limits_in_force() is None


def test_with_tenants_every_limit_holds_by_default_and_zero_turns_one_off() -> None:
    tenants = Tenants({"team-a": [hash_line("tit_x")]})
    limits = ServerConfig(tenants=tenants).rate_limits_in_force()
    assert limits is not None
    assert limits.token_rate is not None
    assert limits.smtp
    off = ServerConfig(tenants=tenants, rate_limits=RateLimits(token_rate=0))
    in_force = off.rate_limits_in_force()
    assert in_force is not None
    assert in_force.token_rate is None
    assert in_force.client_rate is not None


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--rate-limit", "5"], "--rate-limit counts requests per API token: it needs --tenants"),
        (["--trusted-proxy", "proxy.local"], "'proxy.local' is not an IP address or a network"),
        (["--client-rate-limit", "-1"], "'-1' must be 0 (off) or a number above it"),
    ],
)
def test_a_bad_rate_limit_flag_is_one_usage_error(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--smtp-port", "0", "--api-port", "0"])
    assert exited.value.code == 2
    assert error in capsys.readouterr().err
