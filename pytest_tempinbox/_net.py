"""Which hosts are loopback: one answer for the server, the client and the plugin.

Standard library only, so the plugin can ask without importing the server.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["WILDCARD_TO_LOOPBACK", "is_loopback", "is_loopback_url", "reachable_host"]

WILDCARD_TO_LOOPBACK = {
    "": "127.0.0.1",
    "0.0.0.0": "127.0.0.1",
    "::": "::1",
    "[::]": "::1",
}
"""The wildcard addresses a server may bind, each with the loopback address that reaches it."""


def reachable_host(host: str) -> str:
    """The host a client on this machine reaches a server bound to ``host`` at."""
    return WILDCARD_TO_LOOPBACK.get(host, host)


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` is a loopback address (``[::1]`` too) or ``localhost``."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """Tell whether ``url`` points at a loopback host."""
    return is_loopback(urlsplit(url).hostname or "")
