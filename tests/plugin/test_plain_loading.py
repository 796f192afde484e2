"""The package's modules load without pytest's assertion rewriter, however pytest marked them."""

from __future__ import annotations

import sys

import pytest

from pytest_tempinbox.plugin import plain_loading

# The user's conftest marks the package, as pytest itself does for an installed
# (not editable) plugin; the test then reports which of the package's modules
# pytest's hook loaded.
_CONFTEST = """
import pytest

pytest.register_assert_rewrite("pytest_tempinbox")
"""

_TEST = """
import smtplib
import sys


def test_mail(tempinbox, tempinbox_server):
    host, port = tempinbox_server.smtp_host, tempinbox_server.smtp_port
    with smtplib.SMTP(host, port, local_hostname="x") as smtp:
        message = b"Subject: hi\\r\\n\\r\\nHello.\\r\\n"
        smtp.sendmail("app@example.test", [tempinbox.address], message)
    assert tempinbox.wait_for_message().subject == "hi"
    rewritten = sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("pytest_tempinbox.server")
        and type(getattr(module.__spec__, "loader", None)).__name__ == "AssertionRewritingHook"
    )
    print("REWRITTEN", len(rewritten), rewritten[:5])
    assert "pytest_tempinbox.server.inbox_server" in sys.modules
"""


def test_the_server_s_modules_load_without_the_assertion_rewriter(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(_TEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert "REWRITTEN 0 []" in result.stdout.str()


class _Hook:
    """Stands for pytest's rewriting hook: the two attributes the unmarking touches."""

    def __init__(self, *marked: str) -> None:
        self._must_rewrite = set(marked)
        self._marked_for_rewrite_cache = {"pytest_tempinbox.models": True}


def test_only_the_package_s_names_are_unmarked(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = _Hook("pytest_tempinbox", "pytest_tempinbox.plugin", "pytest_tempinboxes", "django")
    monkeypatch.setattr(sys, "meta_path", [object(), hook, *sys.meta_path])
    plain_loading.leave_assertion_rewriting()
    assert hook._must_rewrite == {"pytest_tempinboxes", "django"}
    assert hook._marked_for_rewrite_cache == {}
    plain_loading.leave_assertion_rewriting()  # twice is harmless
    assert hook._must_rewrite == {"pytest_tempinboxes", "django"}
