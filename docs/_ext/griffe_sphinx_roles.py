"""A Griffe extension that turns the Sphinx roles of the package's docstrings into links.

The docstrings are written for ``help()`` and Sphinx alike (:class:`Inbox`,
:meth:`~Inbox.messages`); mkdocstrings renders Markdown, where such a role would
show as literal text. Each role becomes a cross-reference that links to the
object when the site documents it, and reads as plain code when it does not
(``optional``, so an object left out of the reference is no broken link).
Loaded by mkdocs.yml through mkdocstrings' ``extensions`` option; the site's
build is its test.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|exc|mod|data|obj):`(~?)([^`<>]+)`")
_CALLABLE_ROLES = {"meth", "func"}


def _scopes(obj: griffe.Object) -> list[griffe.Object]:
    """Where a relative name in ``obj``'s docstring is looked up, innermost first."""
    scopes: list[griffe.Object] = []
    scope: griffe.Object | None = obj if obj.is_class or obj.is_module else obj.parent
    while scope is not None:
        scopes.append(scope)
        scope = scope.parent
    return scopes


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The canonical path of what ``target`` names, seen from ``obj``; None if unknown."""
    collection = obj.modules_collection
    candidates = [f"{scope.path}.{target}" for scope in _scopes(obj)] + [target]
    for path in candidates:
        try:
            found = collection.get_member(path)
            return str(found.final_target.path if found.is_alias else found.path)
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue  # not there, or an import of something outside the package
    return None


def convert_roles(obj: griffe.Object, text: str) -> str:
    """Return ``text`` with each Sphinx role written as a Markdown cross-reference or code."""

    def replace(match: re.Match[str]) -> str:
        role, short, target = match.groups()
        title = target.rsplit(".", 1)[-1] if short else target
        if role in _CALLABLE_ROLES:
            title += "()"
        path = _resolve(obj, target)
        if path is None:
            return f"`{title}`"
        return f'<autoref identifier="{path}" optional><code>{title}</code></autoref>'

    return _ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles in every docstring once the package is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring of ``obj``, when it has one."""
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = convert_roles(obj, obj.docstring.value)
