"""Whether a message's links answer: each http(s) URL requested, its redirects and status told.

A link is requested with ``HEAD``, then with a streamed ``GET`` (its body never
read) when the server refuses ``HEAD``; redirects are followed one hop at a time
so that each is reported, and a redirect to another scheme (``mailto:``,
``tel:``...) is reported but not followed. URLs of other schemes are listed as
skipped and never requested. :func:`check_links` gives a :class:`LinkReport`;
:func:`assert_links_work` turns its broken links into a
:class:`~pytest_tempinbox.errors.MailAssertionError`.

``requests`` is imported when a check runs, never at import time.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from .._version import __version__
from ..errors import MailAssertionError

if TYPE_CHECKING:
    import requests

__all__ = ["LinkReport", "LinkResult", "Redirect", "assert_links_work", "check_links"]

JSON = dict[str, Any]
HTTP_SCHEMES = ("http", "https")
MAX_REDIRECTS = 10
"""Redirects followed from one link before it counts as broken."""
USER_AGENT = f"pytest-tempinbox/{__version__} (link check)"
# A HEAD answered with one of these is believed: the resource is not there. Any
# other 4xx/5xx answer to HEAD is retried with GET, because many servers and
# frameworks answer HEAD wrongly (403, 400, 500...) where GET works.
_BELIEVED_ON_HEAD = frozenset({404, 410})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirect hop: its status and the absolute URL its ``Location`` leads to."""

    status: int
    location: str

    def to_json(self) -> JSON:
        """Return the JSON object form, ``{"status", "location"}``."""
        return {"status": self.status, "location": self.location}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Redirect:
        """Build a redirect from its JSON object form."""
        return cls(status=data["status"], location=data["location"])


@dataclass(frozen=True, slots=True)
class LinkResult:
    """What requesting one link gave.

    ``ok`` is True when the last answer came with a status below 400 and no
    error: a redirect to a non-http(s) scheme ends the chain with its own 3xx,
    which counts as working (a browser hands it to the program for that scheme).
    ``status`` is the last HTTP status received (None when none came);
    ``redirects`` the hops followed, in order; ``error`` what went wrong
    ("timed out after 5 s", "connection refused", "name does not resolve",
    "TLS: certificate verify failed (...)", "redirect loop ...", "more than 10
    redirects"); ``method`` the method of the last request (``"HEAD"`` or
    ``"GET"``, None if none was sent); ``elapsed`` the seconds the link took.
    """

    url: str
    ok: bool
    status: int | None
    redirects: tuple[Redirect, ...]
    error: str | None
    method: str | None
    elapsed: float

    def describe(self) -> str:
        """One line for people: the URL, the way it went, and how it ended."""
        steps = [self.url]
        steps += [f"{hop.status} {hop.location}" for hop in self.redirects]
        if self.error is not None:
            end = self.error
        elif self.status is not None:
            end = _status_text(self.status)
        else:
            end = "no answer"
        via = f" ({self.method})" if self.method else ""
        return " -> ".join(steps) + f" -> {end}{via}"

    def to_json(self) -> JSON:
        """Return the JSON object form."""
        return {
            "url": self.url,
            "ok": self.ok,
            "status": self.status,
            "method": self.method,
            "redirects": [hop.to_json() for hop in self.redirects],
            "error": self.error,
            "elapsed": round(self.elapsed, 3),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinkResult:
        """Build a result from its JSON object form."""
        return cls(
            url=data["url"],
            ok=data["ok"],
            status=data.get("status"),
            redirects=tuple(Redirect.from_json(hop) for hop in data.get("redirects", ())),
            error=data.get("error"),
            method=data.get("method"),
            elapsed=data.get("elapsed", 0.0),
        )


@dataclass(frozen=True, slots=True)
class LinkReport:
    """The links of a message, checked: one result per distinct http(s) URL, in first-seen order.

    ``skipped`` are the URLs of other schemes (``mailto:``, ``tel:``, ``cid:``,
    relative URLs...), never requested; ``ignored`` the http(s) URLs that an
    ``ignore`` entry matched, not requested either.
    """

    results: tuple[LinkResult, ...]
    skipped: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    @property
    def broken(self) -> tuple[LinkResult, ...]:
        """The results that are not ``ok``."""
        return tuple(result for result in self.results if not result.ok)

    @property
    def ok(self) -> bool:
        """True when no requested link is broken."""
        return not self.broken

    def to_json(self) -> JSON:
        """Return the JSON object form, ``{"ok", "results", "skipped", "ignored"}``."""
        return {
            "ok": self.ok,
            "results": [result.to_json() for result in self.results],
            "skipped": list(self.skipped),
            "ignored": list(self.ignored),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinkReport:
        """Build a report from its JSON object form (``ok`` is recomputed, not read)."""
        return cls(
            results=tuple(LinkResult.from_json(result) for result in data["results"]),
            skipped=tuple(data.get("skipped", ())),
            ignored=tuple(data.get("ignored", ())),
        )


def check_links(
    urls: Iterable[str],
    *,
    ignore: Iterable[str | re.Pattern[str]] = (),
    timeout: float = 5.0,
    concurrency: int = 8,
    total: float = 60.0,
) -> LinkReport:
    """Request every distinct http(s) URL of ``urls`` and report how each answered.

    - ``HEAD`` first; a ``GET`` (streamed, body unread, connection closed) when
      ``HEAD`` is answered with a 4xx or 5xx other than 404 and 410, since many
      servers mishandle ``HEAD``. Redirects (301, 302, 303, 307, 308) are
      followed up to :data:`MAX_REDIRECTS`, each hop reported; one to a
      non-http(s) scheme is reported and not followed.
    - ``ignore``: a string is a substring of the URL (as in ``message.link(contains=...)``),
      a compiled pattern is searched in it.
    - ``timeout`` bounds each request's connecting and each wait for bytes;
      ``total`` bounds the whole check: a link still waiting when it runs out
      is reported broken with why. At most ``concurrency`` links are requested at once.
    - Each link gets a fresh session: no cookies pass between links (within
      one link's redirects they do, as in a browser). The proxies of the
      environment (``HTTPS_PROXY``, ``NO_PROXY``...) are used, except for
      loopback hosts (``localhost``, ``127.0.0.0/8``, ``::1``), always
      requested directly: the application under test is there. ``.netrc``
      credentials are never sent; ``REQUESTS_CA_BUNDLE`` is honoured.
    """
    if timeout <= 0 or total <= 0:
        raise ValueError("timeout and total must be positive")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    patterns = [(entry, entry if isinstance(entry, re.Pattern) else None) for entry in ignore]
    wanted: list[str] = []
    skipped: list[str] = []
    ignored: list[str] = []
    seen: set[str] = set()
    for raw in urls:
        url = raw.strip()
        if url in seen:
            continue
        seen.add(url)
        if urlsplit(url).scheme.lower() not in HTTP_SCHEMES:
            skipped.append(url)
        elif any(_matches(entry, url) for entry, _ in patterns):
            ignored.append(url)
        else:
            wanted.append(url)
    results: list[LinkResult] = []
    if wanted:
        deadline = time.monotonic() + total
        with ThreadPoolExecutor(min(concurrency, len(wanted)), "tempinbox-links") as pool:
            results = list(pool.map(lambda url: _check(url, timeout, deadline, total), wanted))
    return LinkReport(tuple(results), tuple(skipped), tuple(ignored))


def assert_links_work(report: LinkReport) -> None:
    """Raise :class:`~pytest_tempinbox.errors.MailAssertionError` listing the broken links.

    Each broken link is told with its redirects and its status or error; the
    message also says how many worked and how many were skipped or ignored.
    """
    broken = report.broken
    if not broken:
        return
    worked = len(report.results) - len(broken)
    lines = [
        f"expected every link of the message to work, but {len(broken)} of "
        f"{len(report.results)} did not ({worked} worked; {len(report.skipped)} skipped as "
        f"not http(s), {len(report.ignored)} ignored):"
    ]
    lines += [f"  {result.describe()}" for result in broken]
    lines.append(
        "Likely cause: a route missing from the application under test, a URL built with "
        "the wrong host or port, or a server that is not running; pass ignore=... for "
        "links that cannot be reached from the test."
    )
    raise MailAssertionError("\n".join(lines))


def _matches(entry: str | re.Pattern[str], url: str) -> bool:
    return entry in url if isinstance(entry, str) else entry.search(url) is not None


def _status_text(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def _check(url: str, timeout: float, deadline: float, total: float) -> LinkResult:
    import requests

    started = time.monotonic()
    with requests.Session() as session:
        session.trust_env = False  # no .netrc; proxies are chosen per host below
        session.headers.update({"User-Agent": USER_AGENT, "Accept": "*/*"})
        method = "HEAD"
        status, redirects, error = _follow(session, method, url, timeout, deadline, total)
        if error is None and (status or 0) >= 400 and status not in _BELIEVED_ON_HEAD:
            session.cookies.clear()
            method = "GET"
            status, redirects, error = _follow(session, method, url, timeout, deadline, total)
    sent = status is not None or (error is not None and not error.startswith("not checked"))
    return LinkResult(
        url=url,
        ok=error is None and status is not None and status < 400,
        status=status,
        redirects=tuple(redirects),
        error=error,
        method=method if sent else None,
        elapsed=time.monotonic() - started,
    )


def _follow(
    session: requests.Session, method: str, url: str, timeout: float, deadline: float, total: float
) -> tuple[int | None, list[Redirect], str | None]:
    """Request ``url`` and its redirects: the last status, the hops, and the error if any."""
    redirects: list[Redirect] = []
    status: int | None = None
    visited = {url}
    verify: str | bool = (
        os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    )
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            prefix = "timed out" if status is not None else "not checked"
            return status, redirects, f"{prefix}: the check's total of {total:g} s ran out"
        wait = min(timeout, remaining)
        try:
            response = session.request(
                method,
                url,
                allow_redirects=False,
                stream=True,
                timeout=wait,
                proxies=_proxies(url),
                verify=verify,
            )
        except Exception as exc:  # every failure of a link is part of the report
            error = _describe(exc, wait)
            if error.startswith("timed out") and wait < timeout:
                error = f"timed out: the check's total of {total:g} s ran out"
            return status, redirects, error
        with response:
            status = response.status_code
            location = response.headers.get("Location")
        if status not in _REDIRECTS or not location:
            return status, redirects, None
        target = urljoin(url, location.strip())
        redirects.append(Redirect(status, target))
        if urlsplit(target).scheme.lower() not in HTTP_SCHEMES:
            return status, redirects, None
        if target in visited:
            return status, redirects, f"redirect loop: back to {target}"
        if len(redirects) >= MAX_REDIRECTS:
            return status, redirects, f"more than {MAX_REDIRECTS} redirects"
        visited.add(target)
        url = target


def _proxies(url: str) -> dict[str, str]:
    from requests.utils import get_environ_proxies

    host = urlsplit(url).hostname or ""
    if _is_loopback(host):
        return {}
    return dict(get_environ_proxies(url))


def _is_loopback(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and every exception it wraps (causes, contexts, urllib3's ``reason``)."""
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [current.__cause__, current.__context__, getattr(current, "reason", None)]
        wrapped += list(current.args)
        todo += [item for item in wrapped if isinstance(item, BaseException)]


def _describe(exc: BaseException, timeout: float) -> str:
    """A short account of why a request failed, for a person reading the report."""
    import requests

    chain = list(_chain(exc))
    names = {type(item).__name__ for item in chain}
    if isinstance(exc, requests.Timeout) or any(isinstance(e, TimeoutError) for e in chain):
        return f"timed out after {timeout:g} s"
    for item in chain:
        if isinstance(item, ssl.SSLCertVerificationError):
            return f"TLS: certificate verify failed ({item.verify_message})"
    if isinstance(exc, requests.exceptions.SSLError) or any(
        isinstance(e, ssl.SSLError) for e in chain
    ):
        return f"TLS: {_short(exc)}"
    if "NameResolutionError" in names or any(isinstance(e, socket.gaierror) for e in chain):
        return "name does not resolve"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "connection refused"
    if any(isinstance(e, ConnectionResetError) for e in chain):
        return "connection reset"
    if "RemoteDisconnected" in names:
        return "connection closed without an answer"
    if isinstance(exc, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema)):
        return f"invalid URL: {_short(exc)}"
    return f"{type(exc).__name__}: {_short(exc)}"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"
