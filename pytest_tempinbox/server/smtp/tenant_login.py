"""A session's login with a tenant's SMTP credentials: what AUTH leaves, and how it is read.

aiosmtpd's AUTH hook (:mod:`.protocol`) leaves a :class:`TenantLogin` in the
session; the handler's hooks read it back with :func:`session_tenant`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiosmtpd.smtp import Session

__all__ = ["TenantLogin", "session_tenant"]


class TenantLogin:
    """What AUTH leaves in a session that logged in with a tenant's SMTP credentials."""

    __slots__ = ("tenant",)

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant


def session_tenant(session: Session) -> str | None:
    """The tenant a session logged in as with its SMTP credentials; None for any other session."""
    login = getattr(session, "auth_data", None)  # the fast lane's sessions have none
    return login.tenant if isinstance(login, TenantLogin) else None
