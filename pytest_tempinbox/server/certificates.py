"""A certificate given as files (``--tls-cert``/``--api-tls-cert``), read again on demand.

Standard library only: no trustme, which only the throwaway CA needs. A
:class:`CertificateFiles` reads its certificate chain and private key into an
:class:`ssl.SSLContext` at once, so a missing, unreadable or mismatched file is
a :class:`~pytest_tempinbox.errors.ServerStartError` with a one-line reason
before anything listens. The context the listeners are given never changes; its
``sni_callback``, which OpenSSL calls at every handshake (with or without the
client's SNI), hands the handshake to the newest context read. :meth:`reload`
reads the files into a new context and swaps it in: new handshakes present the
new certificate, and the sessions already open keep theirs.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading

from ..config import ServerConfig
from ..errors import ServerStartError

__all__ = ["CertificateFiles", "read_certificates"]

log = logging.getLogger(__name__)


class CertificateFiles:
    """A server certificate read from ``cert`` (PEM, leaf first, chain after) and ``key`` (PEM).

    ``what`` names the listener in errors (``SMTP``, ``API``). Raises
    :class:`~pytest_tempinbox.errors.ServerStartError` when the files cannot be
    read or do not go together.
    """

    def __init__(self, cert: str, key: str, what: str) -> None:
        self.cert = cert
        self.key = key
        self.what = what
        self._lock = threading.Lock()
        self._current = self._read()
        self.reloads = 0
        """How many times :meth:`reload` swapped in a new certificate."""
        self.context = self._read()
        """The context to give a listener: each handshake is handed to the newest one read."""
        self.follow(self.context)

    def _read(self) -> ssl.SSLContext:
        """A new server-side context with the files' certificate and key."""
        for path in (self.cert, self.key):
            if not os.path.isfile(path):
                raise ServerStartError(f"the {self.what} TLS file {path!r} is not a file")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(self.cert, self.key)
        except OSError as exc:  # ssl.SSLError is an OSError too
            raise ServerStartError(
                f"the {self.what} TLS certificate {self.cert!r} and key {self.key!r} cannot be "
                f"used: {_reason(exc)}"
            ) from None
        return context

    def follow(self, context: ssl.SSLContext) -> None:
        """Make ``context`` hand each of its handshakes to the newest certificate read."""
        context.sni_callback = self._choose

    def _choose(self, connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
        # Setting the connection's context during the ClientHello is how OpenSSL
        # lets a server pick the certificate of one handshake.
        connection.context = self._current

    def reload(self) -> None:
        """Read the files again and present them from the next handshake on.

        Raises :class:`~pytest_tempinbox.errors.ServerStartError` (the certificate
        in use is kept) when the new files cannot be read or do not go together.
        """
        with self._lock:
            self._current = self._read()
            self.reloads += 1
        log.info("%s TLS certificate read again from %s", self.what, self.cert)


def _reason(exc: OSError) -> str:
    """An ``ssl``/``OSError`` as one line: OpenSSL's reason, or the system's."""
    if isinstance(exc, ssl.SSLError):
        reason = (exc.reason or str(exc)).replace("_", " ").lower()
        if "key values mismatch" in reason:
            return "the key is not the certificate's key"
        if "pem lib" in reason or "no start line" in reason:
            return "a file is not a PEM certificate or key"
        return reason
    return exc.strerror or str(exc)


def read_certificates(
    config: ServerConfig,
) -> tuple[CertificateFiles | None, CertificateFiles | None]:
    """The SMTP listener's and the API's certificates of ``config``, read (None: not given)."""
    smtp = api = None
    if config.tls_cert is not None and config.tls_key is not None:
        smtp = CertificateFiles(config.tls_cert, config.tls_key, "SMTP")
    if config.api_tls_cert is not None and config.api_tls_key is not None:
        api = CertificateFiles(config.api_tls_cert, config.api_tls_key, "API")
    return smtp, api
