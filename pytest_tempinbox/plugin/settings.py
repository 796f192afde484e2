"""The plugin's settings: its options and ini keys, and reading them into one value.

:func:`add_options` declares the ``tempinbox`` option group and its ini keys;
:func:`resolve_settings` reads them, with ``$TEMPINBOX_URL`` and what the xdist
controller hands its workers, into one :class:`Settings`: everything the
session needs from pytest's configuration. A bad value is a
:class:`pytest.UsageError` that names the option.
"""

from __future__ import annotations

import os
from typing import Literal

import pytest

from ..config import (
    DEFAULT_DOMAIN,
    DEFAULT_EVENT_LOOP,
    DEFAULT_HOST,
    DEFAULT_STORE,
    EVENT_LOOPS,
    STORE_HELP,
    ServerConfig,
    parse_store,
)
from ..limits import LIMIT_SETTINGS, format_limit, parse_limit
from ..smtp_security import (
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

__all__ = [
    "KEEP_MAILERS_INI",
    "URL_ENVIRONMENT_VARIABLE",
    "Settings",
    "add_options",
    "resolve_settings",
]

URL_ENVIRONMENT_VARIABLE = "TEMPINBOX_URL"
KEEP_MAILERS_INI = "tempinbox_django_keep_mailers"
"""The ini key naming the Django ``MAILERS`` that ``tempinbox_django`` leaves as they are."""
_OPTIONS = (
    ("port", "port of the HTTP API (0: a free port)", "0"),
    ("smtp_port", "port of the SMTP listener (0: a free port)", "0"),
    ("host", "address both listeners bind", DEFAULT_HOST),
    ("domain", "domain of generated addresses", DEFAULT_DOMAIN),
    ("tls", TLS_HELP, DEFAULT_TLS),
    ("smtp_auth", SMTP_AUTH_HELP, DEFAULT_SMTP_AUTH),
    ("store", STORE_HELP + "; Redis needs the redis extra", DEFAULT_STORE),
    (
        "dkim_keys",
        "a JSON file mapping DNS names to DKIM TXT records: the keys that messages' DKIM "
        "signatures are verified with (never real DNS; needs the dkim extra)",
        None,
    ),
    (
        "loop",
        "the event loop of the server started here: auto (uvloop when installed: the "
        "uvloop extra; asyncio's own otherwise), asyncio or uvloop; no effect with "
        "--tempinbox-url",
        DEFAULT_EVENT_LOOP,
    ),
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
_KEEP_MAILERS_HELP = (
    "Django 6.1 and later: the MAILERS aliases that tempinbox_django leaves as they are, "
    "separated by spaces (default: none: every mailer sends to the server)"
)
_UI_HELP = (
    "start the server when the session starts and print the URL of its inbox viewer, "
    "a web page to watch mail arrive (default: off)"
)


class Settings:
    """The plugin's configuration, resolved: command line, then environment, then ini.

    ``url`` is the remote server's API URL (None: start one in this process);
    ``worker`` says that this process is an xdist worker, which uses the server
    its controller started. ``artifacts`` is ``--tempinbox-artifacts`` made
    absolute, ``keep`` is ``--tempinbox-keep`` and ``ui`` ``--tempinbox-ui``;
    ``event_loop`` (``--tempinbox-loop``) is one of
    :data:`~pytest_tempinbox.config.EVENT_LOOPS`, for a server started here.
    """

    __slots__ = (
        "artifacts",
        "dkim_keys",
        "domain",
        "event_loop",
        "host",
        "keep",
        "limits",
        "port",
        "smtp_auth",
        "smtp_port",
        "store",
        "tls",
        "ui",
        "url",
        "worker",
    )

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
        store: str = DEFAULT_STORE,
        dkim_keys: dict[str, str] | None = None,
        event_loop: str = DEFAULT_EVENT_LOOP,
        ui: bool = False,
        keep: bool = False,
        artifacts: str | None = None,
        worker: bool = False,
    ) -> None:
        self.port = port
        self.smtp_port = smtp_port
        self.host = host
        self.domain = domain
        self.url = url
        self.limits = {} if limits is None else limits
        self.tls = tls
        self.smtp_auth = SMTPAuth() if smtp_auth is None else smtp_auth
        self.store = store
        self.dkim_keys = {} if dkim_keys is None else dkim_keys
        self.event_loop = event_loop
        self.ui = ui
        self.keep = keep
        self.artifacts = artifacts
        self.worker = worker

    def server_config(self) -> ServerConfig:
        """The configuration of the server to start in this process."""
        return ServerConfig(
            host=self.host,
            smtp_port=self.smtp_port,
            api_port=self.port,
            domains=[self.domain],
            tls=self.tls,
            smtp_auth=self.smtp_auth,
            store=self.store,
            dkim_keys=self.dkim_keys,
            event_loop=self.event_loop,
        ).replace(**self.limits)


def add_options(parser: pytest.Parser) -> None:
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
    parser.addini(KEEP_MAILERS_INI, _KEEP_MAILERS_HELP, type="args", default=[])
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


def resolve_settings(config: pytest.Config) -> Settings:
    """Read and check the plugin's settings; a bad value is a :class:`pytest.UsageError`."""
    workerinput = getattr(config, "workerinput", None)
    given = {} if workerinput is None else workerinput
    url = (given.get("tempinbox_url") or _setting(config, "url") or "").rstrip("/") or None
    return Settings(
        port=_port(config, "port"),
        smtp_port=_port(config, "smtp_port"),
        host=_setting(config, "host") or DEFAULT_HOST,
        domain=(_setting(config, "domain") or DEFAULT_DOMAIN).lower(),
        url=url,
        limits=_limits(config),
        tls=_tls(config, starts_a_server=url is None),
        smtp_auth=_smtp_auth(config),
        store=_store(config),
        dkim_keys=_dkim_keys(config),
        event_loop=_event_loop(config),
        ui=bool(config.getoption("tempinbox_ui") or config.getini("tempinbox_ui")),
        keep=bool(config.getoption("tempinbox_keep") or config.getini("tempinbox_keep")),
        artifacts=_artifacts(config, given.get("tempinbox_artifacts")),
        worker=workerinput is not None,
    )


def _artifacts(config: pytest.Config, from_controller: str | None) -> str | None:
    """``--tempinbox-artifacts``, absolute (relative to where pytest was run); xdist's own."""
    given = from_controller or _setting(config, "artifacts")
    return None if not given else str(config.invocation_params.dir / given)


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


def _store(config: pytest.Config) -> str:
    try:
        return parse_store(_setting(config, "store") or DEFAULT_STORE)
    except ValueError as exc:
        raise pytest.UsageError(f"--tempinbox-store: {exc}") from None


def _dkim_keys(config: pytest.Config) -> dict[str, str]:
    path = _setting(config, "dkim_keys")
    if not path:
        return {}
    from ..checks.dkim import load_dkim_keys

    try:
        return load_dkim_keys(config.invocation_params.dir / path)
    except ValueError as exc:
        raise pytest.UsageError(f"--tempinbox-dkim-keys: {exc}") from None


def _event_loop(config: pytest.Config) -> str:
    # Read whether or not a server starts here: a bad value is a slip either way.
    text = _setting(config, "loop") or DEFAULT_EVENT_LOOP
    kind = text.lower()
    if kind not in EVENT_LOOPS:
        choices = ", ".join(EVENT_LOOPS)
        raise pytest.UsageError(f"--tempinbox-loop: {text!r} is not an event loop ({choices})")
    return kind


def _smtp_auth(config: pytest.Config) -> SMTPAuth:
    try:
        return parse_smtp_auth(_setting(config, "smtp_auth") or DEFAULT_SMTP_AUTH)
    except ValueError as exc:
        raise pytest.UsageError(f"--tempinbox-smtp-auth: {exc}") from None
