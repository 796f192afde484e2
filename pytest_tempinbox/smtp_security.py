"""The SMTP listener's TLS and AUTH modes: their names, defaults, and how they are read.

Standard library only, so that the command line and the pytest plugin can
check and describe both settings without importing the server. docs/tls.md says
what a client sees in each mode.
"""

from __future__ import annotations

import importlib.util

__all__ = [
    "DEFAULT_SMTP_AUTH",
    "DEFAULT_TLS",
    "SMTP_AUTH_HELP",
    "TLS_EXTRA_MISSING",
    "TLS_HELP",
    "TLS_MODES",
    "SMTPAuth",
    "parse_smtp_auth",
    "parse_tls",
    "tls_supported",
]

TLS_MODES = ("off", "starttls", "required", "implicit")
"""``off``: plain SMTP; ``starttls``: STARTTLS offered; ``required``: STARTTLS
required before MAIL (and AUTH); ``implicit``: TLS from the first byte (SMTPS)."""

DEFAULT_TLS = "off"
DEFAULT_SMTP_AUTH = "any"
TLS_HELP = (
    "TLS on the SMTP port: off, starttls (offered), required (STARTTLS before MAIL "
    "and AUTH) or implicit (SMTPS, TLS from the first byte)"
)
SMTP_AUTH_HELP = (
    "SMTP authentication: any (AUTH PLAIN/LOGIN with any credentials), none (AUTH not "
    "offered) or USER:PASSWORD (only those; MAIL without them is refused)"
)
TLS_EXTRA_MISSING = (
    "TLS needs the trustme package, which is not installed: pip install 'pytest-tempinbox[tls]'"
)


def parse_tls(text: str) -> str:
    """Read a TLS mode (any case); raise :class:`ValueError` with a one-line reason if it is bad."""
    mode = text.strip().lower()
    if mode not in TLS_MODES:
        raise ValueError(f"{text!r} is not a TLS mode ({', '.join(TLS_MODES)})")
    return mode


def tls_supported() -> bool:
    """Tell whether the ``tls`` extra (trustme) is installed, without importing it."""
    return importlib.util.find_spec("trustme") is not None


class SMTPAuth:
    """How the SMTP listener treats AUTH; its ``repr`` and ``str`` never show the password.

    ``mode`` is ``any`` (AUTH offered, any credentials accepted), ``none`` (AUTH
    not offered) or ``password`` (only ``username`` and ``password`` succeed, and
    MAIL needs them).
    """

    # A plain class, not a dataclass: creating a dataclass costs about 1 ms of import.
    __slots__ = ("mode", "password", "username")

    def __init__(
        self,
        mode: str = DEFAULT_SMTP_AUTH,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        self.mode = mode
        self.username = username
        self.password = password

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SMTPAuth):
            return NotImplemented
        return (self.mode, self.username, self.password) == (
            other.mode,
            other.username,
            other.password,
        )

    def __hash__(self) -> int:
        return hash((self.mode, self.username, self.password))

    def __repr__(self) -> str:
        return f"SMTPAuth(mode={self.mode!r}, username={self.username!r})"

    def __str__(self) -> str:
        return self.mode


def parse_smtp_auth(text: str) -> SMTPAuth:
    """Read ``any``, ``none`` or ``USER:PASSWORD``; raise :class:`ValueError` if it is bad.

    The user name is everything before the first colon, so a password may hold
    colons. The reason given for a bad value never repeats it: it may be a secret.
    """
    word = text.strip().lower()
    if word in ("any", "none"):
        return SMTPAuth(word)
    username, colon, password = text.partition(":")
    if not colon or not username or not password:
        raise ValueError("expected any, none or USER:PASSWORD (both non-empty)")
    if not (username + password).isprintable():
        raise ValueError("USER:PASSWORD may not hold control characters")
    return SMTPAuth("password", username, password)
