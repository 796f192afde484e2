"""The quotas' values: the tenants file's ``"quotas"``, the ``--quota-*`` flags, who gets what."""

from __future__ import annotations

import json

import pytest

from pytest_tempinbox._cli import _config, _parser, main
from pytest_tempinbox.quotas import DEFAULT_QUOTAS, OFF, QuotaPolicy, Quotas
from pytest_tempinbox.tenants import Tenants, hash_line

TOKEN = hash_line("tit_x")


def tenants_text(quotas: object) -> str:
    """A tenants file of one tenant, ``team-a``, with ``quotas``."""
    tenant = {"name": "team-a", "tokens": [TOKEN], "quotas": quotas}
    return json.dumps({"tenants": [tenant]})


def test_a_tenants_quotas_are_read_from_the_file() -> None:
    tenants = Tenants.parse(tenants_text({"inboxes": 5, "checks_per_minute": "off"}))
    assert tenants.quotas["team-a"] == Quotas(inboxes=5, checks_per_minute=OFF)


@pytest.mark.parametrize(
    ("quotas", "message"),
    [
        ({"inbox": 5}, "unknown quota(s) 'inbox'; the quotas are inboxes, inboxes_per_hour"),
        ({"inboxes": 0}, 'inboxes must be a whole number from 1, "off" or null, not 0'),
        ({"bytes": "1M"}, "bytes must be a whole number from 1"),
        ({"messages": True}, "messages must be a whole number from 1"),
        ([5], "quotas must be an object"),
    ],
)
def test_a_bad_quota_in_the_file_names_the_tenant_and_the_quota(
    quotas: object, message: str
) -> None:
    with pytest.raises(ValueError, match=r"tenant 1 \(team-a\)") as raised:
        Tenants.parse(tenants_text(quotas))
    assert message in str(raised.value)


def test_with_tenants_every_quota_is_on_by_default_and_a_tenant_overrides_it() -> None:
    policy = QuotaPolicy(Quotas(inboxes=50), {"team-a": Quotas(inboxes=5, bytes=OFF)})
    assert policy.of("team-b").as_dict() == {**DEFAULT_QUOTAS.as_dict(), "inboxes": 50}
    own = policy.of("team-a")
    assert (own.inboxes, own.bytes, own.messages) == (5, OFF, DEFAULT_QUOTAS.messages)
    assert own.active("bytes") is None


def test_without_tenants_only_the_quotas_set_hold_for_everyone() -> None:
    policy = QuotaPolicy(Quotas(inboxes=2))
    assert policy.of(None).active("inboxes") == 2
    assert policy.of(None).active("inboxes_per_hour") is None


def test_the_quota_flags_set_the_servers_values() -> None:
    options = _parser("tempinbox").parse_args(
        ["--quota-inboxes", "20", "--quota-checks-per-minute", "off"]
    )
    assert _config(options).quotas == Quotas(inboxes=20, checks_per_minute=OFF)


def test_a_bad_quota_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--quota-inboxes", "-3"])
    assert exited.value.code == 2
    assert "argument --quota-inboxes: a quota must be a whole number from 1" in (
        capsys.readouterr().err
    )
