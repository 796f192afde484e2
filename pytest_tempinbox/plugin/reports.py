"""What a test's report says of its inboxes: the mail a failing test received, viewer links.

The fixtures record each inbox they make in the test's stash
(:func:`inboxes_of`), which registers the :class:`Reporter` the first time: a
run that makes no inbox pays for no hook around its reports. A failed call gets
a ``tempinbox`` section listing each inbox's mail; with ``--tempinbox-ui`` each
new inbox is linked to the viewer; with ``--tempinbox-artifacts``,
``--tempinbox-keep``, pytest-html or allure-pytest the mail is also saved,
linked or kept (:mod:`.artifacts`, :mod:`.keep`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from ..errors import InboxNotFound
from .session import SERVERS, viewer_url

if TYPE_CHECKING:
    from ..client.http import Inbox
    from .artifacts import Evidence

__all__ = ["VIEWER_SHOWN", "Reporter", "discard", "inboxes_of", "viewer_line"]

_INBOXES = pytest.StashKey[list["Inbox"]]()
_ANNOUNCED = pytest.StashKey[set[str]]()
_KEPT = pytest.StashKey[bool]()  # --tempinbox-keep: this failed test's inboxes stay
_REPORTER = "tempinbox-reporter"
VIEWER_SHOWN = pytest.StashKey[bool]()
"""Set once the session's viewer line is printed: in the header, or first under ``-q``."""


class Reporter:
    """Adds the mail of a failed test's inboxes to its report.

    Registered when a test first asks for an inbox, so that a run that uses none
    does not pay for a hook around every report. With ``viewer``, the inbox
    viewer's URL (``--tempinbox-ui``), it also prints a link to each new inbox
    after the phase that made it: reports are made outside output capture.
    With ``evidence`` (``--tempinbox-artifacts``, ``--tempinbox-keep``, pytest-html,
    allure-pytest), a failed setup or call also saves, links or keeps the mail.
    """

    def __init__(self, viewer: str | None, evidence: Evidence | None = None) -> None:
        self.viewer = viewer
        self.evidence = evidence
        self.unlisted = 0  # inboxes not linked as they were made (no -v)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Add a ``tempinbox`` section listing the mail each inbox of a failed test received."""
        report = yield
        inboxes = item.stash.get(_INBOXES, None)
        if inboxes and self.viewer is not None:
            self._announce(item, inboxes, self.viewer)
        if inboxes and report.failed and report.when == "call":
            report.sections.append(("tempinbox", _mail_report(inboxes)))
        if inboxes and report.failed and report.when != "teardown" and self.evidence is not None:
            self.evidence.record(item.nodeid, report, inboxes)
            item.stash[_KEPT] = self.evidence.keep
        return report

    def _announce(self, item: pytest.Item, inboxes: list[Inbox], viewer: str) -> None:
        """Link each new inbox to the viewer: live under ``-v``, counted for the summary else.

        Under ``-v`` each test has a line of its own, and the link goes between
        them as pytest's live logs do. With progress dots (the default, ``-q``)
        a line would split them: the summary names the viewer instead.
        """
        announced = item.stash.setdefault(_ANNOUNCED, set())
        new = [inbox for inbox in inboxes if inbox.address not in announced]
        announced.update(inbox.address for inbox in new)
        reporter = item.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or not new:
            return
        if item.config.get_verbosity() < 1:
            self.unlisted += len(new)
            return
        for inbox in new:
            link = f"{viewer}?inbox={quote(inbox.address, safe='@')}"
            reporter.write_line(f"tempinbox viewer: {link} ({item.nodeid})")

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """With ``--tempinbox-ui`` and progress dots, the viewer's URL and how to get each link."""
        if self.viewer is not None and self.unlisted:
            terminalreporter.write_line(
                f"tempinbox viewer: {self.viewer} ({self.unlisted} inbox(es) made;"
                " pytest -v prints a link to each as its test runs)"
            )


def inboxes_of(request: pytest.FixtureRequest) -> list[Inbox]:
    """The list of the inboxes made for this test, for teardown and the failure report."""
    manager = request.config.pluginmanager
    if not manager.has_plugin(_REPORTER):
        config = request.config
        manager.register(Reporter(_announced_viewer(config), _evidence(config)), _REPORTER)
    made: list[Inbox] = request.node.stash.setdefault(_INBOXES, [])
    return made


def discard(request: pytest.FixtureRequest, inboxes: list[Inbox]) -> None:
    """Delete a test's inboxes at its teardown, unless ``--tempinbox-keep`` kept them."""
    if request.node.stash.get(_KEPT, False):
        return
    for inbox in inboxes:
        with contextlib.suppress(InboxNotFound):  # the test deleted it itself
            inbox.delete()


def _evidence(config: pytest.Config) -> Evidence | None:
    """What to do with a failed test's mail beyond its report section; None: nothing."""
    settings = config.stash[SERVERS].settings
    artifacts, keep = settings.artifacts, settings.keep
    # pytest-html writes a report only with --html; allure-pytest only with --alluredir.
    html_report = (
        config.getoption("htmlpath", None) if config.pluginmanager.hasplugin("html") else None
    )
    allure = config.pluginmanager.hasplugin("allure_listener")
    if not (artifacts or keep or html_report or allure):
        return None
    from .artifacts import Evidence

    return Evidence(artifacts=artifacts, html_report=html_report, allure=allure, keep=keep)


def _announced_viewer(config: pytest.Config) -> str | None:
    """With ``--tempinbox-ui``, the viewer URL to link each new inbox to; not in xdist workers."""
    servers = config.stash[SERVERS]
    if not servers.settings.ui or servers.settings.worker:
        return None
    return viewer_url(servers.get().api_url)


def viewer_line(config: pytest.Config) -> str | None:
    """With ``--tempinbox-ui``, the line naming the viewer (starting the server); None else.

    Not in xdist workers: their controller prints it. Marks the line printed.
    """
    servers = config.stash[SERVERS]
    if not servers.settings.ui or servers.settings.worker:
        return None
    config.stash[VIEWER_SHOWN] = True
    return f"tempinbox viewer: {viewer_url(servers.get().api_url)}"


def _mail_report(inboxes: list[Inbox]) -> str:
    """The ``tempinbox`` section: each inbox's mail, and why mail may be missing."""
    from ..client.explain import about, location_of
    from ..client.http import describe
    from ..errors import TempInboxError

    lines = []
    refused = False
    for inbox in inboxes:
        try:
            received = inbox.messages()
        except TempInboxError as exc:
            lines.append(f"{inbox.address}: could not be read ({exc})")
        else:
            lines.append(f"{inbox.address}: {len(received)} message(s)")
            lines += [f"  - {describe(message)}" for message in received]
        # Why mail may be missing: refused while the test ran, kept by Django. The
        # refusals since the first inbox was made cover the later ones': listed once.
        notes, refused_here = about(inbox, refusals=inbox is inboxes[0])
        lines += [f"  {note}" for note in notes]
        refused = refused or refused_here
    location = location_of(inboxes[0].client, refused=refused) if inboxes else None
    if location is not None:
        lines.append(location)
    return "\n".join(lines)
