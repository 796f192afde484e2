"""A dead webhook's cost on SMTP ingestion: our server with and without one (issue 32).

Alternating rounds, as :mod:`bench.ingest` times them (the same client
processes, the same 1 KiB messages): our server as it is, and our server with
``--webhook`` pointing at a closed loopback port, so that every delivery is
announced to an endpoint that refuses every connection. The target: the dead
webhook leaves ingestion within 5%.

Round to round, one server's throughput moves by a fifth on a shared machine,
more than the cost to judge; so, where Valgrind is installed, the target is
judged on the instructions a message costs the server with and without the
dead webhook (:mod:`bench.instructions`), a count that noise does not move,
and the throughput rows are reported beside it with their spread.
"""

from __future__ import annotations

import contextlib
import math
import socket
from collections.abc import Callable, Iterator

from pytest_tempinbox.limits import DEFAULT_MAX_MESSAGES_PER_INBOX
from pytest_tempinbox.server.inbox_server import InboxServer

from . import instructions
from .ingest import send_all
from .measure import Row, Section, alternate, median, ratio
from .servers import Sink

__all__ = ["NAME", "measure"]

NAME = "Webhooks"
PLAIN = "pytest-tempinbox"
DEAD = "pytest-tempinbox --webhook (dead endpoint)"
TARGET_COST = 0.05  # at most this share of ingestion for a dead webhook (issue 32)


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/hook"


@contextlib.contextmanager
def _server(clients: int, messages: int, webhooks: list[str]) -> Iterator[Sink]:
    per_inbox = max(DEFAULT_MAX_MESSAGES_PER_INBOX, math.ceil(messages / clients))
    with InboxServer(max_messages_per_inbox=per_inbox, webhooks=webhooks) as server:
        recipients = [server.store.generate().address for _ in range(clients)]
        yield Sink(
            server.smtp_host, server.smtp_port, recipients, lambda: server.store.stats()["messages"]
        )


def _round(
    webhooks: list[str], label: str, clients: int, messages: int, errors: list[str]
) -> Callable[[], float]:
    def one() -> float:
        with _server(clients, messages, webhooks) as sink:
            seconds = send_all(sink, messages, 1024, errors, label)
            received = sink.received()
        if received != messages:
            errors.append(f"{label}: {received:,} of {messages:,} messages arrived")
        return messages / seconds

    return one


def measure(*, rounds: int, messages: int, clients: int = 4) -> Section:
    """Ingestion with and without a dead webhook; the share of it the webhook costs."""
    print(f"{NAME}: {messages:,} messages, {clients} clients, {rounds} rounds, dead endpoint")
    section = Section(NAME)
    contenders = {
        PLAIN: _round([], PLAIN, clients, messages, section.errors),
        DEAD: _round([_closed_port_url()], DEAD, clients, messages, section.errors),
    }
    samples = alternate(contenders, rounds, label="webhooks", unit=" msg/s")
    medians = {label: median(values) for label, values in samples.items()}
    cost = throughput_cost = 1 - ratio(medians[DEAD], medians[PLAIN])
    spread = (max(samples[PLAIN]) - min(samples[PLAIN])) / medians[PLAIN]
    section.rows.append(Row(NAME, PLAIN, f"{medians[PLAIN]:,.0f} msg/s", "", "", None, ""))
    judged = f"a dead webhook costs {cost:.1%} of ingestion"
    measured = (DEAD, f"{medians[DEAD]:,.0f} msg/s")
    dead_hook = ["--webhook", _closed_port_url()]
    counted = instructions.compare(NAME, [], dead_hook, section.errors)
    if counted is not None:  # the target is judged on the instructions: noise does not move them
        section.rows.append(Row(NAME, *measured, f"{judged} (its rounds spread {spread:.0%})"))
        plain, dead = counted
        cost = dead / plain - 1
        judged = f"a dead webhook costs {cost:.1%} of the instructions per message"
        measured = (f"{DEAD}, instructions", f"{dead:,.0f} against {plain:,.0f} per message")
    section.rows.append(
        Row(
            NAME,
            *measured,
            judged,
            f"<= {TARGET_COST:.0%}",
            cost <= TARGET_COST,
            f"{judged} (target {TARGET_COST:.0%})",
        )
    )
    section.data = {
        "messages": messages,
        "clients": clients,
        "rounds": rounds,
        "samples_msgs_per_s": samples,
        "median_msgs_per_s": medians,
        "throughput_cost": throughput_cost,
        "cost": cost,  # the judged one: of the instructions where they were counted
        "instructions_per_message": counted and {PLAIN: counted[0], DEAD: counted[1]},
    }
    return section
