"""Carrying out a fault a test injected into an inbox, on the SMTP connection it strikes.

The handler's hooks call :func:`strike` at RCPT or at the end of DATA, on the
fast lane or aiosmtpd's protocol (:mod:`pytest_tempinbox.server.store.faults`
says what a fault is).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..store.faults import reply_line

if TYPE_CHECKING:
    from aiosmtpd.smtp import SMTP

    from ...models import Fault

__all__ = ["strike"]


async def strike(server: SMTP, fault: Fault) -> str | None:
    """Carry out ``fault``: the reply to give instead of the normal one, or None to go on.

    A delay (also one with a reply or disconnect after it, see :func:`~..store.faults.data_answer`)
    holds the answer; a disconnect closes the connection without one; a 421
    reply is followed by closing it, as RFC 5321 3.8 says a server does.
    """
    # The project's protocols (aiosmtpd's and the fast lane) pause and drop; another closes.
    pause, drop = getattr(server, "pause", None), getattr(server, "drop", None)
    if fault.delay is not None:
        await (asyncio.sleep(fault.delay) if pause is None else pause(fault.delay))
    if fault.disconnect or fault.code == 421:
        if fault.code == 421:
            await server.push(reply_line(fault))
        if drop is not None:
            await drop()
        elif server.transport is not None:
            server.transport.close()
        return "421 4.4.2 Connection dropped (injected fault)"  # nobody reads it
    return None if fault.code is None else reply_line(fault)
