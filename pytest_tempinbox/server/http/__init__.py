"""The HTTP adapters: the API and the viewer served over HTTP.

:mod:`.app` builds the Starlette app from the API's route table
(:mod:`pytest_tempinbox.server.api`), :mod:`.lanes` takes the
long-poll's route and the fixed paths past Starlette's router, and :mod:`.listener` serves it
with uvicorn once a connection waits. The only wing that imports Starlette or uvicorn.
"""
