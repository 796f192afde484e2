"""``--tempinbox-tenants``: the server started in the test run's process, with tenants."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..server.tenants_support import TOKEN_A, tenants_file
from .test_remote_token import TEST_FILE

GUARDED_FILE = """
import requests

def test_the_server_asks_for_a_token(tempinbox_server):
    assert requests.get(tempinbox_server.api_url + "/inboxes", timeout=5).status_code == 401
"""


def test_the_plugin_is_a_tenant_of_its_own_server_with_tenants(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_mail=TEST_FILE, test_guard=GUARDED_FILE)
    result = pytester.runpytest(
        "--tempinbox-tenants", tenants_file(tmp_path), "--tempinbox-token", TOKEN_A
    )
    result.assert_outcomes(passed=2)


def test_the_ini_key_names_the_tenants_file(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makeini(f"[pytest]\ntempinbox_tenants = {tenants_file(tmp_path)}\n")
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("--tempinbox-token", TOKEN_A)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("token", "says"),
    [(None, "give one of their tokens"), ("tit_wrong", "is no tenant's of that file")],
    ids=["no token", "wrong token"],
)
def test_no_token_or_a_wrong_one_is_one_usage_error_at_start(
    pytester: pytest.Pytester, tmp_path: Path, token: str | None, says: str
) -> None:
    pytester.makepyfile(TEST_FILE)
    given = [] if token is None else ["--tempinbox-token", token]
    result = pytester.runpytest("--tempinbox-tenants", tenants_file(tmp_path), *given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1
    assert "--tempinbox-tenants" in errors[0]
    assert says in errors[0]
    assert "tit_wrong" not in result.stderr.str()


def test_a_bad_tenants_file_is_one_usage_error_at_start(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST_FILE)
    pytester.path.joinpath("tenants.json").write_text('{"tenants": []}')
    result = pytester.runpytest("--tempinbox-tenants", "tenants.json", "--tempinbox-token", "x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == [
        "ERROR: --tempinbox-tenants: tenants.json: tenants must be a list of at least one tenant"
    ]
