"""The session's server: started on first use, or found at ``--tempinbox-url``, then stopped.

One :class:`SessionServer` per pytest process, kept in the config's stash
(:data:`SERVERS`). Without a URL it starts an
:class:`~pytest_tempinbox.InboxServer` in this process the first time a test
asks for it; with one, it uses the server already running there. Under xdist
the controller starts the server and hands its URL to every worker, so that all
of them share it. The server stops with the session, or, with
``--tempinbox-keep``, when the run ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ..client.remote import NotAServer, RemoteServer, find_remote_server
from .settings import Settings
from .sources import Origin

if TYPE_CHECKING:
    from ..client.http import TempInboxClient
    from ..server.inbox_server import InboxServer
    from .server_handle import TempInboxServer

__all__ = ["SERVERS", "SessionServer", "configure", "find_remote", "unconfigure", "viewer_url"]


class SessionServer:
    """Starts (or finds) the one server of this pytest process, on first demand."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.remote: RemoteServer | None = None
        self.local: InboxServer | None = None
        self._client: TempInboxClient | None = None

    def get(self) -> TempInboxServer:
        """The server, started (or found) on the first call.

        A server that cannot start ends the run, once, as a usage error.
        """
        if self.settings.url:
            if self.remote is None:
                self.remote = find_remote(
                    self.settings.url, self.settings.origin("url"), self.settings.token
                )
            return self.remote
        if self.local is None:
            from ..errors import ServerStartError
            from ..server.inbox_server import InboxServer

            try:
                server = InboxServer.from_config(self.settings.server_config())
                server.start()
            except ServerStartError as exc:
                # Started on first use, inside a test's setup: an error there would
                # repeat, with the plugin's source, for every test that asks for mail.
                # It is a setting to change, so it ends the run once, as a usage error.
                message = _start_failure(exc, self.settings)
                pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)
            self.local = server
        return self.local

    def client(self) -> TempInboxClient:
        """The session's client of the server: in the same process, one that skips HTTP."""
        if self._client is None:
            from ..client.http import TempInboxClient

            server = self.get()
            # In the same process: the same API app, called on the server's loop, no HTTP;
            # with tenants, over HTTP with the token (the in-process transport sends none).
            if self.local is server and self.settings.tenants is None:
                transport = self.local.local_transport()
                self._client = TempInboxClient(server.api_url, transport=transport)
            else:
                self._client = TempInboxClient(server.api_url, token=self.settings.token)
        return self._client

    def stop(self) -> None:
        """Close the client, stop a server started here, remove a downloaded CA."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.local is not None:
            self.local.stop()
            self.local = None
        if self.remote is not None:
            self.remote.close()


SERVERS = pytest.StashKey[SessionServer]()


def configure(config: pytest.Config, settings: Settings) -> None:
    """Keep the session's server in the stash; check a remote one, share it under xdist.

    With ``--tempinbox-keep``, also register what holds the server open at the end.
    """
    servers = config.stash[SERVERS] = SessionServer(settings)
    if settings.url and not settings.worker:
        find_remote(settings.url, settings.origin("url"), settings.token)  # fail fast
    if config.pluginmanager.hasplugin("xdist") and not settings.worker:
        config.pluginmanager.register(_XdistController(config), "tempinbox-xdist")
    if settings.keep and not settings.worker:
        from .keep import Keeper

        viewer = lambda: (viewer_url(servers.get().api_url), servers.local is not None)  # noqa: E731
        config.pluginmanager.register(Keeper(config, viewer), "tempinbox-keep")


def unconfigure(config: pytest.Config) -> None:
    """Stop the server, if the session's fixture did not; first hold it for ``--tempinbox-keep``."""
    keeper = config.pluginmanager.get_plugin("tempinbox-keep")
    if keeper is not None:
        keeper.finish()
    servers = config.stash.get(SERVERS, None)
    if servers is not None:
        servers.stop()


def find_remote(
    api_url: str, origin: Origin | None = None, token: str | None = None
) -> RemoteServer:
    """The server running at ``api_url``; a :class:`pytest.UsageError` if it is not one.

    ``origin`` is where the URL came from, for the error to name it; ``token``
    is sent to a server with tenants (a wrong one: the usage error says so).
    """
    try:
        return find_remote_server(api_url, token)
    except NotAServer as error:
        raise pytest.UsageError(_not_a_server(error, origin or Origin.flag("url"))) from None


def _not_a_server(error: NotAServer, origin: Origin) -> str:
    """The usage error for a URL that does not answer like a server of this package.

    Names the two usual slips: the SMTP port given for the API port, and a URL
    without ``/api``.
    """
    if error.smtp_reply is not None:
        return (
            f"{origin.given(error.api_url)}: that port answered like an SMTP server "
            f"({error.smtp_reply!r}), not an HTTP API; the API port is the other one "
            "(python -m pytest_tempinbox prints both)"
        )
    message = f"{origin}: {error}"
    if error.suggestion is not None and not error.unreachable:
        message += f"; did you mean {error.suggestion}?"
    return message


def _start_failure(exc: Exception, settings: Settings) -> str:
    """The one line that ends the run when the in-process server cannot start.

    It names the setting to change where it was given: flag, ini key or both.
    """
    message = f"pytest-tempinbox: {exc}"
    if str(exc).startswith("cannot listen for "):
        origin = settings.origin("smtp_port" if "for SMTP" in str(exc) else "port")
        message += f"; choose another {origin}, or 0 for a free one"
    elif "needs uvloop" in str(exc):
        message += f", or choose another {settings.origin('loop')}"
    return message


def viewer_url(api_url: str) -> str:
    """The inbox viewer of the server whose API is at ``api_url``: the root of the same port."""
    return api_url.removesuffix("/api") + "/"


class _XdistController:
    """xdist's controller starts one server and hands its URL to every worker."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        """Give the worker the shared server's API URL."""
        servers = self.config.stash[SERVERS]
        node.workerinput["tempinbox_url"] = servers.get().api_url
        node.workerinput["tempinbox_artifacts"] = servers.settings.artifacts
