"""``tempinbox`` or ``python -m pytest_tempinbox``: run the disposable inbox server on its own.

Prints one line with the SMTP address and one with the API URL once both
listeners accept connections, then a third with the inbox viewer's URL, and
serves until SIGINT or SIGTERM. The module is long because every flag is
declared here, with its help, in the one parser ``--help`` prints.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

from . import rate_limits
from ._version import __version__
from .certificate_settings import API_TLS_HELP, SMTP_TLS_HELP
from .config import (
    DEFAULT_DOMAIN,
    DEFAULT_EVENT_LOOP,
    DEFAULT_HOST,
    DEFAULT_STORE,
    EVENT_LOOPS,
    STORE_HELP,
    ServerConfig,
    domain_name,
    parse_provider_key,
    parse_public_smtp,
    parse_store,
)
from .errors import ServerStartError
from .limits import (
    LIMIT_SETTINGS,
    LimitSetting,
    format_limit,
    parse_limit,
)
from .smtp_security import (
    DEFAULT_SMTP_AUTH,
    DEFAULT_TLS,
    SMTP_AUTH_HELP,
    TLS_HELP,
    parse_smtp_auth,
    parse_tls,
)

if TYPE_CHECKING:
    from .tenants import Tenants

__all__ = ["main"]

_T = TypeVar("_T")

DOCS_URL = "https://github.com/pytest-tempinbox/pytest-tempinbox/blob/main/docs"
"""Where the documentation is read: the wheel ships none (pyproject's Documentation URL)."""


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _argument_type(parse: Callable[[str], _T]) -> Callable[[str], _T]:
    """``parse`` as an argparse type: its ValueError is the usage error, worded as it is."""

    def read(text: str) -> _T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return read


def _load_dkim_keys(text: str) -> dict[str, str]:
    from .checks.dkim import load_dkim_keys

    return load_dkim_keys(text)


_domain = _argument_type(domain_name)  # a --domain or --hostname: an IDN as its A-labels
_tls = _argument_type(parse_tls)
_public_smtp = _argument_type(parse_public_smtp)
_store = _argument_type(parse_store)
_dkim_keys = _argument_type(_load_dkim_keys)
_smtp_auth = _argument_type(parse_smtp_auth)
_provider_key = _argument_type(parse_provider_key)


def _load_tenants(text: str) -> Tenants:
    from .tenants import Tenants

    return Tenants.from_file(text)


_tenants = _argument_type(_load_tenants)


def _check_webhook_url(text: str) -> str:
    from .webhook_urls import check_webhook_url

    return check_webhook_url(text)


_webhook = _argument_type(_check_webhook_url)
WEBHOOK_SECRET_VARIABLE = "TEMPINBOX_WEBHOOK_SECRET"
"""The environment variable of the webhooks' secret: unlike a flag, no ``ps`` shows it."""


def _parser(prog: str) -> argparse.ArgumentParser:
    # Raw descriptions: wrapping would break the documentation's URLs at their hyphens.
    parser = argparse.ArgumentParser(
        prog=prog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a disposable inbox server: SMTP that accepts mail only for\n"
        "generated addresses, an HTTP API under /api to generate addresses, read\n"
        "their mail and delete them, and a web page at / to watch an inbox's mail.",
        epilog=f"Documentation: {DOCS_URL}/standalone.md",
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address both listeners bind (default: %(default)s; binding anything but "
        "loopback lets anyone who can reach the ports read inboxes whose addresses they know)",
    )
    parser.add_argument(
        "--smtp-port",
        type=_port,
        default=1025,
        help="SMTP port; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--api-port",
        type=_port,
        default=8025,
        help="HTTP API port; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--domain",
        action="append",
        dest="domains",
        metavar="DOMAIN",
        type=_domain,
        help=f"domain of generated addresses; repeat for several, the first is the default "
        f"(default: {DEFAULT_DOMAIN}); an IDN is served as its A-labels",
    )
    parser.add_argument(
        "--hostname",
        type=_domain,
        help="name the SMTP server gives in its greeting (default: the first domain)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        dest="allowed_hosts",
        metavar="NAME",
        default=[],
        help="a host name the API answers to besides the bound address and localhost, "
        "when bound to loopback (a defence against DNS rebinding); repeat for several",
    )
    parser.add_argument(
        "--tls",
        type=_tls,
        default=DEFAULT_TLS,
        metavar="MODE",
        help=f"{TLS_HELP} (default: %(default)s); the CA certificate is served at /api/ca.pem",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help=SMTP_TLS_HELP)
    parser.add_argument("--tls-key", metavar="FILE", help="the private key of --tls-cert (PEM)")
    parser.add_argument("--api-tls-cert", metavar="FILE", help=API_TLS_HELP)
    parser.add_argument(
        "--api-tls-key", metavar="FILE", help="the private key of --api-tls-cert (PEM)"
    )
    parser.add_argument(
        "--smtp-auth",
        type=_smtp_auth,
        default=DEFAULT_SMTP_AUTH,
        metavar="MODE",
        help=f"{SMTP_AUTH_HELP} (default: %(default)s)",
    )
    parser.add_argument(
        "--store",
        type=_store,
        default=DEFAULT_STORE,
        metavar="URL",
        help=f"{STORE_HELP} (default: %(default)s; Redis needs the redis extra)",
    )
    parser.add_argument(
        "--public-smtp",
        type=_public_smtp,
        default=None,
        metavar="HOST:PORT",
        help="the SMTP address that /api/info reports, when clients reach this server "
        "through a load balancer (default: the listener's own)",
    )
    parser.add_argument(
        "--dkim-keys",
        type=_dkim_keys,
        default={},
        metavar="FILE",
        help='a JSON file mapping DNS names to DKIM TXT records, {"sel._domainkey.example.com": '
        '"v=DKIM1; k=rsa; p=..."}: the keys that messages\' DKIM signatures are verified with '
        "(never real DNS; needs the dkim extra)",
    )
    parser.add_argument(
        "--provider-key",
        type=_provider_key,
        action="append",
        dest="provider_keys",
        default=[],
        metavar="NAME=KEY",
        help="the one API key a provider's endpoints accept, e.g. sendgrid=SG.test: other keys "
        "get the provider's own 401/403 (default: any key); a secret, never logged or shown; "
        "repeat for several providers",
    )
    parser.add_argument(
        "--link-checks",
        dest="link_checks",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="answer GET .../link-check, or refuse it (--no-link-checks): checking the links of "
        "any mail it is sent makes the server request any URL a sender writes (default: on "
        "when bound to loopback or with --tenants, off otherwise)",
    )
    parser.add_argument(
        "--tenants",
        type=_tenants,
        metavar="FILE",
        help="a JSON file of tenants and their token hashes: every API route then needs a "
        f"tenant's token, and each inbox is its generator's own ({DOCS_URL}/tenants.md)",
    )
    parser.add_argument(
        "--make-token",
        action="store_true",
        help="print a new API token and the line a tenants file stores for it, then exit",
    )
    from .quotas import add_quota_flags

    add_quota_flags(parser, f"{DOCS_URL}/tenants.md#quotas")
    parser.add_argument(
        "--loop",
        dest="event_loop",
        choices=EVENT_LOOPS,
        default=DEFAULT_EVENT_LOOP,
        help="the event loop the server runs on: auto takes uvloop when it is installed "
        "(the uvloop extra), asyncio's own otherwise (default: %(default)s)",
    )
    rate_limits.add_arguments(parser, _argument_type)
    limits = parser.add_argument_group(
        "limits", f"what a client sees at each: {DOCS_URL}/limits.md"
    )
    for setting in LIMIT_SETTINGS:
        default = setting.standalone
        limits.add_argument(
            f"--{setting.flag}",
            dest=setting.name,
            type=_limit(setting),
            default=default,
            metavar="N",
            help=f"{setting.help} (default: {format_limit(default)})",
        )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say at start how the process's limits were set: open files, listen backlog",
    )
    parser.add_argument(
        "--no-transcripts",
        dest="transcripts",
        action="store_false",
        help="keep no SMTP conversation with each message: no recording cost at all "
        f"({DOCS_URL}/transcripts.md)",
    )
    parser.add_argument(
        "--no-compression",
        dest="compress_read_messages",
        action="store_false",
        help="keep read messages' bytes as received, uncompressed: more memory, "
        f"a little less time on each first read ({DOCS_URL}/limits.md)",
    )
    readers = parser.add_argument_group(
        "readers", f"IMAP and POP3 for programs that fetch mail: {DOCS_URL}/readers.md"
    )
    for protocol in ("imap", "pop3"):
        readers.add_argument(
            f"--{protocol}-port",
            type=_port,
            metavar="N",
            help=f"serve {protocol.upper()} on port N, 0 for a free one; the user is an "
            "inbox's address, the password the one POST /api/generate gives (default: off)",
        )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="serve the MCP endpoint for AI agents at /mcp on the API's port: tools to generate "
        f"an inbox, wait for and read its mail (the mcp extra; {DOCS_URL}/mcp.md)",
    )
    hooks = parser.add_argument_group(
        "webhooks", f"each delivery and inbox deletion POSTed as JSON: {DOCS_URL}/webhooks.md"
    )
    hooks.add_argument(
        "--webhook",
        dest="webhooks",
        action="append",
        type=_webhook,
        default=[],
        metavar="URL",
        help="POST each delivery and deletion to this http:// or https:// URL (repeatable)",
    )
    hooks.add_argument(
        "--webhook-secret",
        metavar="SECRET",
        help="sign each POST with HMAC-SHA256 under SECRET (X-Tempinbox-Signature); "
        f"prefer the {WEBHOOK_SECRET_VARIABLE} environment variable, which ps does not show",
    )
    return parser


def _limit(setting: LimitSetting) -> Callable[[str], float | None]:
    return _argument_type(functools.partial(parse_limit, setting))


def _link_checks(options: argparse.Namespace) -> bool:
    """Whether the link-check route answers: as asked, else only where callers are known.

    A server bound beyond loopback without tenants would request any URL anyone
    who reaches its SMTP port writes in a mail, for anyone who reaches its API.
    """
    if options.link_checks is not None:
        return bool(options.link_checks)
    from ._net import is_loopback

    return options.tenants is not None or is_loopback(options.host)


def _config(options: argparse.Namespace) -> ServerConfig:
    """The server's configuration from the parsed command line."""
    from .quotas import quotas_of

    limits = {setting.name: getattr(options, setting.name) for setting in LIMIT_SETTINGS}
    return ServerConfig(
        host=options.host,
        smtp_port=options.smtp_port,
        api_port=options.api_port,
        domains=options.domains or [DEFAULT_DOMAIN],
        hostname=options.hostname,
        allowed_hosts=options.allowed_hosts,
        tls=options.tls,
        smtp_auth=options.smtp_auth,
        store=options.store,
        public_smtp=options.public_smtp,
        dkim_keys=options.dkim_keys,
        link_checks=_link_checks(options),
        event_loop=options.event_loop,
        provider_keys=dict(options.provider_keys),
        tls_cert=options.tls_cert,
        tls_key=options.tls_key,
        api_tls_cert=options.api_tls_cert,
        api_tls_key=options.api_tls_key,
        tenants=options.tenants,
        rate_limits=rate_limits.from_arguments(options),
        quotas=quotas_of(options),
        transcripts=options.transcripts,
        compress_read_messages=options.compress_read_messages,
        imap_port=options.imap_port,
        pop3_port=options.pop3_port,
        mcp=options.mcp,
        webhooks=options.webhooks,
        webhook_secret=options.webhook_secret or os.environ.get(WEBHOOK_SECRET_VARIABLE),
        **limits,
    )


def main(argv: Sequence[str] | None = None, prog: str = "tempinbox") -> int:
    """Run the server until SIGINT or SIGTERM; return the exit status.

    ``prog`` is the command's name in its usage and help: the console script's
    by default; ``python -m pytest_tempinbox`` passes its own.
    """
    options = _parser(prog).parse_args(argv)
    if options.make_token:
        from .tenants import make_token

        token, line = make_token()
        print(f"token: {token}\nhash:  {line}", flush=True)
        return 0
    from ._process_limits import raise_open_files_limit, somaxconn

    opened = raise_open_files_limit()
    if options.verbose:
        print(opened, file=sys.stderr, flush=True)
        print(
            f"listen backlog: {options.listen_backlog} per listener ({somaxconn()})",
            file=sys.stderr,
            flush=True,
        )
    # Imported here so that --help and argument errors answer at once.
    from ._net import is_loopback
    from ._sighup import reload_on_sighup
    from .server.inbox_server import InboxServer

    try:
        server = InboxServer.from_config(_config(options))
    except ValueError as exc:  # settings that do not go together: --tls-cert without --tls-key
        _parser(prog).error(str(exc))
    except ServerStartError as exc:  # the Redis store without the redis extra
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    if not is_loopback(options.host) and options.tenants is None:
        print(
            f"warning: listening on {options.host}: anyone who can reach these ports can "
            "read the inboxes whose addresses they know (--tenants gives each team a token)"
            + ("" if server.config.link_checks else "; link checks are off (--link-checks)"),
            file=sys.stderr,
            flush=True,
        )
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous.update(reload_on_sighup(server.reload_certificates))
    try:
        try:
            server.start()
        except ServerStartError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 1
        print(f"SMTP listening on {server.smtp_url}", flush=True)
        print(f"API listening on {server.api_url}", flush=True)
        print(f"Inbox viewer at {server.viewer_url}", flush=True)
        for name, port in (("IMAP", server.imap_port), ("POP3", server.pop3_port)):
            if port is not None:
                print(f"{name} listening on {name.lower()}://{server.smtp_host}:{port}", flush=True)
        # A timeout keeps the wait interruptible by signals on every platform.
        while not stop.wait(0.5):
            if not server.running:
                print("error: the server stopped unexpectedly", file=sys.stderr, flush=True)
                return 1
        server.stop()
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
