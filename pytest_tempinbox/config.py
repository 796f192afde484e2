"""One server configuration: every setting with its default, read once and handed down.

The command line (``_cli``), the pytest plugin (its options, ini keys and
environment) and :class:`~pytest_tempinbox.InboxServer`'s keywords each build a
:class:`ServerConfig`; the server hands that same object to the store, the SMTP
listener and the HTTP app, which read what they need from it. Each default is
written once, here or in :mod:`.limits` and :mod:`.smtp_security`. Standard
library only, so that the plugin and the command line can build one without
importing the server. The module is long because
:class:`ServerConfig` is the one list of every setting, each documented.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .limits import (
    COMMAND_LINE_LIMIT,
    DEFAULT_DATA_LINE_LIMIT,
    DEFAULT_HEARTBEAT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_LISTEN_BACKLOG,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_MESSAGES_PER_INBOX,
    DEFAULT_MAX_RECIPIENTS,
    DEFAULT_MAX_STORED_BYTES,
    DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS_PER_INBOX,
    DEFAULT_MESSAGE_SIZE_LIMIT,
)
from .smtp_security import DEFAULT_SMTP_AUTH, DEFAULT_TLS, SMTPAuth, parse_smtp_auth, parse_tls

if TYPE_CHECKING:
    from .quotas import Quotas
    from .rate_limits import Limits, RateLimits
    from .tenants import Tenants

__all__ = [
    "DEFAULT_DOMAIN",
    "DEFAULT_EVENT_LOOP",
    "DEFAULT_HOST",
    "DEFAULT_STORE",
    "EVENT_LOOPS",
    "STORE_HELP",
    "ServerConfig",
    "domain_name",
    "parse_provider_key",
    "parse_public_smtp",
    "parse_store",
]

DEFAULT_DOMAIN = "tempinbox.test"
"""The domain of generated addresses when none is given (``.test`` is reserved, RFC 2606)."""
DEFAULT_HOST = "127.0.0.1"
"""The address both listeners bind when none is given: loopback only."""
DEFAULT_STORE = "memory"
"""Where inboxes live when not told: in the server's own memory."""
EVENT_LOOPS = ("auto", "asyncio", "uvloop")
"""The server's event loops: ``auto`` takes uvloop where it is installed, asyncio's otherwise."""
DEFAULT_EVENT_LOOP = "auto"
"""The server's event loop when not told."""
STORE_HELP = (
    "where inboxes live: memory (this process), or redis://[:PASSWORD@]HOST:PORT/DB "
    "(also rediss://) for inboxes that several servers share and that outlive a restart"
)


# A label of a host name (RFC 1123 2.1): letters, digits and inner hyphens, 63 at most.
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_MAX_DOMAIN = 253  # characters of a domain name without its root dot (RFC 1035 2.3.4)


def domain_name(text: str) -> str:
    """Return domain name ``text`` as the server serves it: lowercase, an IDN as A-labels.

    ``bücher.example`` becomes ``xn--bcher-kva.example`` (IDNA 2008 with the
    UTS 46 mapping, by the ``idna`` package that ``requests`` brings; imported
    only for a name that is not ASCII). Raise ValueError with a one-line reason
    for anything that is not a host name: empty, white space, ``@``, an empty
    label (a leading, trailing or double dot), a label over 63 characters or
    with other characters than letters, digits and inner hyphens, a name over
    253 characters, an ``xn--`` label that is no valid A-label.
    """
    if not text:
        raise ValueError("a domain name cannot be empty")
    name = text
    if not text.isascii():
        import idna  # only for an IDN: most servers never need it

        try:
            name = idna.encode(text, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise ValueError(f"{text[:80]!r} is not a domain name: {exc}") from None
    name = name.lower()
    labels = name.split(".")
    bad = next((label for label in labels if not _LABEL.fullmatch(label)), None)
    if bad is not None or len(name) > _MAX_DOMAIN:
        why = (
            f"it is over {_MAX_DOMAIN} characters"
            if bad is None
            else "it has an empty label (a leading, trailing or double dot)"
            if not bad
            else f"label {bad[:80]!r} is over 63 characters"
            if len(bad) > 63
            else f"label {bad[:80]!r} holds more than letters, digits and inner hyphens"
        )
        raise ValueError(f"{text[:80]!r} is not a domain name: {why}")
    if "xn--" in name:
        _check_a_labels(text, labels)
    return name


def _domain_names(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as :func:`domain_name` gives them; ValueError naming a bad one."""
    return tuple(domain_name(name) for name in names)


def _check_a_labels(text: str, labels: list[str]) -> None:
    """Raise ValueError unless each ``xn--`` label of ``labels`` decodes to a valid U-label."""
    import idna

    for label in labels:
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except idna.IDNAError as exc:
                raise ValueError(f"{text[:80]!r} is not a domain name: {exc}") from None


def parse_public_smtp(text: str) -> tuple[str, int]:
    """Read ``HOST:PORT`` (``[::1]:25`` for IPv6); raise ValueError with a one-line reason."""
    host, colon, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"{text!r} is not HOST:PORT (the SMTP address clients are to use)")
    return host, int(port)


def parse_store(text: str) -> str:
    """Read a store setting: ``memory`` or a ``redis://``/``rediss://`` URL; else ValueError."""
    value = text.strip()
    if value.lower() == DEFAULT_STORE:
        return DEFAULT_STORE
    scheme, separator, rest = value.partition("://")
    if scheme.lower() not in ("redis", "rediss") or not separator or not rest.strip("/"):
        raise ValueError(
            "expected memory or a Redis URL such as redis://127.0.0.1:6379/0 (also rediss://)"
        )
    return value


class ServerConfig:
    """Everything a server is started with; immutable once built.

    The keywords are those of :class:`~pytest_tempinbox.InboxServer`, which
    documents each. ``tls`` and ``smtp_auth`` are read here (``smtp_auth`` may
    also be an :class:`~pytest_tempinbox.smtp_security.SMTPAuth` already read),
    so a bad value raises :class:`ValueError` before anything starts, as does an
    ``event_heartbeat`` not above 0 or a ``store`` that is neither ``memory``
    nor a Redis URL. ``repr`` shows neither the AUTH password nor Redis's.
    ``public_smtp`` is the SMTP address ``GET /api/info`` reports instead of
    the listener's own (``(host, port)``): a load balancer's, for servers
    behind one, so that clients which discover the server send through it.
    ``dkim_keys`` maps DNS names to the TXT records that DKIM signatures are
    verified with (kept as sorted pairs, so that the configuration stays
    hashable); ``link_checks`` False makes the link-check route refuse.
    ``event_loop`` is one of :data:`EVENT_LOOPS`: ``auto`` serves on uvloop
    when it is installed, on asyncio's loop otherwise. ``provider_keys`` maps a
    provider's name (:data:`~pytest_tempinbox.values.PROVIDERS`) to the one API
    key its endpoints accept (kept as sorted pairs); ``repr`` shows no key.
    ``tls_cert``/``tls_key`` are PEM files of the SMTP listener's certificate
    (instead of a throwaway CA's; a TLS mode must be on), ``api_tls_cert``/
    ``api_tls_key`` those of the API's, served over HTTPS: each pair given whole.
    ``tenants``, a tenants file's path or its :class:`~pytest_tempinbox.tenants.Tenants`,
    makes the API ask every caller for a token (``docs/tenants.md``).
    ``rate_limits`` (a :class:`~pytest_tempinbox.rate_limits.RateLimits`) sets
    the rates of requests and SMTP connections; with tenants they hold by
    default (:meth:`rate_limits_in_force`).
    ``quotas`` (:class:`~pytest_tempinbox.quotas.Quotas`) are the server's
    values of the quotas (the ``--quota-*`` flags): with tenants, over the
    defaults and under each tenant's own; without, they hold for everyone.
    ``transcripts`` keeps each message's SMTP conversation (``docs/transcripts.md``).
    ``compress_read_messages`` keeps a message's raw bytes compressed once it
    has been read, on the memory store (``docs/limits.md``, "Memory under load").
    ``imap_port`` and ``pop3_port`` start the IMAP and POP3 readers (0: a free
    port; None: off; ``docs/readers.md``).
    ``mcp`` serves the MCP endpoint for agents at ``/mcp`` on the API's port
    (the ``mcp`` extra; ``docs/mcp.md``).
    ``webhooks`` are the ``http://`` or ``https://`` URLs that hear every
    delivery and deletion, signed with ``webhook_secret`` when given
    (``docs/webhooks.md``); ``repr`` never shows the secret.
    """

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = (
        "allowed_hosts",
        "api_port",
        "api_tls_cert",
        "api_tls_key",
        "compress_read_messages",
        "data_line_limit",
        "dkim_keys",
        "domains",
        "event_heartbeat",
        "event_loop",
        "host",
        "hostname",
        "imap_port",
        "inbox_ttl",
        "link_checks",
        "listen_backlog",
        "max_connections",
        "max_messages_per_inbox",
        "max_recipients",
        "max_stored_bytes",
        "max_streams",
        "max_streams_per_inbox",
        "mcp",
        "message_size_limit",
        "pop3_port",
        "provider_keys",
        "public_smtp",
        "quotas",
        "rate_limits",
        "smtp_auth",
        "smtp_port",
        "smtp_timeout",
        "store",
        "tenants",
        "tls",
        "tls_cert",
        "tls_key",
        "transcripts",
        "webhook_secret",
        "webhooks",
    )

    def __init__(
        self,
        *,
        host: str = DEFAULT_HOST,
        smtp_port: int = 0,
        api_port: int = 0,
        domains: Iterable[str] = (DEFAULT_DOMAIN,),
        hostname: str | None = None,
        message_size_limit: int = DEFAULT_MESSAGE_SIZE_LIMIT,
        max_recipients: int = DEFAULT_MAX_RECIPIENTS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        smtp_timeout: float = DEFAULT_IDLE_TIMEOUT,
        data_line_limit: int = DEFAULT_DATA_LINE_LIMIT,
        max_messages_per_inbox: int = DEFAULT_MAX_MESSAGES_PER_INBOX,
        max_stored_bytes: int = DEFAULT_MAX_STORED_BYTES,
        inbox_ttl: float | None = None,
        max_streams: int = DEFAULT_MAX_STREAMS,
        max_streams_per_inbox: int = DEFAULT_MAX_STREAMS_PER_INBOX,
        listen_backlog: int = DEFAULT_LISTEN_BACKLOG,
        allowed_hosts: Iterable[str] = (),
        tls: str = DEFAULT_TLS,
        smtp_auth: str | SMTPAuth = DEFAULT_SMTP_AUTH,
        event_heartbeat: float = DEFAULT_HEARTBEAT,
        store: str = DEFAULT_STORE,
        public_smtp: tuple[str, int] | None = None,
        dkim_keys: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        link_checks: bool = True,
        event_loop: str = DEFAULT_EVENT_LOOP,
        provider_keys: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        tls_cert: str | None = None,
        tls_key: str | None = None,
        api_tls_cert: str | None = None,
        api_tls_key: str | None = None,
        tenants: str | Tenants | None = None,
        rate_limits: RateLimits | None = None,
        quotas: Quotas | None = None,
        transcripts: bool = True,
        compress_read_messages: bool = False,
        imap_port: int | None = None,
        pop3_port: int | None = None,
        mcp: bool = False,
        webhooks: Iterable[str] = (),
        webhook_secret: str | None = None,
    ) -> None:
        if not event_heartbeat > 0:
            raise ValueError(f"event_heartbeat must be above 0 seconds, not {event_heartbeat!r}")
        if event_loop not in EVENT_LOOPS:
            raise ValueError(f"{event_loop!r} is not an event loop ({', '.join(EVENT_LOOPS)})")
        self.host: str = host
        self.smtp_port: int = smtp_port
        self.api_port: int = api_port
        self.domains: tuple[str, ...] = _domain_names(domains)
        self.hostname: str | None = None if hostname is None else _domain_names([hostname])[0]
        self.message_size_limit: int = message_size_limit
        self.max_recipients: int = max_recipients
        self.max_connections: int = max_connections
        self.smtp_timeout: float = smtp_timeout
        self.data_line_limit: int = data_line_limit
        self.max_messages_per_inbox: int = max_messages_per_inbox
        self.max_stored_bytes: int = max_stored_bytes
        self.inbox_ttl: float | None = inbox_ttl
        self.max_streams: int = max_streams
        self.max_streams_per_inbox: int = max_streams_per_inbox
        self.listen_backlog: int = listen_backlog
        self.allowed_hosts: tuple[str, ...] = tuple(name.lower() for name in allowed_hosts)
        self.tls: str = parse_tls(tls)
        self.smtp_auth: SMTPAuth = (
            smtp_auth if isinstance(smtp_auth, SMTPAuth) else parse_smtp_auth(smtp_auth)
        )
        self.event_heartbeat: float = event_heartbeat
        self.store: str = parse_store(store)
        self.public_smtp: tuple[str, int] | None = public_smtp
        pairs = dkim_keys.items() if isinstance(dkim_keys, Mapping) else dkim_keys
        self.dkim_keys: tuple[tuple[str, str], ...] = tuple(sorted(pairs))
        self.link_checks: bool = link_checks
        self.event_loop: str = event_loop
        keys = dict(provider_keys)  # a provider given twice: its last key
        self.provider_keys: tuple[tuple[str, str], ...] = tuple(
            sorted(_provider_key(name, key) for name, key in keys.items())
        )
        if (tls_cert, tls_key, api_tls_cert, api_tls_key) != (None, None, None, None):
            from .certificate_settings import check_certificate_files

            check_certificate_files(self.tls, tls_cert, tls_key, api_tls_cert, api_tls_key)
        self.tls_cert: str | None = tls_cert
        self.tls_key: str | None = tls_key
        self.api_tls_cert: str | None = api_tls_cert
        self.api_tls_key: str | None = api_tls_key
        self.tenants: Tenants | None = _tenants(tenants) if isinstance(tenants, str) else tenants
        self.rate_limits: RateLimits | None = rate_limits
        if self.tenants is not None and self.tenants.smtp and self.smtp_auth.mode == "none":
            raise ValueError(
                "the tenants file gives SMTP credentials, and --smtp-auth none offers no AUTH "
                "to log in with: choose any or USER:PASSWORD"
            )
        self.quotas: Quotas | None = quotas
        """The ``--quota-*`` flags' values; None: none given."""
        self.transcripts = transcripts
        self.compress_read_messages: bool = compress_read_messages
        """Keep read messages' raw bytes compressed (memory store; on in the standalone command)."""
        self.imap_port: int | None = imap_port
        self.pop3_port: int | None = pop3_port
        self.mcp: bool = mcp
        """Serve the MCP endpoint at ``/mcp`` (``--mcp``, the ``mcp`` extra; docs/mcp.md)."""
        self.webhooks: tuple[str, ...] = _webhook_urls(webhooks) if webhooks else ()
        """The URLs every delivery and deletion is POSTed to (``--webhook``; docs/webhooks.md)."""
        self.webhook_secret: str | None = webhook_secret or None
        """The key of the webhooks' HMAC-SHA256 signature (``--webhook-secret``); never shown."""

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name):
            raise AttributeError(f"a ServerConfig is immutable: use replace({name}=...)")
        object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> ServerConfig:
        """A copy with ``changes`` (keywords of the constructor) applied, and read again."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return ServerConfig(**values)

    def rate_limits_in_force(self) -> Limits | None:
        """The rate limits the server holds to; None (nothing imported) when none does."""
        if self.rate_limits is None and self.tenants is None:
            return None
        from .rate_limits import RateLimits

        given = self.rate_limits or RateLimits()
        return given.resolved(None if self.tenants is None else self.tenants.rate_limits)

    def limits(self) -> dict[str, float | None]:
        """Every limit, by the names ``GET /api/info`` reports them under."""
        return {
            "message_size": self.message_size_limit,
            "recipients": self.max_recipients,
            "command_line": COMMAND_LINE_LIMIT,
            "data_line": self.data_line_limit,
            "connections": self.max_connections,
            "idle_timeout": self.smtp_timeout,
            "messages_per_inbox": self.max_messages_per_inbox,
            "stored_bytes": self.max_stored_bytes,
            "inbox_ttl": self.inbox_ttl,
            "streams": self.max_streams,
            "streams_per_inbox": self.max_streams_per_inbox,
            "listen_backlog": self.listen_backlog,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerConfig):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self.__slots__))

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={_shown(name, getattr(self, name))!r}" for name in sorted(self.__slots__)
        )
        return f"ServerConfig({fields})"


def parse_provider_key(text: str) -> tuple[str, str]:
    """Read ``NAME=KEY`` (``--provider-key``) into its pair; :class:`ValueError` if it is not."""
    name, equals, key = text.partition("=")
    if not equals:
        raise ValueError("a provider key is NAME=KEY, e.g. sendgrid=SG.test (no '=' given)")
    return _provider_key(name.strip().lower(), key)


def _provider_key(name: str, key: str) -> tuple[str, str]:
    from .values import PROVIDERS

    if name not in PROVIDERS:
        raise ValueError(
            f"no provider {name[:40]!r} to key: the server answers {', '.join(PROVIDERS)}"
        )
    if not key or not key.isprintable() or key != key.strip():
        raise ValueError(f"the {name} key must be printable characters, not empty")
    return name, key


def _tenants(path: str) -> Tenants:
    from .tenants import Tenants  # hashlib and secrets: only a server with tenants needs them

    return Tenants.from_file(path)


def _webhook_urls(urls: Iterable[str]) -> tuple[str, ...]:
    from .webhook_urls import check_webhook_url  # only a server with webhooks reads URLs

    return tuple(check_webhook_url(url) for url in ([urls] if isinstance(urls, str) else urls))


def _shown(name: str, value: Any) -> Any:
    """A setting as ``repr`` shows it: a Redis URL's password hidden, no provider key."""
    if name == "webhook_secret":
        return None if value is None else "***"
    if name == "provider_keys":
        return [(provider, "***") for provider, _ in value]
    if name == "store" and "@" in value:
        scheme, _, rest = value.partition("://")
        return f"{scheme}://***@{rest.rpartition('@')[2]}"
    return value
