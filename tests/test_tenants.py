"""The tenants file, its tokens' hashes, and the command that makes a token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tempinbox import _cli
from pytest_tempinbox.config import ServerConfig
from pytest_tempinbox.tenants import Tenants, hash_line, make_token

TOKEN = "tit_one"
LINE = hash_line(TOKEN)


def write(directory: Path, data: object) -> str:
    path = directory / "tenants.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_a_token_is_found_by_its_hash_and_an_unknown_one_is_not() -> None:
    tenants = Tenants({"team-a": [LINE], "team-b": [hash_line("tit_two")]})
    assert tenants.tenant_of(TOKEN) == "team-a"
    assert tenants.tenant_of(TOKEN) == "team-a"  # now from the verified tokens
    assert tenants.tenant_of("tit_two") == "team-b"
    assert tenants.tenant_of("tit_three") is None
    assert tenants.tenant_of(LINE) is None  # the hash is not a token


def test_make_token_gives_a_token_and_the_line_of_its_hash() -> None:
    token, line = make_token()
    assert token.startswith("tit_")
    assert len(token) > 40
    assert line == hash_line(token)
    assert make_token()[0] != token


def test_the_file_is_read_into_its_tenants(tmp_path: Path) -> None:
    path = write(tmp_path, {"tenants": [{"name": "team-a", "tokens": [LINE]}]})
    tenants = Tenants.from_file(path)
    assert tenants.names == ("team-a",)
    assert tenants.tenant_of(TOKEN) == "team-a"
    assert ServerConfig(tenants=path).tenants == tenants


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("{not json", "is not JSON"),
        ({"teams": []}, 'one object, {"tenants"'),
        ({"tenants": []}, "at least one tenant"),
        ({"tenants": ["team-a"]}, "tenant 1 must be an object"),
        ({"tenants": [{"name": "a b", "tokens": [LINE]}]}, "name must be"),
        ({"tenants": [{"name": "a", "tokens": []}]}, "at least one hash"),
        ({"tenants": [{"name": "a", "tokens": [TOKEN]}]}, "not a token itself"),
        ({"tenants": [{"name": "a", "tokens": [LINE], "quota": 1}]}, "unknown field(s) 'quota'"),
        (
            {"tenants": [{"name": "a", "tokens": [LINE]}, {"name": "a", "tokens": [LINE]}]},
            "two tenants are named 'a'",
        ),
        (
            {"tenants": [{"name": "a", "tokens": [LINE]}, {"name": "b", "tokens": [LINE]}]},
            "share a token",
        ),
    ],
)
def test_a_bad_file_is_one_error_naming_the_problem(
    tmp_path: Path, data: object, problem: str
) -> None:
    with pytest.raises(ValueError, match=r"tenants\.json") as info:
        Tenants.from_file(write(tmp_path, data))
    assert problem in str(info.value)
    assert "\n" not in str(info.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot read the tenants file .*No such file"):
        Tenants.from_file(str(tmp_path / "absent.json"))


def test_repr_names_the_tenants_and_no_hash() -> None:
    assert repr(Tenants({"team-a": [LINE]})) == "Tenants(['team-a'])"


def test_the_command_makes_a_token_and_prints_its_hash_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _cli.main(["--make-token"]) == 0
    token_line, hash_text = capsys.readouterr().out.splitlines()
    token = token_line.removeprefix("token: ")
    assert hash_text.split()[-1] == hash_line(token)


def test_the_command_answers_a_bad_tenants_file_with_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, {"tenants": [{"name": "a", "tokens": [TOKEN]}]})
    with pytest.raises(SystemExit) as info:
        _cli.main(["--tenants", path])
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("tempinbox: error: argument --tenants: ")
    assert "not a token itself" in last


def _with_smtp(smtp: object) -> str:
    return json.dumps({"tenants": [{"name": "team-a", "tokens": [LINE], "smtp": smtp}]})


def test_a_tenants_smtp_login_is_found_by_user_and_password() -> None:
    smtp = {"user": "app", "password": hash_line("secret")}
    tenants = Tenants.parse(_with_smtp(smtp))
    assert tenants.smtp_logins.tenant_of(b"app", b"secret") == "team-a"
    assert tenants.smtp_logins.tenant_of(b"app", b"secret") == "team-a"  # from the verified ones
    assert tenants.smtp_logins.tenant_of(b"app", b"wrong") is None
    assert tenants.smtp_logins.tenant_of(b"other", b"secret") is None


def test_a_tenant_may_hold_a_list_of_smtp_logins() -> None:
    smtp = [
        {"user": "one", "password": hash_line("p1")},
        {"user": "two", "password": hash_line("p2")},
    ]
    logins = Tenants.parse(_with_smtp(smtp)).smtp_logins
    assert (logins.tenant_of(b"one", b"p1"), logins.tenant_of(b"two", b"p2")) == (
        "team-a",
        "team-a",
    )


@pytest.mark.parametrize(
    ("smtp", "says"),
    [
        ({"user": "app", "password": "secret"}, "not the password itself"),
        ({"user": "app"}, '{"user": ..., "password": "sha256:<hex>"}'),
        ({"user": "", "password": LINE}, "1-256 printable characters"),
        ([], "at least one"),
    ],
    ids=["password in clear", "no password", "empty user", "empty list"],
)
def test_a_bad_smtp_login_is_one_line_naming_the_tenant(smtp: object, says: str) -> None:
    with pytest.raises(ValueError, match="tenant 1 \\(team-a\\)") as bad:
        Tenants.parse(_with_smtp(smtp), "tenants.json")
    assert says in str(bad.value)
    assert "secret" not in str(bad.value)


def test_two_tenants_may_not_share_an_smtp_user() -> None:
    login = {"user": "app", "password": LINE}
    tenants = [
        {"name": "team-a", "tokens": [LINE], "smtp": login},
        {"name": "team-b", "tokens": [hash_line("tit_two")], "smtp": login},
    ]
    with pytest.raises(ValueError, match="share the SMTP user 'app'"):
        Tenants.parse(json.dumps({"tenants": tenants}), "tenants.json")


def test_the_repr_of_an_smtp_login_shows_no_hash() -> None:
    tenants = Tenants.parse(_with_smtp({"user": "app", "password": LINE}))
    assert LINE not in repr(tenants.smtp)


def test_smtp_credentials_with_smtp_auth_none_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, _with_smtp({"user": "app", "password": LINE}))
    with pytest.raises(SystemExit) as info:
        _cli.main(["--tenants", path, "--smtp-auth", "none"])
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--smtp-auth none offers no AUTH" in last


def test_a_password_made_with_make_token_logs_in(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli.main(["--make-token"]) == 0
    token_line, hash_text = capsys.readouterr().out.splitlines()
    password, stored = token_line.split()[1], hash_text.split()[1]
    tenants = Tenants.parse(_with_smtp({"user": "app", "password": stored}))
    assert tenants.smtp_logins.tenant_of(b"app", password.encode()) == "team-a"
