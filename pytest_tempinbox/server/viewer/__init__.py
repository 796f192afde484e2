"""The inbox viewer: a web page, served beside the API, to watch one inbox's mail.

Framework-free like :mod:`pytest_tempinbox.server.api.endpoints`: each function makes a
:class:`~pytest_tempinbox.server.api.endpoints.Reply` that the Starlette app
(:mod:`pytest_tempinbox.server.http.app`) sends. The page (``index.html``), its style
sheet and its one script are files of this package, served as they are: no
build step, no framework. The page reads the inbox through the public API and
follows it through the event stream, ``GET /api/events/{email}``.

Security model: an inbox's address is the key to it, and nothing here lists
inboxes; on a server with tenants, the page asks for a token, lists the
tenant's inboxes through the API, and the HTML view below takes a short-lived
ticket of one inbox instead of the token (:mod:`..api.tickets`, docs/tenants.md).
Every answer carries a Content-Security-Policy. The page's allows only
its own script, style, requests and frames. A message's HTML is served by
:func:`html_document` into a sandboxed frame (no scripts, an opaque origin)
under a policy that lets no script run and loads no remote image unless asked.
The same answer is a message's HTML as its recipient sees it, for a browser
driven by a test (``Message.open``): its inline ``cid:`` images resolved
(:mod:`.recipient`), and a link that opens a new window allowed to, as in a
mail program; scripts still never run.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from ...errors import NOT_FOUND
from ..api.endpoints import Reply, parse_off_loop, problem_reply
from ..api.request import Request
from ..store.protocol import InboxStore
from .recipient import resolve_cid_images

__all__ = [
    "ASSETS",
    "MAIL_POLICY",
    "MAIL_POLICY_REMOTE_IMAGES",
    "PAGE_POLICY",
    "asset",
    "asset_endpoint",
    "html_document",
    "html_endpoint",
    "page",
    "page_endpoint",
]


# The page: its own script, style sheet, requests (the API, the event stream)
# and frames (a message's HTML) only; no inline script, and no site may frame it.
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
# A message's HTML: no script, no request but its own inline styles and data:
# images, framed only by the viewer, sandboxed even when opened on its own (a
# link may open a new window, as a mail program's does, outside the sandbox).
MAIL_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; "
    "base-uri 'none'; frame-ancestors 'self'; "
    "sandbox allow-popups allow-popups-to-escape-sandbox"
)
MAIL_POLICY_REMOTE_IMAGES = MAIL_POLICY.replace("img-src data:", "img-src data: http: https:")

_PAGE_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": PAGE_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}
# The files served under /viewer/, by name, with their content types.
ASSETS: Mapping[str, str] = {
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}


@functools.cache
def _read(name: str) -> bytes:
    # By path beside this module (a wheel installs the files there): importlib.resources
    # would load tempfile, shutil and the compression modules with every server's start.
    with open(os.path.join(os.path.dirname(__file__), name), "rb") as file:
        return file.read()


def page() -> Reply:
    """``GET /``: the viewer page, the same for every inbox (the script reads the address)."""
    return Reply(200, _read("index.html"), "text/html; charset=utf-8", _PAGE_HEADERS)


def asset(name: str) -> Reply | None:
    """``GET /viewer/{name}``: the page's script or style sheet; None for any other name."""
    content_type = ASSETS.get(name)
    if content_type is None:
        return None
    return Reply(200, _read(name), content_type, _PAGE_HEADERS)


async def html_document(store: InboxStore, email: str, id: str, remote_images: bool) -> Reply:
    """``GET /viewer/messages/{email}/{id}/html``: a message's HTML body, for a sandboxed frame.

    Served as the decoded text in UTF-8, its ``cid:`` images resolved, under
    :data:`MAIL_POLICY`, or :data:`MAIL_POLICY_REMOTE_IMAGES` when
    ``remote_images``: the person reading asked for them. Raises the store's
    errors for an unknown inbox or message; a message without HTML answers
    404 ``not_found``.
    """
    found = store.message(email, id)
    await parse_off_loop([found])
    parsed = json.loads(found.json)
    html = parsed.get("html")
    if html is None:
        return problem_reply(404, NOT_FOUND, f"message {id} has no HTML body")
    html = resolve_cid_images(html, found.raw, parsed.get("attachments", ()))
    policy = MAIL_POLICY_REMOTE_IMAGES if remote_images else MAIL_POLICY
    headers = {
        "Content-Security-Policy": policy,
        "Referrer-Policy": "no-referrer",
        "X-DNS-Prefetch-Control": "off",
    }
    return Reply(200, html.encode("utf-8", "replace"), "text/html; charset=utf-8", headers)


# The viewer's entries of the route table (:data:`pytest_tempinbox.server.api.routes.ROUTES`).


async def page_endpoint(request: Request) -> Reply:
    """``GET /``: :func:`page`."""
    return page()


async def asset_endpoint(request: Request) -> Reply:
    """``GET /viewer/{name}``: :func:`asset`, or 404 ``not_found`` for a name it does not serve."""
    name = request.args["name"]
    reply = asset(name)
    if reply is None:
        # Worded as the app's answer to a path no route matches, which reads the URL's path.
        path = urlsplit(f"/viewer/{name}").path
        return problem_reply(404, NOT_FOUND, f"no such route: {path[:200]}")
    return reply


async def html_endpoint(request: Request) -> Reply:
    """``GET /viewer/messages/{email}/{id}/html``: :func:`html_document`."""
    email, id = request.args["email"], request.args["id"]
    remote_images = request.query.get("images") == "remote"
    return await html_document(request.store, email, id, remote_images)
