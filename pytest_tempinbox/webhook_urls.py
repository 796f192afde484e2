"""Webhook URLs (``--webhook``, a tenant's ``"webhooks"``): read and checked once, at start.

Standard library only and imported only when a webhook is given, so that the
command line, the tenants file and :class:`~pytest_tempinbox.config.ServerConfig`
refuse a bad URL with one clear :class:`ValueError` before anything starts.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = ["WebhookTarget", "check_webhook_url", "webhook_target"]

_SCHEMES = {"http": 80, "https": 443}
_MAX_URL = 2048


class WebhookTarget(NamedTuple):
    """Where one webhook is POSTed: its scheme, host, port and request target (path and query)."""

    scheme: str
    host: str
    port: int
    target: str

    @property
    def host_header(self) -> str:
        """The ``Host`` header: the host (an IPv6 one in brackets), with a port not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _SCHEMES[self.scheme] else f"{host}:{self.port}"


def webhook_target(url: str) -> WebhookTarget:
    """Split ``url`` into its :class:`WebhookTarget`; :class:`ValueError` saying what is wrong."""
    shown = repr(url[:80])
    if not isinstance(url, str) or not url or len(url) > _MAX_URL or not url.isprintable():
        raise ValueError(
            f"a webhook is an http:// or https:// URL of printable characters: {shown}"
        )
    if any(char.isspace() for char in url):
        raise ValueError(f"a webhook URL has no spaces: {shown}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"the webhook URL {shown} cannot be read: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError(f"a webhook is an http:// or https:// URL, not {shown}")
    if not parts.hostname:
        raise ValueError(f"the webhook URL {shown} has no host")
    if parts.username is not None or parts.password is not None:
        where = parts.hostname  # the URL itself is not shown: it holds a password
        raise ValueError(f"the webhook URL to {where!r} carries credentials: use a webhook secret")
    if parts.fragment:
        raise ValueError(f"the webhook URL {shown} has a #fragment, which HTTP never sends")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return WebhookTarget(scheme, parts.hostname, port or _SCHEMES[scheme], target)


def check_webhook_url(url: str) -> str:
    """Return ``url`` when it is a webhook's (:func:`webhook_target`); else :class:`ValueError`."""
    webhook_target(url)
    return url
