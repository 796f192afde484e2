"""The standalone command's SIGHUP: read the given certificates again, and say so on stderr.

Standard library only; the command line installs it once the server is made.
docs/tls.md ("Renewing without a restart") says what an operator sees.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from .errors import ServerStartError

__all__ = ["reload_on_sighup"]


def reload_on_sighup(reload: Callable[[], bool]) -> dict[signal.Signals, Any]:
    """Call ``reload`` on SIGHUP (where there is one), saying on stderr what it did.

    ``reload`` returns whether there was a certificate to read again; a failure
    leaves the certificates in use as they are. Returns the replaced handler by
    signal, for the caller to put back.
    """
    if not hasattr(signal, "SIGHUP"):  # Windows
        return {}

    def on_sighup(signum: int, frame: FrameType | None) -> None:
        try:
            done = reload()
        except ServerStartError as exc:
            print(
                f"error: SIGHUP: {exc}; the certificates in use are kept",
                file=sys.stderr,
                flush=True,
            )
            return
        said = "certificates read again" if done else "no certificate files to read again"
        print(f"SIGHUP: {said}", file=sys.stderr, flush=True)

    return {signal.SIGHUP: signal.signal(signal.SIGHUP, on_sighup)}
