"""The API's operational routes: the server's description, its CA, its readiness, its schema.

``GET /api/info``, ``/api/ca.pem``, ``/api/ready``, ``/api/health`` and
``/api/openapi.json``: each reads the server's settings (or nothing) from its
:class:`~.request.Request`, so that the route table holds them beside the
others. No web framework is imported here.
"""

from __future__ import annotations

from ...errors import SHUTTING_DOWN, TLS_OFF
from ...limits import MAX_FAULT_DELAY, MAX_FAULTS_PER_INBOX, MAX_WAIT
from ...values import PROVIDERS, provider_url
from .endpoints import MAX_REQUEST_BODY, Reply, encode_json, problem_reply
from .request import Request

__all__ = ["PEM_TYPE", "ca_certificate", "health", "info", "openapi", "ready"]

PEM_TYPE = "application/x-pem-file"


async def info(request: Request) -> Reply:
    """``GET /api/info``: the version, where SMTP listens, the domains, limits and stats."""
    from ..._version import __version__

    store, settings = request.store, request.server()
    config, slots = settings.config, settings.slots
    host, port = settings.public_smtp
    described = {
        "version": __version__,
        "smtp": {"host": host, "port": port, "tls": config.tls, "auth": config.smtp_auth.mode},
        "domains": list(store.domains),
        "imap_port": config.imap_port,
        "pop3_port": config.pop3_port,
        "limits": {
            **config.limits(),
            "request_body": MAX_REQUEST_BODY,
            "wait": MAX_WAIT,
            "faults_per_inbox": MAX_FAULTS_PER_INBOX,
            "fault_delay": MAX_FAULT_DELAY,
            "heartbeat": config.event_heartbeat,
        },
        "stats": {**store.stats(), "streams": slots.total},
        "providers": {name: provider_url(request.base_url, name) for name in PROVIDERS},
    }
    return Reply(200, encode_json(described))


async def ca_certificate(request: Request) -> Reply:
    """``GET /api/ca.pem``: the CA certificate of the server's TLS; 404 ``tls_off`` without."""
    ca_pem = request.server().ca_pem
    if ca_pem is None and request.server().config.tls_cert is not None:
        own = "the SMTP certificate is this server's own (--tls-cert): trust its issuer"
        return problem_reply(404, TLS_OFF, f"there is no throwaway CA certificate: {own}")
    if ca_pem is None:
        return problem_reply(404, TLS_OFF, "TLS is off on this server: there is no CA certificate")
    return Reply(200, ca_pem, PEM_TYPE)


async def ready(request: Request) -> Reply:
    """``GET /api/ready``: SMTP listens and the store answers (503 otherwise)."""
    if not request.server().counters.smtp_listening():
        detail = "the SMTP listener does not accept connections: the server is stopping"
        return problem_reply(503, SHUTTING_DOWN, detail)
    request.store.check()  # a store that does not answer raises StoreUnavailable: 503
    return Reply(200, b'{"status":"ready"}')


async def health(request: Request) -> Reply:
    """``GET /api/health``: the process answers; the store is not asked."""
    return Reply(200, b'{"status":"ok"}')


async def openapi(request: Request) -> Reply:
    """``GET /api/openapi.json``: the API's OpenAPI document."""
    from ..._version import __version__
    from ..openapi import openapi_document  # a large document: loaded when asked for

    return Reply(200, encode_json(openapi_document(__version__)))


async def metrics(request: Request) -> Reply:
    """``GET /metrics``: the server's metrics in Prometheus's text format (:mod:`.metrics`)."""
    settings = request.server()
    return settings.metrics.reply(settings.counters, request.store)
