"""The ``tempinbox_django`` fixture's work: Django's mail settings pointed at the session's server.

The fixture itself is declared in the plugin's package, where pytest finds it;
:func:`django_mail_to` does what it promises, with pytest-django's
``settings`` fixture when that plugin is active, else Django's
``override_settings``. What the settings are is :mod:`pytest_tempinbox.django_mail`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from . import TempInboxServer

__all__ = ["django_mail_to"]


def django_mail_to(request: pytest.FixtureRequest, server: TempInboxServer) -> Iterator[None]:
    """Send Django's mail to ``server`` until the generator resumes; then restore the settings.

    Fails the test with one line when Django is missing or not configured.
    """
    import importlib.util
    import sys

    # find_spec is slower than a look in sys.modules, and Django is there after the first test.
    if sys.modules.get("django") is None and importlib.util.find_spec("django") is None:
        pytest.fail("tempinbox_django needs Django, which is not installed", pytrace=False)
    from ..django_mail import changed_settings, dns_name_cached, mail_settings, project_tls

    problem: str | None = None
    try:
        use_tls, use_ssl = project_tls()
    except RuntimeError as exc:
        problem = str(exc)
    if problem is not None:  # out of the except block: one line, no chained exception
        pytest.fail(f"tempinbox_django: {problem}", pytrace=False)
    # Only what differs: each overridden setting costs Django a signal in and out.
    values = changed_settings(mail_settings(server, use_tls, use_ssl))
    pytest_django = sys.modules.get("pytest_django.plugin")
    with dns_name_cached():
        if pytest_django is not None and request.config.pluginmanager.is_registered(pytest_django):
            settings = request.getfixturevalue("settings")
            for name, value in values.items():
                setattr(settings, name, value)
            yield
        else:
            from django.test import override_settings

            with override_settings(**values):
                yield
