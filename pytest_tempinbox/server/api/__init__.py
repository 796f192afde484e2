"""The API: every answer of ``/api``, computed from the store, free of any web framework.

:mod:`.routes` is the one route table. Every endpoint takes one
:class:`~.request.Request` (the store, the path's and the query's parameters,
the body, the base URL, the server's :class:`~.settings.ApiSettings`) and gives
one :class:`~.endpoints.Reply`, a :class:`~pytest_tempinbox.transport.Answer`
with headers: inboxes and messages (:mod:`.endpoints`), the checks of a message
(:mod:`.checks`), the event stream (:mod:`.events`), the operational routes
(:mod:`.operations`) and the metrics (:mod:`.metrics`, with prometheus_client in
:mod:`.prometheus`). The HTTP adapters (:mod:`pytest_tempinbox.server.http`)
and the in-process transport (:mod:`pytest_tempinbox.server.in_process`) both
serve them, so their answers are byte for byte the same. No Starlette, uvicorn
or SMTP here.
"""
