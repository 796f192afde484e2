"""The ``tempinbox_django`` fixture's work: Django's mail settings pointed at the session's server.

The fixture itself is declared in the plugin's package, where pytest finds it;
:func:`django_mail_to` does what it promises, with one
:class:`~pytest_tempinbox.django_mail.override_mail_settings` (Django's
``override_settings``, quiet about the ``EMAIL_*`` settings that Django 6.1
deprecates), undone by pytest-django's ``settings`` fixture when that plugin
is active. What the settings are is :mod:`pytest_tempinbox.django_mail`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .settings import KEEP_MAILERS_INI

if TYPE_CHECKING:
    from ..django_mail import override_mail_settings
    from .server_handle import TempInboxServer

__all__ = ["django_mail_to"]


def django_mail_to(request: pytest.FixtureRequest, server: TempInboxServer) -> Iterator[None]:
    """Send Django's mail to ``server`` until the generator resumes; then restore the settings.

    Fails the test with one line when Django is missing or not configured, or
    when the ``tempinbox_django_keep_mailers`` ini key names a mailer that
    ``MAILERS`` does not define.
    """
    import importlib.util
    import sys

    # find_spec is slower than a look in sys.modules, and Django is there after the first test.
    if sys.modules.get("django") is None and importlib.util.find_spec("django") is None:
        pytest.fail("tempinbox_django needs Django, which is not installed", pytrace=False)
    from ..django_mail import dns_name_cached, fixture_settings, override_mail_settings

    problem: str | None = None
    keep: list[str] = request.config.getini(KEEP_MAILERS_INI)
    values: dict[str, Any] = {}
    try:
        # Only what differs: each overridden setting costs Django a signal in and out.
        values = fixture_settings(server, keep)
    except RuntimeError as exc:
        problem = str(exc)
    except ValueError as exc:
        problem = f"{KEEP_MAILERS_INI}: {exc}"
    if problem is not None:  # out of the except block: one line, no chained exception
        pytest.fail(f"tempinbox_django: {problem}", pytrace=False)
    override = override_mail_settings(**values)
    pytest_django = sys.modules.get("pytest_django.plugin")
    with dns_name_cached():
        if pytest_django is not None and request.config.pluginmanager.is_registered(pytest_django):
            _override_with(request.getfixturevalue("settings"), override, values)
            yield
        else:
            override.enable()
            try:
                yield
            finally:
                override.disable()


def _override_with(settings: Any, override: override_mail_settings, values: dict[str, Any]) -> None:
    """Enable ``override`` as one of the changes pytest-django's ``settings`` fixture undoes.

    Through it, the changes of the test's own, made later, are undone in the
    right order. Its public way, setting each value on it, makes a plain
    ``override_settings`` that Django 6.1 warns about for an ``EMAIL_*``
    setting, when pytest-django restores it; so the override, quiet, joins the
    list that the fixture undoes (``_to_restore``, pytest-django 4.x), or, in
    a pytest-django without that list, each value is set on the fixture.
    """
    undo = getattr(settings, "_to_restore", None)
    if isinstance(undo, list):
        override.enable()
        undo.append(override)
        return
    for name, value in values.items():
        setattr(settings, name, value)
