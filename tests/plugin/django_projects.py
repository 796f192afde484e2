"""Small Django projects, each run as a pytest session of its own: the ``tempinbox_django`` tests.

Django's settings are global to a process: configuring them here would change
every other test of this suite, so each project runs in a subprocess, with
only the plugins named on its command line.
"""

from __future__ import annotations

import pytest

from pytest_tempinbox.plugin import URL_ENVIRONMENT_VARIABLE

__all__ = ["PLUGINS", "FakeServer", "make_project", "run_with_pytest_django", "write_settings"]

PLUGINS = ("-p", "pytest_django.plugin", "-p", "pytest_tempinbox.plugin")
BASE_SETTINGS = """
SECRET_KEY = "only-for-the-tests"
INSTALLED_APPS = []
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
DEFAULT_FROM_EMAIL = "shop@example.com"
"""


def make_project(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    mail_settings: str,
    *,
    ini: str = "",
    let_pass: str = "",
) -> pytest.Pytester:
    """A Django project, ``mail_site``: settings ending in ``mail_settings``, ``ini`` in pytest.ini.

    Every warning is an error, as in this suite: the fixture must cause none;
    ``let_pass`` is a ``filterwarnings`` line for the one warning that may pass.
    """
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)  # for pytest-asyncio, not loaded here
    monkeypatch.delenv(URL_ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    pytester.mkpydir("mail_site")
    filters = "".join(f"\n    {line}" for line in ("error", let_pass) if line)
    pytester.makeini(f"[pytest]\npythonpath = .\nfilterwarnings ={filters}\n{ini}")
    write_settings(pytester, mail_settings)
    return pytester


def write_settings(pytester: pytest.Pytester, mail_settings: str) -> None:
    """Write ``mail_site/settings.py``: the base settings, then ``mail_settings``."""
    settings = BASE_SETTINGS + mail_settings
    (pytester.path / "mail_site" / "settings.py").write_text(settings, encoding="utf-8")


def run_with_pytest_django(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run the project's tests with pytest-django and this plugin, output not captured."""
    return pytester.runpytest_subprocess(*PLUGINS, "--ds", "mail_site.settings", "-s", *args)


class FakeServer:
    """What the settings functions read of a server, in TLS mode ``tls``."""

    smtp_host = "127.0.0.1"
    smtp_port = 2525
    ca_path = "/tmp/ca.pem"

    def __init__(self, tls: str) -> None:
        self.tls = tls

    def provider_url(self, name: str) -> str:
        """Any provider's URL: the backends of providers the real server does not answer yet too."""
        return f"http://127.0.0.1:8025/providers/{name}"
