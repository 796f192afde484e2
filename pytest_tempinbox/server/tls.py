"""A throwaway certificate authority and the SMTP listener's certificate.

The only module that imports trustme (the ``tls`` extra), and only when a TLS
mode is on. Each server start makes a new CA, issues a certificate for every
name a client may use to reach the server, and writes the CA's certificate to a
PEM file in a private temporary directory, for clients to trust.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import socket
import ssl
import tempfile
import weakref
from collections.abc import Iterable

from .._net import WILDCARD_TO_LOOPBACK, is_loopback
from ..errors import ServerStartError
from ..smtp_security import TLS_EXTRA_MISSING

__all__ = ["CertificateAuthority", "certificate_names", "client_context"]

log = logging.getLogger(__name__)

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_DNS_NAME = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*")


def client_context(ca_path: str) -> ssl.SSLContext:
    """A client-side context that verifies the server against the CA in ``ca_path``."""
    return ssl.create_default_context(cafile=ca_path)


def certificate_names(host: str, names: Iterable[str]) -> list[str]:
    """The names the certificate is for: loopback, the bound ``host`` and ``names``.

    Names that cannot go in a certificate (``mx_1.test``, say) are left out.
    Bound beyond loopback, the machine's host name is added, as clients on other
    machines may use it.
    """
    candidates = [*_LOOPBACK_NAMES, host.strip("[]"), *names]
    if not is_loopback(host):
        candidates.append(socket.gethostname())
    found: list[str] = []
    for candidate in candidates:
        name = _certificate_name(candidate)
        if name is not None and name not in found:
            found.append(name)
    return found


def _certificate_name(text: str) -> str | None:
    text = text.strip().rstrip(".").lower()
    if text in WILDCARD_TO_LOOPBACK:
        return None
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    try:
        name = text.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    if len(name) > 253 or not _DNS_NAME.fullmatch(name):
        log.debug("%r is not a host name; the certificate is not issued for it", text)
        return None
    return name


class CertificateAuthority:
    """A new throwaway CA, and the server certificate it issued for ``names``.

    Raises :class:`~pytest_tempinbox.errors.ServerStartError` naming the ``tls``
    extra when trustme is not installed. :attr:`ca_path` is a PEM file of the
    CA's certificate; it is removed by :meth:`close` (or when the object is
    garbage-collected, or at exit).
    """

    def __init__(self, names: Iterable[str]) -> None:
        try:
            import trustme
        except ImportError:
            raise ServerStartError(TLS_EXTRA_MISSING) from None
        self.names = tuple(names)
        authority = trustme.CA(organization_name="pytest-tempinbox throwaway CA")
        self._certificate = authority.issue_cert(*self.names)
        self.ca_pem = authority.cert_pem.bytes()
        directory = tempfile.mkdtemp(prefix="tempinbox-ca-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
        self.ca_path = os.path.join(directory, "ca.pem")
        with open(self.ca_path, "wb") as out:
            out.write(self.ca_pem)

    def server_context(self) -> ssl.SSLContext:
        """A server-side context presenting the issued certificate (no client certificates)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._certificate.configure_cert(context)
        return context

    def close(self) -> None:
        """Remove the CA's PEM file; safe to call more than once."""
        self._cleanup()
