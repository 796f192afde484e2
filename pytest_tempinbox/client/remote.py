"""A server that is already running, found through its API URL, and its CA certificate.

:func:`find_remote_server` asks ``GET {api_url}/info`` where the server's SMTP
listener is and which TLS and AUTH modes it has; :class:`RemoteServer` holds the
answer and downloads the server's CA (``GET {api_url}/ca.pem``) on first use.

Both requests go through :mod:`urllib.request`, not requests like the rest of
the client: the pytest plugin checks ``--tempinbox-url`` when pytest starts,
before any test asks for mail, and a run that sets the URL but uses no fixture
should not load requests for it. The plugin's usage errors also quote urllib's
own words for what went wrong (``HTTP Error 404: Not Found``, the SMTP greeting
an HTTP request met). Importing this module loads neither.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import weakref
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .._net import WILDCARD_TO_LOOPBACK, is_loopback_url
from ..smtp_security import DEFAULT_SMTP_AUTH, DEFAULT_TLS

if TYPE_CHECKING:
    import ssl
    import urllib.request

__all__ = ["NotAServer", "RemoteServer", "find_remote_server"]


class NotAServer(Exception):
    """The URL does not answer as a server of this package would, or does not answer at all.

    ``reason`` says what ``GET {api_url}/info`` met. ``unreachable`` is set when
    no connection could be made (refused, no such host, timed out): nothing
    answered, so nothing is said about what runs there. ``smtp_reply`` is set
    when the port answered with an SMTP greeting (the SMTP port given for the
    API's), shortened to 60 characters; ``suggestion`` when the same URL with
    ``/api`` added is a server (a URL without ``/api``). ``unauthorized``
    when it answered 401: a server with tenants, and no token or a wrong one.
    """

    def __init__(
        self,
        api_url: str,
        reason: str,
        smtp_reply: str | None,
        suggestion: str | None,
        *,
        unreachable: bool = False,
        unauthorized: bool = False,
    ) -> None:
        if unreachable:
            message = f"could not connect to {api_url}: {reason}"
        elif unauthorized:
            message = f"{api_url} has tenants and refused the request: {reason}"
        else:
            message = f"{api_url} answered, but is not a pytest-tempinbox server: {reason}"
        super().__init__(message)
        self.api_url = api_url
        self.reason = reason
        self.smtp_reply = smtp_reply
        self.suggestion = suggestion
        self.unreachable = unreachable


def _remove_file(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


class _DownloadedCA:
    """The CA certificate of a remote server, fetched from ``GET /api/ca.pem`` on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._path: str | None = None
        self._cleanup: weakref.finalize[[str], _DownloadedCA] | None = None

    def path(self, api_url: str) -> str:
        """The PEM file, downloaded on the first call; raises ``ServerUnavailable`` on failure."""
        import tempfile

        from ..errors import ServerUnavailable

        with self._lock:
            if self._path is None:
                url = api_url + "/ca.pem"
                try:
                    with _opener(api_url).open(url, timeout=10) as response:
                        pem = response.read()
                except OSError as exc:
                    raise ServerUnavailable(f"GET {url} failed: {exc}") from exc
                descriptor, path = tempfile.mkstemp(prefix="tempinbox-ca-", suffix=".pem")
                with os.fdopen(descriptor, "wb") as out:
                    out.write(pem)
                self._cleanup = weakref.finalize(self, _remove_file, path)
                self._path = path
            return self._path

    def remove(self) -> None:
        """Remove the downloaded file, if any; the next use downloads it again."""
        with self._lock:
            if self._cleanup is not None:
                self._cleanup()
            self._path = self._cleanup = None


class RemoteServer:
    """A server that was already running, found through its API URL.

    ``tls`` and ``smtp_auth`` are its modes, as its ``/api/info`` reports them.
    """

    # Plain classes here, not dataclasses: creating a dataclass costs about 1 ms of
    # import, and the plugin is imported by every pytest run.
    __slots__ = ("_ca", "api_url", "smtp_auth", "smtp_host", "smtp_port", "tls")

    def __init__(
        self,
        api_url: str,
        smtp_host: str,
        smtp_port: int,
        tls: str = DEFAULT_TLS,
        smtp_auth: str = DEFAULT_SMTP_AUTH,
    ) -> None:
        self.api_url = api_url
        self.smtp_host = smtp_host
        self.smtp_port = smtp_port
        self.tls = tls
        self.smtp_auth = smtp_auth
        self._ca = _DownloadedCA()

    def __repr__(self) -> str:
        return (
            f"RemoteServer(api_url={self.api_url!r}, smtp_host={self.smtp_host!r},"
            f" smtp_port={self.smtp_port!r}, tls={self.tls!r}, smtp_auth={self.smtp_auth!r})"
        )

    def provider_url(self, name: str) -> str:
        """The base URL to give email provider ``name``'s SDK (see docs/providers.md)."""
        from ..values import provider_url  # not at import: the plugin loads this module

        return provider_url(self.api_url, name)

    @property
    def ca_path(self) -> str | None:
        """The CA's PEM file, downloaded from ``GET /api/ca.pem`` on first use; None if TLS is off.

        Raises :class:`~pytest_tempinbox.errors.ServerUnavailable` when the
        download fails. The file is removed at the end of the session.
        """
        return None if self.tls == "off" else self._ca.path(self.api_url)

    def ssl_context(self) -> ssl.SSLContext:
        """A new client-side context that trusts the server's certificate.

        Raises :class:`RuntimeError` when TLS is off on the server.
        """
        path = self.ca_path
        if path is None:
            raise RuntimeError(f"no TLS certificate: TLS is off on the server at {self.api_url}")
        import ssl

        return ssl.create_default_context(cafile=path)

    def close(self) -> None:
        """Remove the downloaded CA file, if any."""
        self._ca.remove()


def _opener(api_url: str) -> urllib.request.OpenerDirector:
    import urllib.request

    if is_loopback_url(api_url):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def find_remote_server(api_url: str, token: str | None = None) -> RemoteServer:
    """Ask the server at ``api_url`` where its SMTP listener is, with a tenant's ``token``.

    Raises :class:`NotAServer` when it does not answer as a server of this
    package would, a 401 (no token, or a wrong one) included.
    """
    import http.client

    if urlsplit(api_url).scheme.lower() not in ("http", "https"):
        fixed = None if "://" in api_url else f"http://{api_url}"
        hint = "" if fixed is None else f"; add http:// ({fixed})"
        raise NotAServer(api_url, f"not an http:// URL{hint}", None, fixed, unreachable=True)
    try:
        smtp_host, smtp_port, tls, smtp_auth = _smtp_of(api_url, token)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _not_a_server(api_url, exc) from None
    except http.client.HTTPException as exc:  # BadStatusLine: the port does not speak HTTP
        raise _not_a_server(api_url, exc) from None
    if smtp_host in WILDCARD_TO_LOOPBACK:
        smtp_host = urlsplit(api_url).hostname or "127.0.0.1"
    return RemoteServer(
        api_url=api_url, smtp_host=smtp_host, smtp_port=smtp_port, tls=tls, smtp_auth=smtp_auth
    )


def _smtp_of(api_url: str, token: str | None = None) -> tuple[str, int, str, str]:
    """The SMTP host, port, TLS mode and AUTH mode that ``GET {api_url}/info`` reports."""
    import urllib.error
    import urllib.request

    asked = urllib.request.Request(api_url + "/info")
    if token is not None:
        asked.add_header("Authorization", f"Bearer {token}")
    try:
        with _opener(api_url).open(asked, timeout=10) as response:
            info = json.load(response)
    except urllib.error.HTTPError as exc:
        exc.close()  # its body holds the connection's socket open until collected
        raise
    smtp = info["smtp"]
    # Servers from before TLS and AUTH modes report neither: plain SMTP, any AUTH.
    return (
        str(smtp["host"]),
        int(smtp["port"]),
        str(smtp.get("tls", DEFAULT_TLS)),
        str(smtp.get("auth", DEFAULT_SMTP_AUTH)),
    )


def _not_a_server(api_url: str, exc: Exception) -> NotAServer:
    """What ``GET {api_url}/info`` met, with the two usual slips recognised.

    The SMTP port given for the API port (the port greets like SMTP), and a URL
    without ``/api`` (a 404 where the URL with ``/api`` answers).
    """
    import urllib.error

    connect_error = getattr(exc, "reason", None)
    if (
        isinstance(exc, urllib.error.URLError)
        and not isinstance(exc, urllib.error.HTTPError)
        and isinstance(connect_error, OSError)
    ):
        reason = f"{_connect_failure(connect_error)}; is the server running?"
        return NotAServer(api_url, reason, None, None, unreachable=True)
    reason = str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
    reason = f"GET {api_url}/info failed: {reason}"
    if getattr(exc, "code", None) == 401:
        reason += "; give a tenant's token (--tempinbox-token or $TEMPINBOX_TOKEN), or check it"
        return NotAServer(api_url, reason, None, None, unauthorized=True)
    line = str(getattr(exc, "line", "")).strip()
    if line[:3].isdigit() and line[3:4] in (" ", "-") and not isinstance(exc, ConnectionError):
        shown = line if len(line) <= 60 else line[:57] + "..."
        return NotAServer(api_url, reason, smtp_reply=shown, suggestion=None)
    suggestion = None
    if getattr(exc, "code", None) == 404 and not api_url.endswith("/api"):
        with contextlib.suppress(Exception):
            _smtp_of(api_url + "/api")
            suggestion = api_url + "/api"
    return NotAServer(api_url, reason, smtp_reply=None, suggestion=suggestion)


def _connect_failure(error: OSError) -> str:
    """What stopped the connection, in a few words: ``connection refused``, ``timed out``."""
    if isinstance(error, TimeoutError) or "timed out" in str(error):
        return "timed out"
    words = error.strerror or str(error) or type(error).__name__
    return words[0].lower() + words[1:] if words[:2] != words[:2].upper() else words
