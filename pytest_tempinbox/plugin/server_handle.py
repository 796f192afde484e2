"""What the ``tempinbox_server`` fixture gives, as a type: :class:`TempInboxServer`.

Its own module, so that the plugin's modules that hand out a server
(:mod:`.session`, :mod:`.django`) name its type without importing the plugin's
``__init__``, which imports them. Re-exported by :mod:`pytest_tempinbox.plugin`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import ssl

__all__ = ["TempInboxServer"]


class TempInboxServer(Protocol):
    """What the ``tempinbox_server`` fixture gives: where to send mail and where the API is.

    With TLS on, ``ca_path`` and ``ssl_context()`` let clients verify the SMTP
    listener's certificate.
    """

    @property
    def smtp_host(self) -> str:
        """The host to send mail to."""

    @property
    def smtp_port(self) -> int:
        """The SMTP port."""

    @property
    def api_url(self) -> str:
        """The API's base URL, ending in ``/api``."""

    def provider_url(self, name: str) -> str:
        """The base URL to give email provider ``name``'s SDK (see docs/providers.md)."""

    @property
    def tls(self) -> str:
        """The TLS mode of the SMTP port: ``off``, ``starttls``, ``required`` or ``implicit``."""

    @property
    def smtp_auth(self) -> str:
        """The AUTH mode: ``any``, ``none`` or ``password``."""

    @property
    def ca_path(self) -> str | None:
        """A PEM file of the CA that issued the SMTP certificate; None when TLS is off."""

    def ssl_context(self) -> ssl.SSLContext:
        """A new client-side context that trusts the SMTP certificate (TLS must be on)."""
