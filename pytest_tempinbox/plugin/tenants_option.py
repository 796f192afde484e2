"""``--tempinbox-tenants FILE``: tenants for the server the plugin starts in this process.

For completeness (``docs/tenants.md``): the server started here asks every
caller for a token, as a standalone one with ``--tenants`` does. The session's
own client is then a tenant: it needs ``--tempinbox-token`` (or
``$TEMPINBOX_TOKEN``), one of the file's tenants' tokens, checked at start, and
talks to the server over HTTP with it. A bad file, no token or a token the file
does not know is one usage error at start, never an error per test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .sources import given

if TYPE_CHECKING:
    from ..tenants import Tenants

__all__ = ["TENANTS_HELP", "read_tenants"]

TENANTS_HELP = (
    "a tenants file (JSON) for the server started here: every API route then needs a "
    "tenant's token, and --tempinbox-token must be one of them; no effect with --tempinbox-url"
)


def read_tenants(config: pytest.Config, token: str | None, remote: bool) -> Tenants | None:
    """The tenants of ``--tempinbox-tenants``, checked with ``token``; None when not given.

    A :class:`pytest.UsageError` for a file that cannot be read or is wrong, for
    no token, and for a token of no tenant of the file. A remote server
    (``remote``) has its own tenants: the option is then ignored.
    """
    path, origin = given(config, "tenants")
    if not path or remote:
        return None
    from ..tenants import Tenants  # hashlib and secrets: only with tenants

    resolved = str(config.invocation_params.dir / path)
    try:
        tenants = Tenants.from_file(resolved)
    except ValueError as exc:  # worded with the path as given
        raise pytest.UsageError(f"{origin}: {str(exc).replace(resolved, path)}") from None
    if token is None:
        raise pytest.UsageError(
            f"{origin}: the server started here has tenants: give one of their tokens "
            "with --tempinbox-token or $TEMPINBOX_TOKEN"
        )
    if tenants.tenant_of(token) is None:
        # The token is not repeated: it is a secret.
        raise pytest.UsageError(
            f"{origin}: the token given (--tempinbox-token or $TEMPINBOX_TOKEN) is no "
            "tenant's of that file"
        )
    return tenants
