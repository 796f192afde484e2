"""``GET /metrics``: the server's metrics in Prometheus's text format, when it has the extra.

The metrics need prometheus_client (the ``metrics`` extra): it is imported,
with :mod:`pytest_tempinbox.server.api.prometheus`, on the first request,
so that a server nobody scrapes never loads it. Without it, the answer is a
404 problem document that says how to install it. No web framework is
imported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import NOT_FOUND
from ..counters import ServerCounters
from ..store.protocol import InboxStore
from .endpoints import Reply, problem_reply

if TYPE_CHECKING:
    from .prometheus import Registry

__all__ = ["METRICS_EXTRA_MISSING", "METRICS_TYPE", "MetricsEndpoint"]

METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The content type of Prometheus's text format 0.0.4, which every scraper reads."""

METRICS_EXTRA_MISSING = (
    "metrics need the prometheus_client package, which is not installed: "
    "pip install 'pytest-tempinbox[metrics]'"
)


class MetricsEndpoint:
    """The answers of one server's ``GET /metrics``, its registry made on the first request."""

    def __init__(self) -> None:
        self._registry: Registry | None = None

    def reply(self, counters: ServerCounters, store: InboxStore) -> Reply:
        """The metrics now, or the 404 problem that says how to install prometheus_client."""
        if self._registry is None:
            try:
                from .prometheus import Registry
            except ImportError as exc:
                if exc.name is None or exc.name.partition(".")[0] != "prometheus_client":
                    raise
                return problem_reply(404, NOT_FOUND, METRICS_EXTRA_MISSING)
            self._registry = Registry(counters, store)
        return Reply(200, self._registry.render(), METRICS_TYPE)
