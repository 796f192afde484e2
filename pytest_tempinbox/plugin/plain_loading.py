"""The package's modules load with Python's own loader, not through pytest's assertion rewriter.

pytest rewrites the ``assert`` statements of every module of a plugin's
distribution, so that a plugin's failing ``assert`` explains itself. This
package has no such ``assert`` for a user to meet: its failures are written
out in words, and its ``assert`` statements are internal checks. Yet in an
installed package (a wheel; an editable install is not marked), every one of
its modules went through pytest's import hook: the 85 modules of the first
mail test, 25 to 40 ms more on that test's setup, and the server's checks
on the SMTP path run rewritten.

pytest offers a plugin no public way out of the rewriting (``PYTEST_DONT_REWRITE``
leaves a module unrewritten but still loaded by the hook), so
:func:`leave_assertion_rewriting` takes the package's names out of the set of
marked names that pytest's hook keeps. A pytest whose hook keeps no such set is
left as it is. Standard library only: the plugin imports this first.
"""

from __future__ import annotations

import sys

__all__ = ["PACKAGE", "leave_assertion_rewriting"]

PACKAGE = __name__.partition(".")[0]
"""The top-level package whose modules pytest is asked not to rewrite."""


def leave_assertion_rewriting() -> None:
    """Unmark the package (and any of its modules) in each of pytest's assertion-rewriting hooks.

    The modules imported already stay as they were loaded; the ones imported
    from now on load as in a run without pytest. Safe to call more than once.
    """
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if not isinstance(marked, set):
            continue
        ours = {name for name in marked if name == PACKAGE or name.startswith(PACKAGE + ".")}
        if ours:
            marked.difference_update(ours)
            decided = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(decided, dict):
                decided.clear()


leave_assertion_rewriting()
