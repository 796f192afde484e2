"""``--tempinbox-keep``: after the run, keep the failing tests' inboxes and the viewer open.

The failing tests' inboxes are not deleted at teardown (the plugin marks each
failed report with their addresses, which also crosses from xdist workers to
the controller). At the end of the session, the process that owns the server
prints a viewer link per inbox and waits for Ctrl-C, so that the links work
while someone reads them. It waits only when a person can press Ctrl-C: on a
terminal and outside CI (``$CI`` unset); otherwise it says that it did not.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import pytest

__all__ = ["KEPT_ATTRIBUTE", "Keeper", "interactive", "wait_for_interrupt"]

# The attribute of a failed TestReport that lists the addresses kept for it;
# a plain list of strings, so that xdist carries it from a worker to the controller.
KEPT_ATTRIBUTE = "tempinbox_kept"


def interactive() -> bool:
    """Whether a person can stop the wait: the output is a terminal, and ``$CI`` is not set."""
    return sys.stdout.isatty() and not os.environ.get("CI")


def wait_for_interrupt() -> None:
    """Block until Ctrl-C (KeyboardInterrupt), then return."""
    try:
        while True:
            threading.Event().wait(3600)
    except KeyboardInterrupt:
        pass


class Keeper:
    """Collects the kept inboxes of failed tests, and holds the server open at the end.

    ``viewer`` gives the viewer's URL and whether its server lives in this
    process (it stops with the run); it is called only when something was kept.
    """

    def __init__(self, config: pytest.Config, viewer: Callable[[], tuple[str, bool]]) -> None:
        self.config = config
        self.viewer = viewer
        self.kept: dict[str, list[str]] = {}
        self.interrupted = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note the addresses a failed report kept, by test."""
        addresses: Any = getattr(report, KEPT_ATTRIBUTE, None)
        if report.failed and addresses:
            self.kept.setdefault(report.nodeid, []).extend(str(a) for a in addresses)

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        """Note a run stopped by Ctrl-C: a second wait for Ctrl-C would be a surprise."""
        self.interrupted = exitstatus == 2  # pytest.ExitCode.INTERRUPTED

    def finish(self) -> None:
        """Print the kept inboxes' links; wait for Ctrl-C while this process serves them.

        Called by the plugin's ``pytest_unconfigure``, before it stops the server.
        """
        if not self.kept:
            return
        viewer, in_process = self.viewer()
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        write = reporter.write_line
        if not in_process:
            write(f"tempinbox: kept the inboxes of {len(self.kept)} failing test(s) on {viewer}")
        elif interactive() and not self.interrupted:
            write(
                f"Inbox viewer kept open for {len(self.kept)} failing test(s): {viewer}"
                " — press Ctrl-C to stop"
            )
        else:
            write(
                "tempinbox: --tempinbox-keep: not waiting (CI, not a terminal, or Ctrl-C);"
                f" the viewer at {viewer} stops now, with the inboxes of {len(self.kept)}"
                " failing test(s)"
            )
        for nodeid, addresses in self.kept.items():
            for address in addresses:
                write(f"  {viewer}?inbox={quote(address, safe='@')} ({nodeid})")
        if in_process and interactive() and not self.interrupted:
            wait_for_interrupt()
