"""Webhooks: each delivery and inbox deletion POSTed as signed JSON (docs/webhooks.md).

Imported only by a server started with a webhook (``--webhook``, or a
tenant's in the tenants file): :mod:`.store` wraps its store to announce
events, :mod:`.sender` queues and sends them off the delivery path, and
:mod:`.client` is the small HTTP/1.1 client they are POSTed with.
"""
