"""Which hosts are loopback: one answer for the server, the client and the plugin.

Standard library only, so the plugin can ask without importing the server.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_loopback", "is_loopback_url"]


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
