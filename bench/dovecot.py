"""A throwaway Dovecot IMAP server serving a Maildir on loopback: the IMAP part's reference.

:func:`dovecot` writes a config of its own in a temporary directory (no system
config is read: ``dovecot -c CONF -F``): IMAP only, ``listen = 127.0.0.1`` on a
free port, no TLS, plain-text logins from a passwd-file (one user, a plain
password), ``mail_location = maildir:...``, and base and state directories in
the temporary directory. It fills the Maildir with the given messages (one
file each in ``cur/``, written byte for byte), starts Dovecot in the
foreground, waits for its greeting and yields where it listens.

Run as root (as CI does), the login processes run as Debian's ``dovenull`` and
the internal ones as ``dovecot`` (the users the package creates), and the
mailbox belongs to ``nobody``: Dovecot refuses uid 0 for mail. Run as another
user, every process runs as that user and its group. :func:`missing` says why Dovecot
cannot run here, or None. Starting and stopping are not timed.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .processes import HOST, free_port, stop_process

__all__ = ["DOVECOT", "Dovecot", "dovecot", "missing"]

DOVECOT = shutil.which("dovecot", path="/usr/sbin:/usr/local/sbin:/usr/bin") or "/usr/sbin/dovecot"
USER = "bench"
PASSWORD = "bench-secret"
_START_TIMEOUT = 20.0
_CONFIG = """\
protocols = imap
listen = {host}
base_dir = {root}/run
state_dir = {root}/state
instance_name = tempinbox-bench-{port}
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
default_login_user = {login_user}
default_internal_user = {internal_user}
default_internal_group = {internal_group}
first_valid_uid = 0
mail_location = maildir:{root}/mail
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {root}/passwd
}}
userdb {{
  driver = passwd-file
  args = {root}/passwd
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""


@dataclass(frozen=True)
class Dovecot:
    """A running Dovecot: where it listens and the one account's user and password."""

    host: str
    port: int
    user: str
    password: str


def missing() -> str | None:
    """Why Dovecot cannot run here (not installed, or its users missing when root), or None."""
    if not os.access(DOVECOT, os.X_OK):
        return f"Dovecot is not installed (looked for {DOVECOT}; Debian: dovecot-imapd)"
    if os.geteuid() == 0:
        for name in ("dovenull", "dovecot"):
            try:
                pwd.getpwnam(name)
            except KeyError:
                return f"run as root, Dovecot needs its system user {name!r}, which is missing"
    return None


def _users() -> tuple[str, str, str, int, int]:
    """The login user, the internal user and group, and the mailbox's uid and gid."""
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        return "dovenull", "dovecot", "dovecot", nobody.pw_uid, nobody.pw_gid
    me = pwd.getpwuid(os.geteuid()).pw_name
    return me, me, grp.getgrgid(os.getegid()).gr_name, os.geteuid(), os.getegid()


def _fill(root: Path, messages: Sequence[bytes], uid: int, gid: int) -> None:
    """Write the Maildir: each message a file in ``cur/``, in order, and the passwd-file."""
    mail = root / "mail"
    for folder in ("cur", "new", "tmp"):
        (mail / folder).mkdir(parents=True)
    for number, raw in enumerate(messages, 1):
        (mail / "cur" / f"{1_700_000_000 + number}.M{number}P1.bench,S={len(raw)}:2,").write_bytes(
            raw
        )
    home = root / "home"
    home.mkdir()
    (root / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}:{uid}:{gid}::{home}::\n")
    if os.geteuid() == 0:
        for path in (mail, home, *mail.iterdir(), *(mail / "cur").iterdir()):
            os.chown(path, uid, gid)


def _greeted(port: int) -> bool:
    """Tell whether an IMAP greeting comes from the port now."""
    try:
        with socket.create_connection((HOST, port), timeout=2.0) as probe:
            return probe.recv(64).startswith(b"* OK")
    except OSError:
        return False


@contextlib.contextmanager
def dovecot(messages: Sequence[bytes]) -> Iterator[Dovecot]:
    """Run Dovecot on a free loopback port serving ``messages`` from a Maildir, until the end."""
    with tempfile.TemporaryDirectory(prefix="tempinbox-dovecot-") as directory:
        root = Path(directory)
        root.chmod(0o755)  # the login processes, as another user, reach the sockets inside
        login_user, internal_user, internal_group, uid, gid = _users()
        _fill(root, messages, uid, gid)
        port = free_port()
        config = root / "dovecot.conf"
        config.write_text(
            _CONFIG.format(
                host=HOST,
                root=root,
                port=port,
                login_user=login_user,
                internal_user=internal_user,
                internal_group=internal_group,
            )
        )
        log = root / "dovecot.log"
        process = subprocess.Popen(
            [DOVECOT, "-c", str(config), "-F"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + _START_TIMEOUT
            while not _greeted(port):
                if process.poll() is not None:
                    said = process.stderr.read().decode(errors="replace") if process.stderr else ""
                    logged = log.read_text(errors="replace") if log.exists() else ""
                    raise RuntimeError(
                        f"Dovecot exited {process.returncode}: {(said + logged).strip()[-400:]}"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Dovecot did not greet on port {port} in time")
                time.sleep(0.05)
            yield Dovecot(HOST, port, USER, PASSWORD)
        finally:
            stop_process(process)
            if process.stderr is not None:
                process.stderr.close()
