"""The server's limits: their defaults, and the settings that change them.

Standard library only, so that the command line and the pytest plugin can
describe every limit (flags, ini keys, help) without importing the server.
docs/limits.md says what a client sees when it hits each one.
"""

from __future__ import annotations

__all__ = [
    "COMMAND_LINE_LIMIT",
    "DEFAULT_DATA_LINE_LIMIT",
    "DEFAULT_HEARTBEAT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_LISTEN_BACKLOG",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_MESSAGES_PER_INBOX",
    "DEFAULT_MAX_RECIPIENTS",
    "DEFAULT_MAX_STORED_BYTES",
    "DEFAULT_MAX_STREAMS",
    "DEFAULT_MAX_STREAMS_PER_INBOX",
    "DEFAULT_MESSAGE_SIZE_LIMIT",
    "LIMIT_SETTINGS",
    "MAX_FAULTS_PER_INBOX",
    "MAX_FAULT_DELAY",
    "MAX_FAULT_MESSAGE",
    "MAX_FAULT_TIMES",
    "MAX_FILTER_LENGTH",
    "MAX_TTL",
    "MAX_WAIT",
    "STANDALONE_INBOX_TTL",
    "STANDALONE_LISTEN_BACKLOG",
    "STANDALONE_MAX_CONNECTIONS",
    "STANDALONE_MAX_STREAMS",
    "LimitSetting",
    "format_limit",
    "parse_limit",
]

DEFAULT_MESSAGE_SIZE_LIMIT = 10 * 1024 * 1024
DEFAULT_MAX_RECIPIENTS = 100
DEFAULT_MAX_CONNECTIONS = 100
DEFAULT_IDLE_TIMEOUT = 300.0
DEFAULT_DATA_LINE_LIMIT = 1000  # octets, CRLF included, a transparency dot not (RFC 5321 4.5.3.1.6)
COMMAND_LINE_LIMIT = 512  # octets, CRLF included (RFC 5321 4.5.3.1.4)
DEFAULT_MAX_MESSAGES_PER_INBOX = 1000
DEFAULT_MAX_STORED_BYTES = 256 * 1024 * 1024
STANDALONE_INBOX_TTL = 3600.0
# The standalone command's defaults where a shared service needs more than a test session.
STANDALONE_MAX_CONNECTIONS = 1000
STANDALONE_MAX_STREAMS = 10_000
STANDALONE_LISTEN_BACKLOG = 16_384  # a burst of 10,000 connects queues whole
MAX_TTL = 7 * 24 * 3600
MAX_WAIT = 60.0  # seconds a long-poll may wait
MAX_FILTER_LENGTH = 1000  # characters of a message filter (subject=, from=, text=)
MAX_FAULTS_PER_INBOX = 100  # pending injected faults
MAX_FAULT_TIMES = 1000  # deliveries one fault applies to
MAX_FAULT_DELAY = 60.0  # seconds an injected delay holds an answer
MAX_FAULT_MESSAGE = 200  # characters of an injected reply's text
DEFAULT_MAX_STREAMS = 100  # event streams open at once, in all
DEFAULT_MAX_STREAMS_PER_INBOX = 10  # event streams open at once on one inbox
# Connections each listener's queue holds before they are accepted: uvicorn's own
# default, which the HTTP listener had before it was a setting.
DEFAULT_LISTEN_BACKLOG = 2048
DEFAULT_HEARTBEAT = 15.0  # seconds between comment lines on an idle event stream


class _Same:
    """A standalone default that is the plugin's."""


_SAME = _Same()


class LimitSetting:
    """One limit as a setting: ``name`` is the :class:`InboxServer` keyword.

    The standalone flag is ``--`` + ``flag``; the plugin's option is
    ``--tempinbox-`` + ``flag``, and its ini key the same with underscores
    (``--tempinbox-idle-timeout``, ``tempinbox_idle_timeout``).
    ``seconds`` settings take fractions; with ``none_at_zero``, 0 means no limit.
    ``standalone`` is the standalone command's default where it differs from
    ``default`` (that of the plugin and :class:`InboxServer`): a shared service
    holds more at once than one test session.
    """

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = ("default", "flag", "help", "name", "none_at_zero", "seconds", "standalone")

    def __init__(
        self,
        name: str,
        flag: str,
        default: float | None,
        help: str,
        *,
        seconds: bool = False,
        none_at_zero: bool = False,
        standalone: float | _Same | None = _SAME,
    ) -> None:
        self.name = name
        self.flag = flag
        self.default = default
        self.standalone = default if isinstance(standalone, _Same) else standalone
        self.help = help
        self.seconds = seconds
        self.none_at_zero = none_at_zero

    def __repr__(self) -> str:
        return f"LimitSetting({self.name!r})"


LIMIT_SETTINGS = (
    LimitSetting(
        "message_size_limit", "max-message-size", DEFAULT_MESSAGE_SIZE_LIMIT, "bytes per message"
    ),
    LimitSetting("max_recipients", "max-recipients", DEFAULT_MAX_RECIPIENTS, "RCPTs per message"),
    LimitSetting(
        "max_connections",
        "max-connections",
        DEFAULT_MAX_CONNECTIONS,
        "SMTP sessions at once",
        standalone=STANDALONE_MAX_CONNECTIONS,
    ),
    LimitSetting(
        "smtp_timeout",
        "idle-timeout",
        DEFAULT_IDLE_TIMEOUT,
        "seconds an SMTP session may stay idle",
        seconds=True,
    ),
    LimitSetting(
        "data_line_limit",
        "data-line-limit",
        DEFAULT_DATA_LINE_LIMIT,
        "octets per line of message text, CRLF included, a dot doubled for transparency not"
        " (RFC 5321: 1000)",
    ),
    LimitSetting(
        "max_messages_per_inbox",
        "max-messages-per-inbox",
        DEFAULT_MAX_MESSAGES_PER_INBOX,
        "messages an inbox keeps; the oldest are evicted",
    ),
    LimitSetting(
        "max_stored_bytes",
        "max-stored-bytes",
        DEFAULT_MAX_STORED_BYTES,
        "bytes of mail kept in all inboxes together; the oldest are evicted",
    ),
    LimitSetting(
        "inbox_ttl",
        "ttl",
        None,
        "seconds an inbox lives; 0 for until deleted",
        seconds=True,
        none_at_zero=True,
        standalone=STANDALONE_INBOX_TTL,
    ),
    LimitSetting(
        "max_streams",
        "max-streams",
        DEFAULT_MAX_STREAMS,
        "event streams open at once, in all",
        standalone=STANDALONE_MAX_STREAMS,
    ),
    LimitSetting(
        "max_streams_per_inbox",
        "max-streams-per-inbox",
        DEFAULT_MAX_STREAMS_PER_INBOX,
        "event streams open at once on one inbox",
    ),
    LimitSetting(
        "listen_backlog",
        "listen-backlog",
        DEFAULT_LISTEN_BACKLOG,
        "connections each listener queues before accepting them (Linux caps it at"
        " net.core.somaxconn)",
        standalone=STANDALONE_LISTEN_BACKLOG,
    ),
)
"""Every configurable limit, in the order the help lists them."""


def format_limit(value: float | None) -> str:
    """Write a limit's value for people: whole numbers without a fraction, None as ``none``."""
    if value is None:
        return "none"
    return str(int(value)) if value == int(value) else str(value)


def parse_limit(setting: LimitSetting, text: str) -> float | None:
    """Read a limit's value; raise :class:`ValueError` with a one-line reason if it is bad."""
    try:
        value = float(text) if setting.seconds else int(text)
    except ValueError:
        kind = "a number of seconds" if setting.seconds else "a whole number"
        raise ValueError(f"{text!r} is not {kind}") from None
    if value == 0 and setting.none_at_zero:
        return None
    if value != value or value == float("inf"):  # NaN, infinity
        raise ValueError(f"{text!r} is not a finite number")
    if setting.none_at_zero and value < 0:
        # 0 is allowed and means something: say what, not "above 0".
        raise ValueError(f"{text!r} must be 0 or above ({setting.help})")
    if not value > 0:
        raise ValueError(f"{text!r} must be above 0")
    return value
