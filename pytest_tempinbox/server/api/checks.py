"""The checks of a message over HTTP: its HTML's support in email clients, links, spam score.

``GET /api/messages/{email}/{id}/html-check``, ``.../link-check`` and
``.../spam-check`` answer with the JSON of the reports that
:mod:`pytest_tempinbox.checks` makes, the same that ``Message.html_compatibility()``,
``Message.check_links()`` and ``Message.spam_report()`` give in Python, for
clients in other languages. Each runs only when asked, in a worker thread: a
link check requests the message's links from the server (which a server
started with ``link_checks`` off refuses, 403 ``link_checks_off``), and a spam
check runs SpamAssassin on the server (501 ``spamassassin_missing`` where it is
not installed). The checks' modules are imported by the first request that
needs them: a server that is never asked for a check never loads them.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from ...errors import LINK_CHECKS_OFF, NOT_FOUND
from .endpoints import Reply, encode_json, parse_off_loop, problem_reply, seconds_parameter
from .request import Request

__all__ = ["MAX_LINK_TIMEOUT", "html_check", "link_check", "spam_check"]

MAX_LINK_TIMEOUT = 30.0
"""The longest ``timeout`` of one link a link check takes, in seconds."""
_LINK_CHECKS_OFF = (
    "this server's link checks are off (started with --no-link-checks): it requests "
    "no link of the mail it is sent; check the links from the test (Message.check_links())"
)


async def _parsed(request: Request) -> dict[str, Any]:
    found = request.store.message(request.args["email"], request.args["id"])
    await parse_off_loop([found])
    parsed: dict[str, Any] = json.loads(found.json)
    return parsed


async def html_check(request: Request) -> Reply:
    """``GET .../html-check[?clients=gmail,outlook.windows]``: the HTML's support report.

    A message without an HTML body answers 404 ``not_found``; ``clients``
    naming no known client, 400 ``invalid_request``.
    """
    from ...checks.html_support import html_compatibility

    id = request.args["id"]
    parsed = await _parsed(request)
    if parsed["html"] is None:
        return problem_reply(404, NOT_FOUND, f"message {id} has no HTML body to check")
    given = request.query.get("clients", "").strip()
    clients = [name for name in given.split(",") if name.strip()] if given else None
    check = functools.partial(html_compatibility, parsed["html"], clients=clients)
    report = await asyncio.get_running_loop().run_in_executor(None, check)
    return Reply(200, encode_json(report.to_json()))


async def link_check(request: Request) -> Reply:
    """``GET .../link-check[?timeout=5&ignore=part,part]``: every link and image requested.

    ``timeout`` is each request's, in seconds (above 0, up to
    :data:`MAX_LINK_TIMEOUT`); ``ignore`` lists parts of the URLs to leave out,
    comma-separated. 403 ``link_checks_off`` when the server's link checks are off.
    """
    if not request.server().config.link_checks:
        return problem_reply(403, LINK_CHECKS_OFF, _LINK_CHECKS_OFF)
    from ...checks.link_targets import link_targets
    from ...checks.links import check_links

    query = request.query
    timeout = _timeout(query.get("timeout"))
    ignore = [part for part in query.get("ignore", "").split(",") if part.strip()]
    parsed = await _parsed(request)
    request.store.charge_check(request.tenant)  # checks_per_minute: 429 quota_exceeded
    targets = link_targets(parsed["links"], parsed["html"])
    check = functools.partial(check_links, targets, ignore=ignore, timeout=timeout)
    report = await asyncio.get_running_loop().run_in_executor(None, check)
    return Reply(200, encode_json(report.to_json()))


async def spam_check(request: Request) -> Reply:
    """``GET .../spam-check``: SpamAssassin's score and the rules that fired (about a second)."""
    from ...checks.spam import spam_report

    raw = request.store.message(request.args["email"], request.args["id"]).raw
    request.store.charge_check(request.tenant)  # checks_per_minute: 429 quota_exceeded
    report = await asyncio.get_running_loop().run_in_executor(None, spam_report, raw)
    return Reply(200, encode_json(report.to_json()))


def _timeout(text: str | None) -> float:
    return seconds_parameter(
        text,
        absent=5.0,
        top=MAX_LINK_TIMEOUT,
        zero=False,
        error=f"timeout must be a number of seconds above 0, up to {MAX_LINK_TIMEOUT:g}",
    )
