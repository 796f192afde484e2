"""The server's metrics as prometheus_client collects them, for ``GET /metrics``.

The one module that imports prometheus_client (the ``metrics`` extra);
:mod:`pytest_tempinbox.server.api.metrics` imports it when ``/metrics`` is first
asked for. Each server has a registry of its own holding one collector, which
reads the server's :class:`~pytest_tempinbox.server.counters.ServerCounters`
and the store's ``stats()`` at scrape time: nothing is counted through
prometheus_client on the way, and several servers in one process never share
a metric.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from ...errors import StoreUnavailable
from ..counters import ServerCounters
from ..readers.counters import ReaderCounters
from ..store.protocol import InboxStore

__all__ = ["Registry", "ServerCollector"]


class ServerCollector(Collector):
    """The metrics of one server, read from its counters and its store when scraped.

    A store that does not answer leaves its figures out, counts a store error,
    and reports ``tempinbox_store_up`` 0.
    """

    def __init__(self, counters: ServerCounters, store: InboxStore) -> None:
        self.counters = counters
        self.store = store

    def collect(self) -> Iterator[Metric]:
        """Yield every metric's current value."""
        counters = self.counters
        try:
            stats: dict[str, int] | None = self.store.stats()
        except StoreUnavailable:
            counters.store_errors += 1
            stats = None
        yield _counter(
            "tempinbox_messages_accepted",
            "Messages answered 250 at the end of DATA.",
            counters.messages_accepted,
        )
        refused = CounterMetricFamily(
            "tempinbox_recipients_refused",
            "Recipients refused at RCPT TO, by reason.",
            labels=["reason"],
        )
        for reason, count in counters.refused.items():
            refused.add_metric([reason], count)
        yield refused
        yield _counter(
            "tempinbox_store_errors",
            "Times the store did not answer (SMTP answered 451, the API 503).",
            counters.store_errors,
        )
        yield _gauge(
            "tempinbox_store_up",
            "1 when the store answered this scrape, else 0.",
            stats is not None,
        )
        if stats is not None:
            yield _gauge("tempinbox_inboxes", "Live inboxes.", stats.get("inboxes", 0))
            yield _gauge(
                "tempinbox_stored_messages",
                "Messages stored (each recipient's copy counted).",
                stats.get("messages", 0),
            )
            yield _gauge(
                "tempinbox_stored_bytes",
                "Bytes of the stored messages (each copy counted).",
                stats.get("stored_bytes", 0),
            )
            yield _counter(
                "tempinbox_evictions",
                "Messages evicted to keep within the storage limits.",
                stats.get("evictions", 0),
            )
        yield _gauge(
            "tempinbox_pending_long_polls",
            "Reads of messages waiting for mail over HTTP now.",
            counters.long_polls,
        )
        yield _gauge(
            "tempinbox_event_streams_open", "Event streams open now.", counters.event_streams()
        )
        yield _gauge(
            "tempinbox_smtp_sessions_open", "SMTP sessions open now.", counters.smtp_sessions()
        )
        if counters.webhooks is not None:
            yield from _webhook_metrics(counters.webhooks())
        if counters.readers is not None:
            yield from _reader_metrics(counters.readers)


def _webhook_metrics(counts: dict[str, int]) -> Iterator[Metric]:
    for name, documentation in _WEBHOOK_COUNTERS:
        yield _counter(f"tempinbox_webhooks_{name}", documentation, counts[name])
    yield _gauge(
        "tempinbox_webhook_queue", "Webhook events and retries waiting now.", counts["queued"]
    )


_WEBHOOK_COUNTERS = (
    ("sent", "Webhook POSTs answered 2xx."),
    ("failed", "Webhook POSTs given up on (a 3xx or 4xx, every attempt failed, or too old)."),
    ("retried", "Webhook POSTs scheduled again after a failed attempt."),
    ("dropped", "Webhook events dropped because the queue was full."),
)


_READER_METRICS = (
    ("sessions", "IMAP and POP3 sessions opened, by protocol."),
    ("logins_failed", "IMAP and POP3 logins refused, by protocol."),
    ("commands", "IMAP and POP3 command lines read, by protocol."),
    ("messages_fetched", "Messages whose text IMAP FETCH or POP3 RETR sent, by protocol."),
    ("messages_deleted", "Messages IMAP expunged or POP3 deleted at QUIT, by protocol."),
)


def _reader_metrics(readers: ReaderCounters) -> Iterator[Metric]:
    """The IMAP and POP3 counters, one family per count with a ``protocol`` label."""
    protocols = readers.by_protocol()
    for count, documentation in _READER_METRICS:
        family = CounterMetricFamily(
            f"tempinbox_reader_{count}", documentation, labels=["protocol"]
        )
        for protocol, counted in protocols.items():
            family.add_metric([protocol], getattr(counted, count))
        yield family


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class Registry:
    """A server's registry of metrics, and its exposition."""

    def __init__(self, counters: ServerCounters, store: InboxStore) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(ServerCollector(counters, store))

    def render(self) -> bytes:
        """The metrics in Prometheus's text format 0.0.4, which every scraper reads."""
        return generate_latest(self.registry)
