"""The plugin's settings: its options and ini keys, and reading them into one value.

:func:`add_options` declares the ``tempinbox`` option group and its ini keys;
:func:`resolve_settings` reads them, with ``$TEMPINBOX_URL`` and what the xdist
controller hands its workers, into one :class:`Settings`: everything the
session needs from pytest's configuration. A bad value is a
:class:`pytest.UsageError` that names where it came from (:mod:`.sources`):
the flag, the ini key and its file, or the environment variable. The module
is long because every option is declared and read here, in one place.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeVar

import pytest

from ..config import (
    DEFAULT_DOMAIN,
    DEFAULT_EVENT_LOOP,
    DEFAULT_HOST,
    DEFAULT_STORE,
    EVENT_LOOPS,
    STORE_HELP,
    ServerConfig,
    domain_name,
    parse_provider_key,
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
from .sources import URL_ENVIRONMENT_VARIABLE, Origin, given, given_switch
from .tenants_option import TENANTS_HELP, read_tenants

__all__ = [
    "KEEP_MAILERS_INI",
    "URL_ENVIRONMENT_VARIABLE",
    "Settings",
    "add_options",
    "resolve_settings",
]

if TYPE_CHECKING:
    from ..tenants import Tenants

_T = TypeVar("_T")

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
        "token",
        "a tenant's API token for the server at --tempinbox-url, when it has tenants; "
        "also $TEMPINBOX_TOKEN",
        None,
    ),
    ("tenants", TENANTS_HELP, None),
    (
        "artifacts",
        "save the mail of each failing test to this folder, one subfolder per test: "
        "each message as .eml and .html, and a summary.txt",
        None,
    ),
)
_READERS_HELP = (
    "start the server's IMAP and POP3 listeners on free ports, for tempinbox.imap and "
    "tempinbox.pop3 (default: off)"
)
_MCP_HELP = (
    "serve the MCP endpoint for agents at /mcp on the server's API port "
    "(the mcp extra) (default: off)"
)
_NO_TRANSCRIPTS_HELP = "keep no SMTP transcripts: Message.transcript() answers 404 (default: kept)"
_KEEP_HELP = (
    "do not delete the inboxes of failing tests; at the end of the run, print their viewer "
    "links and keep the server running until Ctrl-C (on a terminal, outside CI) (default: off)"
)
_KEEP_MAILERS_HELP = (
    "Django 6.1 and later: the MAILERS aliases that tempinbox_django leaves as they are, "
    "separated by spaces (default: none: every mailer sends to the server)"
)
_PROVIDER_KEY_HELP = (
    "NAME=KEY: the one API key a provider's endpoints accept on the server started here "
    "(e.g. sendgrid=SG.test), others get the provider's own 401/403; repeat for several "
    "(default: any key)"
)
_WEBHOOK_HELP = (
    "URL: POST each delivery and inbox deletion of the server started here to this http(s) "
    "URL, signed with $TEMPINBOX_WEBHOOK_SECRET when set; repeat for several (default: none)"
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
    :data:`~pytest_tempinbox.config.EVENT_LOOPS`, for a server started here;
    ``provider_keys`` (``--tempinbox-provider-key``) the one key each keyed
    provider accepts there. ``token`` (``--tempinbox-token``) is a tenant's,
    for a server with tenants: a remote one, or the one started here with
    ``tenants`` (``--tempinbox-tenants``).
    ``origins`` says where the settings that can fail later came from (``url``,
    ``port``, ``smtp_port``, ``loop``), for the errors that name them.
    """

    __slots__ = (
        "artifacts",
        "dkim_keys",
        "domain",
        "event_loop",
        "host",
        "keep",
        "limits",
        "mcp",
        "origins",
        "port",
        "provider_keys",
        "readers",
        "smtp_auth",
        "smtp_port",
        "store",
        "tenants",
        "tls",
        "token",
        "transcripts",
        "ui",
        "url",
        "webhooks",
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
        origins: dict[str, Origin] | None = None,
        provider_keys: dict[str, str] | None = None,
        token: str | None = None,
        tenants: Tenants | None = None,
        readers: bool = False,
        webhooks: list[str] | None = None,
        mcp: bool = False,
        transcripts: bool = True,
    ) -> None:
        self.readers = readers
        self.mcp, self.transcripts = mcp, transcripts
        self.webhooks = webhooks or []
        self.port = port
        self.token, self.tenants = token, tenants
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
        self.origins = {} if origins is None else origins
        self.provider_keys = {} if provider_keys is None else provider_keys

    def origin(self, name: str) -> Origin:
        """Where the setting ``name`` came from; its flag when it was given nowhere."""
        return self.origins.get(name) or Origin.flag(name)

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
            provider_keys=self.provider_keys,
            tenants=self.tenants,
            pop3_port=0 if self.readers else None,
            imap_port=0 if self.readers and _imap_served() else None,
            webhooks=self.webhooks,
            webhook_secret=os.environ.get("TEMPINBOX_WEBHOOK_SECRET") if self.webhooks else None,
            mcp=self.mcp,
            transcripts=self.transcripts,
        ).replace(**self.limits)


_SWITCHES = {
    "ui": _UI_HELP,
    "keep": _KEEP_HELP,
    "readers": _READERS_HELP,
    "mcp": _MCP_HELP,
    "no_transcripts": _NO_TRANSCRIPTS_HELP,
}
"""The plugin's on/off options: ``--tempinbox-NAME`` and the ini key ``tempinbox_NAME``."""


def add_options(parser: pytest.Parser) -> None:
    """Add the ``tempinbox`` option group and its ini keys."""
    group = parser.getgroup("tempinbox", "disposable email inboxes (pytest-tempinbox)")
    for name, help, default in _OPTIONS:
        flag = "--tempinbox-" + name.replace("_", "-")
        shown = f" (default: {default})" if default else ""
        group.addoption(flag, dest=f"tempinbox_{name}", default=None, help=help + shown)
        kind = _number_type(seconds=False) if name.endswith("port") else "string"
        parser.addini(f"tempinbox_{name}", help + shown, type=kind, default=None)
    for name, help in _SWITCHES.items():
        flag = "--tempinbox-" + name.replace("_", "-")
        group.addoption(flag, action="store_true", dest=f"tempinbox_{name}", help=help)
        parser.addini(f"tempinbox_{name}", help, type="bool", default=False)
    group.addoption(
        "--tempinbox-provider-key",
        action="append",
        dest="tempinbox_provider_key",
        default=[],
        metavar="NAME=KEY",
        help=_PROVIDER_KEY_HELP,
    )
    parser.addini("tempinbox_provider_key", _PROVIDER_KEY_HELP, type="linelist", default=[])
    group.addoption(
        "--tempinbox-webhook",
        action="append",
        dest="tempinbox_webhook",
        default=[],
        metavar="URL",
        help=_WEBHOOK_HELP,
    )
    parser.addini("tempinbox_webhook", _WEBHOOK_HELP, type="linelist", default=[])
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
    from_controller = {} if workerinput is None else workerinput
    url = (from_controller.get("tempinbox_url") or _setting(config, "url") or "").rstrip("/")
    origins = {name: given(config, name)[1] for name in ("url", "port", "smtp_port", "loop")}
    return Settings(
        port=_port(config, "port"),
        smtp_port=_port(config, "smtp_port"),
        host=_setting(config, "host") or DEFAULT_HOST,
        domain=_domain(config),
        url=url or None,
        limits=_limits(config),
        tls=_tls(config, starts_a_server=not url),
        smtp_auth=_smtp_auth(config),
        store=_store(config),
        dkim_keys=_dkim_keys(config),
        event_loop=_event_loop(config),
        ui=given_switch(config, "ui"),
        keep=given_switch(config, "keep"),
        readers=given_switch(config, "readers"),
        artifacts=_artifacts(config, from_controller.get("tempinbox_artifacts")),
        worker=workerinput is not None,
        origins=origins,
        provider_keys=_provider_keys(config),
        token=given(config, "token")[0],
        tenants=read_tenants(config, given(config, "token")[0], remote=bool(url)),
        webhooks=_webhooks(config),
        mcp=given_switch(config, "mcp"),
        transcripts=not given_switch(config, "no_transcripts"),
    )


def _imap_served() -> bool:
    """Tell whether this installation has the IMAP reader (found, not imported)."""
    import importlib.util

    return importlib.util.find_spec("pytest_tempinbox.server.readers.imap") is not None


def _domain(config: pytest.Config) -> str:
    """``--tempinbox-domain``: a host name, an IDN as its A-labels (``domain_name``)."""
    return _parsed(config, "domain", domain_name, DEFAULT_DOMAIN)


def _parsed(config: pytest.Config, name: str, parse: Callable[[str], _T], default: str) -> _T:
    """The setting ``name`` (or ``default``) read by ``parse``.

    ``parse``'s :class:`ValueError` is a usage error naming where the value came from.
    """
    text, origin = given(config, name)
    try:
        return parse(text or default)
    except ValueError as exc:
        raise pytest.UsageError(f"{origin}: {exc}") from None


def _artifacts(config: pytest.Config, from_controller: str | None) -> str | None:
    """``--tempinbox-artifacts``, absolute (relative to where pytest was run); xdist's own."""
    folder = from_controller or _setting(config, "artifacts")
    return None if not folder else str(config.invocation_params.dir / folder)


def _setting(config: pytest.Config, name: str) -> str | None:
    """The text of the setting ``name``, wherever it came from (see :func:`.sources.given`)."""
    return given(config, name)[0]


def _port(config: pytest.Config, name: str) -> int:
    text, origin = given(config, name)
    text = text or "0"
    if not text.isdigit() or int(text) > 65535:
        raise pytest.UsageError(f"{origin}: {text!r} is not a port number (0-65535)")
    return int(text)


def _limits(config: pytest.Config) -> dict[str, float | None]:
    limits = {}
    for setting in LIMIT_SETTINGS:
        text, origin = given(config, setting.flag.replace("-", "_"))
        if text is None:
            continue
        try:
            limits[setting.name] = parse_limit(setting, text)
        except ValueError as exc:
            raise pytest.UsageError(f"{origin}: {exc}") from None
    return limits


def _tls(config: pytest.Config, starts_a_server: bool) -> str:
    mode = _parsed(config, "tls", parse_tls, DEFAULT_TLS)
    if mode != "off" and starts_a_server and not tls_supported():
        raise pytest.UsageError(f"{given(config, 'tls')[1].given(mode)}: {TLS_EXTRA_MISSING}")
    return mode


def _store(config: pytest.Config) -> str:
    return _parsed(config, "store", parse_store, DEFAULT_STORE)


def _dkim_keys(config: pytest.Config) -> dict[str, str]:
    path, origin = given(config, "dkim_keys")
    if not path:
        return {}
    from ..checks.dkim import load_dkim_keys

    try:
        return load_dkim_keys(config.invocation_params.dir / path)
    except ValueError as exc:
        raise pytest.UsageError(f"{origin}: {exc}") from None


def _event_loop(config: pytest.Config) -> str:
    # Read whether or not a server starts here: a bad value is a slip either way.
    given_text, origin = given(config, "loop")
    text = given_text or DEFAULT_EVENT_LOOP
    kind = text.lower()
    if kind not in EVENT_LOOPS:
        choices = ", ".join(EVENT_LOOPS)
        raise pytest.UsageError(f"{origin}: {text!r} is not an event loop ({choices})")
    return kind


def _smtp_auth(config: pytest.Config) -> SMTPAuth:
    text, origin = given(config, "smtp_auth")
    try:
        return parse_smtp_auth(text or DEFAULT_SMTP_AUTH)
    except ValueError as exc:
        raise pytest.UsageError(f"{origin}: {exc}") from None


def _provider_keys(config: pytest.Config) -> dict[str, str]:
    """``--tempinbox-provider-key NAME=KEY`` (repeated), else the ini key's lines; no key shown."""
    flags: list[str] = config.getoption("tempinbox_provider_key") or []
    origin = "--tempinbox-provider-key" if flags else "ini key tempinbox_provider_key"
    keys = {}
    for text in flags or config.getini("tempinbox_provider_key"):
        try:
            name, key = parse_provider_key(text)
        except ValueError as exc:
            raise pytest.UsageError(f"{origin}: {exc}") from None
        keys[name] = key
    return keys


def _webhooks(config: pytest.Config) -> list[str]:
    """``--tempinbox-webhook URL`` (repeated), else the ini key's lines; each checked."""
    flags: list[str] = config.getoption("tempinbox_webhook") or []
    urls: list[str] = flags or config.getini("tempinbox_webhook")
    if not urls:
        return []
    from ..webhook_urls import check_webhook_url

    origin = "--tempinbox-webhook" if flags else "ini key tempinbox_webhook"
    try:
        return [check_webhook_url(url) for url in urls]
    except ValueError as exc:
        raise pytest.UsageError(f"{origin}: {exc}") from None
