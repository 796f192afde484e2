"""What the API knows of the server around it: its configuration, ports, CA and counters.

The server (:mod:`pytest_tempinbox.server.inbox_server`) makes one
:class:`ApiSettings` when it builds its HTTP app; every endpoint finds it on
its :class:`~.request.Request`. No web framework is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..._net import is_loopback
from ...config import ServerConfig
from ..counters import ServerCounters
from .metrics import MetricsEndpoint
from .stream_slots import StreamSlots

__all__ = ["ApiSettings"]


@dataclass(frozen=True)
class ApiSettings:
    """What the app needs to know of the server around it: its configuration, and more.

    ``smtp_port`` is the SMTP listener's bound port, and ``ca_pem`` the CA
    certificate that ``GET /api/ca.pem`` serves (None when TLS is off);
    everything else comes from ``config``. ``GET /api/info`` reports the AUTH
    mode's name (``password``), never the password. ``counters`` are the
    server's: ``GET /metrics`` reads them, and ``GET /api/ready`` whether SMTP
    listens. ``slots`` count the open event streams (``GET /api/events/...``) within the
    configuration's ``max_streams`` and ``max_streams_per_inbox``, and
    ``metrics`` keeps the Prometheus registry once ``GET /metrics`` is asked.
    """

    config: ServerConfig
    smtp_port: int
    ca_pem: bytes | None = None
    counters: ServerCounters = field(default_factory=ServerCounters)
    slots: StreamSlots = field(init=False)
    metrics: MetricsEndpoint = field(default_factory=MetricsEndpoint)

    def __post_init__(self) -> None:
        slots = StreamSlots(self.config.max_streams, self.config.max_streams_per_inbox)
        object.__setattr__(self, "slots", slots)  # frozen: set once, here

    @property
    def allowed_hosts(self) -> frozenset[str] | None:
        """The only host names a request's ``Host`` may carry; None for any.

        A server bound to loopback answers only its own names (a defence
        against DNS rebinding) and the configured ``allowed_hosts``.
        """
        host = self.config.host
        if not is_loopback(host):
            return None
        return frozenset({"localhost", "127.0.0.1", "[::1]", host.lower()}) | frozenset(
            self.config.allowed_hosts
        )

    @property
    def public_smtp(self) -> tuple[str, int]:
        """The SMTP host and port that ``GET /api/info`` names: the public ones, if set."""
        return self.config.public_smtp or (self.config.host, self.smtp_port)
