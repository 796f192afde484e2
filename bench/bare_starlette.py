"""A bare Starlette endpoint on uvicorn, in its own process: the stack the provider routes use.

The reference of the ``providers`` part: what a SendGrid-style send costs when
the endpoint itself costs nothing. One route, ``POST`` at the SendGrid send
path the server serves, reads the request's body and answers ``202`` with an
empty body and an ``X-Message-Id``, as SendGrid does; nothing is parsed or
stored. uvicorn runs as the server runs it (:mod:`pytest_tempinbox.server.http.listener`):
the same event loop (uvloop when installed), its ``auto`` HTTP protocol
(httptools when installed, h11 otherwise), no lifespan, no access log, no
``Date`` header. Run as ``python -m bench.bare_starlette``: it prints its URL
once it listens, and serves until SIGTERM.
"""

from __future__ import annotations

import socket

__all__ = ["PATH", "main"]

PATH = "/providers/sendgrid/v3/mail/send"
_HOST = "127.0.0.1"


def main() -> None:
    """Listen on a free loopback port, print the send URL, serve until stopped."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from pytest_tempinbox.server.event_loops import loop_factory

    async def send(request: Request) -> Response:
        await request.body()
        return Response(status_code=202, headers={"X-Message-Id": "bare"})

    app = Starlette(routes=[Route(PATH, send, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((_HOST, 0))
    sock.listen(2048)
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        date_header=False,
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    print(f"http://{_HOST}:{sock.getsockname()[1]}{PATH}", flush=True)
    loop = loop_factory("auto")()
    try:
        loop.run_until_complete(server.serve(sockets=[sock]))
    finally:
        loop.close()


if __name__ == "__main__":
    main()
