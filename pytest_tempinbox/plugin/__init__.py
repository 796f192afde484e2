"""The pytest plugin: options, fixtures, xdist wiring and failure reports.

The only module that imports pytest. It stays light: the server (aiosmtpd,
Starlette, uvicorn) and the client (requests) are imported the first time a
test asks for a fixture, so a run that uses none of them opens no port and
starts no thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import weakref
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import quote, urlsplit

import pytest

from .._net import is_loopback_url
from ..limits import LIMIT_SETTINGS, format_limit, parse_limit
from ..modes import (
    DEFAULT_SMTP_AUTH,
    DEFAULT_TLS,
    SMTP_AUTH_HELP,
    TLS_EXTRA_MISSING,
    TLS_HELP,
    SMTPAuth,
    parse_smtp_auth,
    parse_tls,
    tls_supported,
)

if TYPE_CHECKING:
    import ssl
    import urllib.request

    from ..client.http import Inbox, TempInboxClient
    from ..server.inbox_server import InboxServer
    from .artifacts import Evidence

__all__ = ["RemoteServer", "TempInboxServer"]

URL_ENVIRONMENT_VARIABLE = "TEMPINBOX_URL"
_WILDCARDS = {"", "0.0.0.0", "::", "[::]"}
_OPTIONS = (
    ("port", "port of the HTTP API (0: a free port)", "0"),
    ("smtp_port", "port of the SMTP listener (0: a free port)", "0"),
    ("host", "address both listeners bind", "127.0.0.1"),
    ("domain", "domain of generated addresses", "tempinbox.test"),
    ("tls", TLS_HELP, DEFAULT_TLS),
    ("smtp_auth", SMTP_AUTH_HELP, DEFAULT_SMTP_AUTH),
    (
        "url",
        f"use the server already running at this API URL (ending in /api) instead of "
        f"starting one; also ${URL_ENVIRONMENT_VARIABLE}",
        None,
    ),
    (
        "artifacts",
        "save the mail of each failing test to this folder, one subfolder per test: "
        "each message as .eml and .html, and a summary.txt",
        None,
    ),
)
_KEEP_HELP = (
    "do not delete the inboxes of failing tests; at the end of the run, print their viewer "
    "links and keep the server running until Ctrl-C (on a terminal, outside CI) (default: off)"
)
_UI_HELP = (
    "start the server when the session starts and print the URL of its inbox viewer, "
    "a web page to watch mail arrive (default: off)"
)


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
        from ..server.tls import client_context

        return client_context(path)

    def close(self) -> None:
        """Remove the downloaded CA file, if any."""
        self._ca.remove()


class Settings:
    """The plugin's configuration, resolved: command line, then environment, then ini."""

    __slots__ = ("domain", "host", "limits", "port", "smtp_auth", "smtp_port", "tls", "ui", "url")

    def __init__(
        self,
        *,
        port: int,
        smtp_port: int,
        host: str,
        domain: str,
        url: str | None,
        limits: dict[str, float | None] | None = None,
        tls: str = DEFAULT_TLS,
        smtp_auth: SMTPAuth | None = None,
        ui: bool = False,
    ) -> None:
        self.port = port
        self.smtp_port = smtp_port
        self.host = host
        self.domain = domain
        self.url = url
        self.limits = {} if limits is None else limits
        self.tls = tls
        self.smtp_auth = SMTPAuth() if smtp_auth is None else smtp_auth
        self.ui = ui


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``tempinbox`` option group and its ini keys."""
    group = parser.getgroup("tempinbox", "disposable email inboxes (pytest-tempinbox)")
    for name, help, default in _OPTIONS:
        flag = "--tempinbox-" + name.replace("_", "-")
        shown = f" (default: {default})" if default else ""
        group.addoption(flag, dest=f"tempinbox_{name}", default=None, help=help + shown)
        kind = _number_type(seconds=False) if name.endswith("port") else "string"
        parser.addini(f"tempinbox_{name}", help + shown, type=kind, default=None)
    group.addoption("--tempinbox-ui", action="store_true", dest="tempinbox_ui", help=_UI_HELP)
    parser.addini("tempinbox_ui", _UI_HELP, type="bool", default=False)
    group.addoption("--tempinbox-keep", action="store_true", dest="tempinbox_keep", help=_KEEP_HELP)
    parser.addini("tempinbox_keep", _KEEP_HELP, type="bool", default=False)
    for setting in LIMIT_SETTINGS:
        key = setting.flag.replace("-", "_")
        help = f"{setting.help} (default: {format_limit(setting.default)})"
        group.addoption(f"--tempinbox-{setting.flag}", dest=f"tempinbox_{key}", help=help)
        kind = _number_type(setting.seconds)
        if kind == "string":
            help += ", a number" if setting.seconds else ", a whole number"
        parser.addini(f"tempinbox_{key}", help, type=kind, default=None)


def _number_type(seconds: bool) -> Literal["int", "float", "string"]:
    """The ini type of a numeric key: what ``pytest --help`` shows beside it.

    pytest 8.4 added the ``int`` and ``float`` types; before, numbers are strings
    (and the help says what kind of number).
    """
    if pytest.version_tuple < (8, 4):
        return "string"
    return "float" if seconds else "int"


def _setting(config: pytest.Config, name: str) -> str | None:
    value = config.getoption(f"tempinbox_{name}")
    if value is None and name == "url":
        value = os.environ.get(URL_ENVIRONMENT_VARIABLE) or None
    if value is None:
        try:
            value = config.getini(f"tempinbox_{name}")
        except (TypeError, ValueError, pytest.UsageError) as exc:  # a number it cannot read
            if str(config.inipath) in str(exc):  # pytest's TOML errors name file and key
                raise pytest.UsageError(str(exc)) from None
            raise pytest.UsageError(f"tempinbox_{name} in {config.inipath}: {exc}") from None
    # Not "or None": 0 is a value (a free port; no inbox lifetime).
    return None if value is None or value == "" else str(value).strip()


def _port(config: pytest.Config, name: str) -> int:
    text = _setting(config, name) or "0"
    if not text.isdigit() or int(text) > 65535:
        flag = "--tempinbox-" + name.replace("_", "-")
        raise pytest.UsageError(f"{flag}: {text!r} is not a port number (0-65535)")
    return int(text)


def _limits(config: pytest.Config) -> dict[str, float | None]:
    limits = {}
    for setting in LIMIT_SETTINGS:
        text = _setting(config, setting.flag.replace("-", "_"))
        if text is None:
            continue
        try:
            limits[setting.name] = parse_limit(setting, text)
        except ValueError as exc:
            raise pytest.UsageError(f"--tempinbox-{setting.flag}: {exc}") from None
    return limits


def _tls(config: pytest.Config, starts_a_server: bool) -> str:
    try:
        mode = parse_tls(_setting(config, "tls") or DEFAULT_TLS)
    except ValueError as exc:
        raise pytest.UsageError(f"--tempinbox-tls: {exc}") from None
    if mode != "off" and starts_a_server and not tls_supported():
        raise pytest.UsageError(f"--tempinbox-tls {mode}: {TLS_EXTRA_MISSING}")
    return mode


def _smtp_auth(config: pytest.Config) -> SMTPAuth:
    try:
        return parse_smtp_auth(_setting(config, "smtp_auth") or DEFAULT_SMTP_AUTH)
    except ValueError as exc:
        raise pytest.UsageError(f"--tempinbox-smtp-auth: {exc}") from None


def resolve_settings(config: pytest.Config) -> Settings:
    """Read and check the plugin's settings; a bad value is a :class:`pytest.UsageError`."""
    worker_url = getattr(config, "workerinput", {}).get("tempinbox_url")
    url = (worker_url or _setting(config, "url") or "").rstrip("/") or None
    return Settings(
        port=_port(config, "port"),
        smtp_port=_port(config, "smtp_port"),
        host=_setting(config, "host") or "127.0.0.1",
        domain=(_setting(config, "domain") or "tempinbox.test").lower(),
        url=url,
        limits=_limits(config),
        tls=_tls(config, starts_a_server=url is None),
        smtp_auth=_smtp_auth(config),
        ui=bool(config.getoption("tempinbox_ui") or config.getini("tempinbox_ui")),
    )


def _opener(api_url: str) -> urllib.request.OpenerDirector:
    import urllib.request  # only remote mode needs it: keep unused runs light

    if is_loopback_url(api_url):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def find_remote_server(api_url: str) -> RemoteServer:
    """Ask the server at ``api_url`` where its SMTP listener is.

    Raises :class:`pytest.UsageError` when it does not answer as a server of this
    package would.
    """
    import http.client

    try:
        smtp_host, smtp_port, tls, smtp_auth = _smtp_of(api_url)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise pytest.UsageError(_not_a_server(api_url, exc)) from None
    except http.client.HTTPException as exc:  # BadStatusLine: the port does not speak HTTP
        raise pytest.UsageError(_not_a_server(api_url, exc)) from None
    if smtp_host in _WILDCARDS:
        smtp_host = urlsplit(api_url).hostname or "127.0.0.1"
    return RemoteServer(
        api_url=api_url, smtp_host=smtp_host, smtp_port=smtp_port, tls=tls, smtp_auth=smtp_auth
    )


def _smtp_of(api_url: str) -> tuple[str, int, str, str]:
    """The SMTP host, port, TLS mode and AUTH mode that ``GET {api_url}/info`` reports."""
    import urllib.error

    try:
        with _opener(api_url).open(api_url + "/info", timeout=10) as response:
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


def _not_a_server(api_url: str, exc: Exception) -> str:
    """The usage error for a URL that does not answer like a server of this package.

    Names the two usual slips: the SMTP port given for the API port, and a URL
    without ``/api``.
    """
    line = str(getattr(exc, "line", "")).strip()
    if line[:3].isdigit() and line[3:4] in (" ", "-") and not isinstance(exc, ConnectionError):
        shown = repr(line if len(line) <= 60 else line[:57] + "...")
        return (
            f"--tempinbox-url {api_url}: that port answered like an SMTP server ({shown}), "
            "not an HTTP API; the API port is the other one "
            "(python -m pytest_tempinbox prints both)"
        )
    reason = str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
    message = f"--tempinbox-url: {api_url} is not a pytest-tempinbox server: "
    message += f"GET {api_url}/info failed: {reason}"
    if getattr(exc, "code", None) == 404 and not api_url.endswith("/api"):
        with contextlib.suppress(Exception):
            _smtp_of(api_url + "/api")
            message += f"; did you mean {api_url}/api?"
    return message


class _Servers:
    """Starts (or finds) the one server of this pytest process, on first demand."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.remote: RemoteServer | None = None
        self.local: InboxServer | None = None
        self._client: TempInboxClient | None = None

    def get(self) -> TempInboxServer:
        if self.settings.url:
            if self.remote is None:
                self.remote = find_remote_server(self.settings.url)
            return self.remote
        if self.local is None:
            from ..errors import ServerStartError
            from ..server.inbox_server import InboxServer

            server = InboxServer(
                host=self.settings.host,
                smtp_port=self.settings.smtp_port,
                api_port=self.settings.port,
                domains=[self.settings.domain],
                tls=self.settings.tls,
                smtp_auth=_auth_setting(self.settings.smtp_auth),
                **self.settings.limits,  # type: ignore[arg-type]
            )
            try:
                server.start()
            except ServerStartError as exc:
                # Started on first use, inside a test's setup: an error there would
                # repeat, with the plugin's source, for every test that asks for mail.
                # It is a setting to change, so it ends the run once, as a usage error.
                pytest.exit(_start_failure(exc), returncode=pytest.ExitCode.USAGE_ERROR)
            self.local = server
        return self.local

    def client(self) -> TempInboxClient:
        """The session's client of the server: in the same process, one that skips HTTP."""
        if self._client is None:
            from ..client.http import TempInboxClient

            server = self.get()
            # In the same process: the same API app, called on the server's loop, no HTTP.
            transport = self.local.local_transport() if self.local is server else None
            self._client = TempInboxClient(server.api_url, transport=transport)
        return self._client

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.local is not None:
            self.local.stop()
            self.local = None
        if self.remote is not None:
            self.remote.close()


def _start_failure(exc: Exception) -> str:
    """The one line that ends the run when the in-process server cannot start."""
    message = f"pytest-tempinbox: {exc}"
    if str(exc).startswith("cannot listen for "):
        flag = "--tempinbox-smtp-port" if "for SMTP" in str(exc) else "--tempinbox-port"
        message += f"; choose another {flag}, or 0 for a free one"
    return message


def _auth_setting(auth: SMTPAuth) -> str:
    """The ``smtp_auth`` keyword of :class:`InboxServer` for a parsed setting."""
    return f"{auth.username}:{auth.password}" if auth.mode == "password" else auth.mode


_SERVERS = pytest.StashKey[_Servers]()
_INBOXES = pytest.StashKey[list["Inbox"]]()
_ANNOUNCED = pytest.StashKey[set[str]]()
_KEPT = pytest.StashKey[bool]()  # --tempinbox-keep: this failed test's inboxes stay
_REPORTER = "tempinbox-reporter"


def pytest_configure(config: pytest.Config) -> None:
    """Check the settings, and wire one shared server for all xdist workers."""
    settings = resolve_settings(config)
    config.stash[_SERVERS] = _Servers(settings)
    if settings.url and not hasattr(config, "workerinput"):
        find_remote_server(settings.url)  # fail fast, as a usage error
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_XdistController(config), "tempinbox-xdist")
    if _keeping(config) and not hasattr(config, "workerinput"):
        from .keep import Keeper

        servers = config.stash[_SERVERS]
        viewer = lambda: (_viewer_url(servers.get().api_url), servers.local is not None)  # noqa: E731
        config.pluginmanager.register(Keeper(config, viewer), "tempinbox-keep")


def _keeping(config: pytest.Config) -> bool:
    """``--tempinbox-keep``: failing tests' inboxes stay, and the server until Ctrl-C."""
    return bool(config.getoption("tempinbox_keep") or config.getini("tempinbox_keep"))


def _artifacts_dir(config: pytest.Config) -> str | None:
    """``--tempinbox-artifacts``, absolute (relative to where pytest was run); xdist's own."""
    given = getattr(config, "workerinput", {}).get("tempinbox_artifacts")
    given = given or _setting(config, "artifacts")
    return None if not given else str(config.invocation_params.dir / given)


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session: pytest.Session) -> Generator[None, None, None]:
    """With ``--tempinbox-ui``, start the server now and print its inbox viewer's URL.

    After the terminal's header, so that the line is under it, and printed even
    under ``-q``, which hides the header.
    """
    yield
    config = session.config
    servers = config.stash[_SERVERS]
    if not servers.settings.ui or hasattr(config, "workerinput"):
        return
    api_url = servers.get().api_url
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"tempinbox viewer: {_viewer_url(api_url)}")


def _viewer_url(api_url: str) -> str:
    """The inbox viewer of the server whose API is at ``api_url``: the root of the same port."""
    return api_url.removesuffix("/api") + "/"


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop a server that the xdist controller started for its workers.

    With ``--tempinbox-keep``, first hold it open for the failing tests' inboxes.
    """
    keeper = config.pluginmanager.get_plugin("tempinbox-keep")
    if keeper is not None:
        keeper.finish()
    servers = config.stash.get(_SERVERS, None)
    if servers is not None:
        servers.stop()


class _XdistController:
    """xdist's controller starts one server and hands its URL to every worker."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        """Give the worker the shared server's API URL."""
        server = self.config.stash[_SERVERS].get()
        node.workerinput["tempinbox_url"] = server.api_url
        node.workerinput["tempinbox_artifacts"] = _artifacts_dir(self.config)


class _Reporter:
    """Adds the mail of a failed test's inboxes to its report.

    Registered when a test first asks for an inbox, so that a run that uses none
    does not pay for a hook around every report. With ``viewer``, the inbox
    viewer's URL (``--tempinbox-ui``), it also prints a link to each new inbox
    after the phase that made it: reports are made outside output capture.
    With ``evidence`` (``--tempinbox-artifacts``, ``--tempinbox-keep``, pytest-html,
    allure-pytest), a failed setup or call also saves, links or keeps the mail.
    """

    def __init__(self, viewer: str | None, evidence: Evidence | None = None) -> None:
        self.viewer = viewer
        self.evidence = evidence

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Add a ``tempinbox`` section listing the mail each inbox of a failed test received."""
        report = yield
        inboxes = item.stash.get(_INBOXES, None)
        if inboxes and self.viewer is not None:
            self._announce(item, inboxes, self.viewer)
        if inboxes and report.failed and report.when == "call":
            report.sections.append(("tempinbox", _mail_report(inboxes)))
        if inboxes and report.failed and report.when != "teardown" and self.evidence is not None:
            self.evidence.record(item.nodeid, report, inboxes)
            item.stash[_KEPT] = self.evidence.keep
        return report

    @staticmethod
    def _announce(item: pytest.Item, inboxes: list[Inbox], viewer: str) -> None:
        reporter = item.config.pluginmanager.get_plugin("terminalreporter")
        announced = item.stash.setdefault(_ANNOUNCED, set())
        for inbox in inboxes:
            if reporter is not None and inbox.address not in announced:
                announced.add(inbox.address)
                link = f"{viewer}?inbox={quote(inbox.address, safe='@')}"
                reporter.write_line(f"tempinbox viewer: {link} ({item.nodeid})")


def _inboxes_of(request: pytest.FixtureRequest) -> list[Inbox]:
    """The list of the inboxes made for this test, for teardown and the failure report."""
    manager = request.config.pluginmanager
    if not manager.has_plugin(_REPORTER):
        config = request.config
        manager.register(_Reporter(_announced_viewer(config), _evidence(config)), _REPORTER)
    made: list[Inbox] = request.node.stash.setdefault(_INBOXES, [])
    return made


def _evidence(config: pytest.Config) -> Evidence | None:
    """What to do with a failed test's mail beyond its report section; None: nothing."""
    artifacts, keep = _artifacts_dir(config), _keeping(config)
    # pytest-html writes a report only with --html; allure-pytest only with --alluredir.
    html_report = (
        config.getoption("htmlpath", None) if config.pluginmanager.hasplugin("html") else None
    )
    allure = config.pluginmanager.hasplugin("allure_listener")
    if not (artifacts or keep or html_report or allure):
        return None
    from .artifacts import Evidence

    return Evidence(artifacts=artifacts, html_report=html_report, allure=allure, keep=keep)


def _announced_viewer(config: pytest.Config) -> str | None:
    """With ``--tempinbox-ui``, the viewer URL to link each new inbox to; not in xdist workers."""
    servers = config.stash[_SERVERS]
    if not servers.settings.ui or hasattr(config, "workerinput"):
        return None
    return _viewer_url(servers.get().api_url)


def _mail_report(inboxes: list[Inbox]) -> str:
    from ..client.explain import about, location_of
    from ..client.http import describe
    from ..errors import TempInboxError

    lines = []
    for inbox in inboxes:
        try:
            received = inbox.messages()
        except TempInboxError as exc:
            lines.append(f"{inbox.address}: could not be read ({exc})")
            continue
        lines.append(f"{inbox.address}: {len(received)} message(s)")
        lines += [f"  - {describe(message)}" for message in received]
        # Why mail may be missing: refused for an address like this one, kept by Django.
        lines += [f"  {note}" for note in about(inbox)]
    location = location_of(inboxes[0].client) if inboxes else None
    if location is not None:
        lines.append(location)
    return "\n".join(lines)


@pytest.fixture(scope="session")
def tempinbox_server(request: pytest.FixtureRequest) -> Iterator[TempInboxServer]:
    """The disposable inbox server of this test session.

    Started in this process on first use (or, with ``--tempinbox-url``, the
    server already running there). Point the application's SMTP settings at
    ``smtp_host`` and ``smtp_port``; ``api_url`` is the HTTP API's base URL.
    With ``--tempinbox-tls``, ``ca_path`` (a PEM file) and ``ssl_context()`` let
    clients trust the server's certificate.
    """
    servers = request.config.stash[_SERVERS]
    yield servers.get()
    # With --tempinbox-keep, the server outlives the session: pytest_unconfigure stops it.
    if not hasattr(request.config, "workerinput") and not _keeping(request.config):
        servers.stop()


# tempinbox and tempinbox_factory take the client from the session's _Servers,
# not from tempinbox_client: every fixture a fixture depends on costs pytest some
# work in each test, even when its value is cached. A session fixture that uses
# the client asks for tempinbox_client, which depends on tempinbox_server so that
# pytest stops the server only after that fixture's teardown.
@pytest.fixture(scope="session")
def tempinbox_client(
    request: pytest.FixtureRequest, tempinbox_server: TempInboxServer
) -> TempInboxClient:
    """A client of the session's server: ``generate``, ``messages``, ``message``, ``delete``.

    In the same process as the server, it answers without HTTP, exactly as HTTP
    would. It is closed when the server stops.
    """
    return request.config.stash[_SERVERS].client()


@pytest.fixture
def tempinbox_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Inbox]]:
    """Make new inboxes: ``tempinbox_factory(prefix=None, domain=None, *, address=None) -> Inbox``.

    For tests that need several addresses; every inbox it made is deleted at
    teardown, and listed in the report of a failing test. ``address`` makes
    exactly that inbox (``"alice@tempinbox.test"``), for test data that seeds
    users with fixed addresses; it fails with
    :class:`~pytest_tempinbox.errors.AddressTaken` while a live inbox has it.
    """
    client = request.config.stash[_SERVERS].client()
    made = _inboxes_of(request)

    def factory(
        prefix: str | None = None, domain: str | None = None, *, address: str | None = None
    ) -> Inbox:
        inbox = client.generate(prefix=prefix, domain=domain, address=address)
        made.append(inbox)
        return inbox

    yield factory
    if not request.node.stash.get(_KEPT, False):
        _delete_all(made)


@pytest.fixture
def tempinbox(request: pytest.FixtureRequest) -> Iterator[Inbox]:
    """A brand new disposable inbox for this test, deleted at teardown.

    Give ``tempinbox.address`` to the application under test, then read what it
    sent with ``tempinbox.wait_for_message(subject=...)`` or ``messages()``.
    """
    inbox = request.config.stash[_SERVERS].client().generate()
    _inboxes_of(request).append(inbox)
    yield inbox
    if not request.node.stash.get(_KEPT, False):
        _delete_all([inbox])


@pytest.fixture
def tempinbox_django(
    request: pytest.FixtureRequest, tempinbox_server: TempInboxServer
) -> Iterator[None]:
    """Send Django's mail to the session's inbox server for this test, over TLS where it can.

    Sets Django's SMTP backend, ``EMAIL_HOST`` and ``EMAIL_PORT``, whatever the
    settings say, with pytest-django's ``settings`` fixture (or Django's
    ``override_settings`` without it); restored after the test. The project's
    ``EMAIL_USE_TLS`` or ``EMAIL_USE_SSL`` is kept when ``--tempinbox-tls``
    serves it (``starttls``/``required``, ``implicit``), with the server's CA
    trusted; on a plain server (the default) both are turned off for the test.
    Fails the test with one line when Django is missing or not configured.
    """
    import importlib.util
    import sys

    if importlib.util.find_spec("django") is None:
        pytest.fail("tempinbox_django needs Django, which is not installed", pytrace=False)
    from ..django_mail import dns_name_cached, mail_settings, project_tls

    problem: str | None = None
    try:
        use_tls, use_ssl = project_tls()
    except RuntimeError as exc:
        problem = str(exc)
    if problem is not None:  # out of the except block: one line, no chained exception
        pytest.fail(f"tempinbox_django: {problem}", pytrace=False)
    values = mail_settings(tempinbox_server, use_tls, use_ssl)
    pytest_django = sys.modules.get("pytest_django.plugin")
    with dns_name_cached():
        if pytest_django is not None and request.config.pluginmanager.is_registered(pytest_django):
            settings = request.getfixturevalue("settings")
            for name, value in values.items():
                setattr(settings, name, value)
            yield
        else:
            from django.test import override_settings

            with override_settings(**values):
                yield


def _delete_all(inboxes: list[Inbox]) -> None:
    from ..errors import InboxNotFound

    for inbox in inboxes:
        with contextlib.suppress(InboxNotFound):  # the test deleted it itself
            inbox.delete()
