"""The settings of the certificates given as files: which go together, checked before start.

Standard library only, for the command line and :class:`~pytest_tempinbox.config.ServerConfig`.
The files themselves are read when the server starts
(:mod:`pytest_tempinbox.server.certificates`). docs/tls.md says how they are used.
"""

from __future__ import annotations

__all__ = ["API_TLS_HELP", "SMTP_TLS_HELP", "check_certificate_files"]

SMTP_TLS_HELP = (
    "the SMTP listener's certificate and its chain (PEM), from an ACME client say, instead of "
    "a throwaway CA's; needs --tls-key and a --tls mode; read again on SIGHUP"
)
API_TLS_HELP = (
    "the API's and viewer's certificate and its chain (PEM): they are served over HTTPS only; "
    "needs --api-tls-key; read again on SIGHUP"
)


def check_certificate_files(
    tls: str,
    tls_cert: str | None,
    tls_key: str | None,
    api_tls_cert: str | None,
    api_tls_key: str | None,
) -> None:
    """Raise :class:`ValueError` unless each certificate has its key, and SMTP's a TLS mode."""
    for cert, key, flags in (
        (tls_cert, tls_key, "--tls-cert and --tls-key"),
        (api_tls_cert, api_tls_key, "--api-tls-cert and --api-tls-key"),
    ):
        if (cert is None) != (key is None):
            raise ValueError(f"{flags} go together: give both or neither")
    if tls_cert is not None and tls == "off":
        raise ValueError("--tls-cert is for a TLS mode: give --tls starttls, required or implicit")
