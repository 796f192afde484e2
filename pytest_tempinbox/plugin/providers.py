"""The ``tempinbox_providers`` fixture's work: the providers' SDKs pointed at the session's server.

:func:`provider_environment` says, from the server's provider URLs and the
environment as it is, which variables to set and which to remove: the ones
the SDKs read (see docs/providers.md); :func:`point_sdks` makes those
changes with pytest's ``monkeypatch``, which undoes them after the test, and
does the same to the ``resend`` module, which reads its variables when it
is imported. Nothing here imports an SDK; the stand-in AWS credentials are
those that :mod:`..django_providers` gives a Django backend.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..django_providers import STAND_IN_AWS_KEYS, STAND_IN_REGION
from ..values import PROVIDERS

if TYPE_CHECKING:
    import pytest

    from .server_handle import TempInboxServer

__all__ = [
    "FAKE_KEYS",
    "URL_VARIABLES",
    "point_sdks",
    "provider_environment",
]

URL_VARIABLES: Mapping[str, tuple[str, ...]] = {
    # boto3 (botocore 1.31 and later): the endpoint of a service, by its service id.
    "ses": ("AWS_ENDPOINT_URL_SES", "AWS_ENDPOINT_URL_SESV2"),
    # The resend SDK reads it once, when it is imported.
    "resend": ("RESEND_API_URL",),
}
"""The environment variables through which an SDK takes a provider's URL, by provider.

The SendGrid, Postmark (postmarker), Mailgun and Brevo SDKs read none: they take
the URL as an argument.
"""

FAKE_KEYS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "ses": tuple(
        zip(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), STAND_IN_AWS_KEYS, strict=True)
    ),
    "sendgrid": (("SENDGRID_API_KEY", "SG.tempinbox-fake-key"),),
    "resend": (("RESEND_API_KEY", "re_tempinbox_fake_key"),),
}
"""The keys an SDK reads from the environment, and the stand-ins set when none of them is set.

The server accepts any key unless it was started with a provider key (see
docs/providers.md); a key already in the environment is left as it is.
"""

# botocore: when true, AWS_ENDPOINT_URL_* are ignored.
_IGNORE_ENDPOINTS = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
_REGION = "AWS_DEFAULT_REGION"
# What requests, urllib (SendGrid's client) and botocore read for a proxy, and for its exceptions.
_PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_NO_PROXY = ("no_proxy", "NO_PROXY")
# The resend module's attributes, read from these variables when it is imported.
_RESEND_ATTRIBUTES = (("api_url", "RESEND_API_URL"), ("api_key", "RESEND_API_KEY"))
_RESEND_DEFAULT_URL = "https://api.resend.com"


def provider_environment(
    urls: Mapping[str, str], environ: Mapping[str, str]
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The variables to set, and those to remove, so that the SDKs send to ``urls``.

    ``urls`` is each provider's base URL (``provider_url(name)``) by name;
    ``environ`` the environment as it is. For each provider: its
    :data:`URL_VARIABLES`, and its :data:`FAKE_KEYS` when none of them is set;
    for SES, also ``AWS_DEFAULT_REGION`` when unset, and
    ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` removed, as it would make boto3
    ignore the endpoints. When a proxy variable is set, the servers' hosts are
    added to ``NO_PROXY`` (and ``no_proxy``), so that the SDKs reach them
    directly.
    """
    values: dict[str, str] = {}
    removed: list[str] = []
    for name, url in urls.items():
        values.update(dict.fromkeys(URL_VARIABLES.get(name, ()), url))
        keys = FAKE_KEYS.get(name, ())
        if not any(environ.get(variable) for variable, _ in keys):
            values.update(keys)
    if "ses" in urls:
        if not environ.get(_REGION):
            values[_REGION] = STAND_IN_REGION
        if _IGNORE_ENDPOINTS in environ:
            removed.append(_IGNORE_ENDPOINTS)
    if any(environ.get(variable) for variable in _PROXIES):
        hosts = sorted({urlsplit(url).hostname or "" for url in urls.values()} - {""})
        for variable in _NO_PROXY:
            listed = [host.strip() for host in environ.get(variable, "").split(",")]
            missing = [host for host in hosts if host not in listed]
            if missing:
                values[variable] = ",".join([*filter(None, listed), *missing])
    return values, tuple(removed)


def point_sdks(
    monkeypatch: pytest.MonkeyPatch, server: TempInboxServer
) -> Iterator[dict[str, str]]:
    """Set the SDKs' variables for ``server`` with ``monkeypatch``; yield the URLs by provider.

    A ``resend`` module already imported has read its variables: its
    ``api_url`` (and ``api_key`` when it has none) are set with
    ``monkeypatch`` too. One imported during the test, which read them then,
    gets them back as they were before the test when it ends.
    """
    urls = {name: server.provider_url(name) for name in PROVIDERS}
    values, removed = provider_environment(urls, os.environ)
    before = {variable: os.environ.get(variable) for _, variable in _RESEND_ATTRIBUTES}
    for variable in removed:
        monkeypatch.delenv(variable)
    for variable, value in values.items():
        monkeypatch.setenv(variable, value)
    resend = sys.modules.get("resend")
    if resend is not None and "resend" in urls:
        monkeypatch.setattr(resend, "api_url", urls["resend"])
        if not resend.api_key:
            monkeypatch.setattr(resend, "api_key", os.environ.get("RESEND_API_KEY"))
    yield dict(urls)
    imported = sys.modules.get("resend") if resend is None else None
    if imported is not None:
        _restore_resend(imported, before)


def _restore_resend(module: Any, before: Mapping[str, str | None]) -> None:
    """Give a ``resend`` imported during the test what it reads from the environment before it."""
    for attribute, variable in _RESEND_ATTRIBUTES:
        value = before[variable]
        if value is None and attribute == "api_url":
            value = _RESEND_DEFAULT_URL
        setattr(module, attribute, value)
