"""The package's shape: which part may import which, read from the source.

Three programs share the package: the parser (``parsing/``), the server
(``server/``) and the client (``client/``), with the checks of a message
(``checks/``) between the parser and the two others, over a core of data and settings
(``config``, ``models``, ``errors``, ``limits``, ``smtp_security``,
``transport``, ``_net``). The
pytest plugin, the command line and the package's front door sit on top. The
rules below are the README's "Architecture" picture; a test fails the day an
import crosses it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_tempinbox"
CORE = {"config", "errors", "limits", "models", "smtp_security", "transport", "_net", "__version__"}
# What each part may import from the package, besides itself.
ALLOWED = {
    "core": CORE,
    "parsing": CORE,
    "checks": CORE | {"parsing"},
    "server": CORE | {"parsing", "checks"},
    "client": CORE | {"parsing", "checks"},
}
TOP = {"__init__", "__main__", "_cli", "plugin", "django_mail"}  # may import anything


def part_of(module: str) -> str:
    """The part a module (dotted, under the package) belongs to."""
    first = module.split(".")[1] if "." in module else "__init__"
    if first in {"parsing", "checks", "server", "client", "plugin"}:
        return first
    return "__init__" if first == "__init__" else ("top" if first in TOP else "core")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    """The package's modules that ``path`` imports, as dotted names."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: package.count(".") + 2 - node.level]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "pytest_tempinbox" or target.endswith(".") or node.module is None:
                found |= {f"{target}.{alias.name}".strip(".") for alias in node.names}
            else:
                found.add(target)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("pytest_tempinbox.")}


def first_name(module: str) -> str:
    return module.split(".")[1]


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: module_name(path))
def test_each_part_imports_only_what_lies_below_it(path: Path) -> None:
    part = part_of(module_name(path))
    if part in {"__init__", "top", "plugin"}:
        return
    allowed = ALLOWED[part] | {part}
    # models reads and checks a message with the parser's and the checks' helpers, imported
    # inside its methods.
    lazily_allowed = (
        {"parsing", "checks"} if module_name(path) == "pytest_tempinbox.models" else set()
    )
    at_import_time = imports(path, top_level_only=True)
    for target in imports(path):
        name = first_name(target)
        lazy = name in lazily_allowed and target not in at_import_time
        assert name in allowed or lazy, (
            f"{module_name(path)} ({part}) imports {target}, which its part may not import"
        )


def test_the_rules_see_the_imports() -> None:
    # The checker itself: the known imports are found, relative and absolute.
    store = imports(PACKAGE / "server" / "stored_message.py")
    assert "pytest_tempinbox.models" in store
    assert "pytest_tempinbox.parsing.message" in store
    assert "pytest_tempinbox.server.inbox_server" in imports(PACKAGE / "server" / "__init__.py")
    assert part_of("pytest_tempinbox.client.http") == "client"
    assert part_of("pytest_tempinbox.models") == "core"


MAX_LINES = 400


@pytest.mark.parametrize("path", MODULES, ids=lambda path: module_name(path))
def test_a_long_module_says_why(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count("\n") <= MAX_LINES:
        return
    docstring = ast.get_docstring(ast.parse(text)) or ""
    assert "is long because" in " ".join(docstring.split()), (
        f"{module_name(path)} has {text.count(chr(10))} lines, over {MAX_LINES}: split it by "
        "job, or say in its docstring why it is long ('The module is long because ...')"
    )


def test_the_client_modules_import_one_way() -> None:
    """Each flow is written once below the client that drives it; no two modules name each other.

    Imports for type checking count too: the client and its inbox handle, which
    name each other, live in one module.
    """
    client = "pytest_tempinbox.client"
    graph = {
        module_name(path): {name for name in imports(path) if name.startswith(client + ".")}
        for path in sorted((PACKAGE / "client").glob("*.py"))
    }
    done: list[str] = []
    while len(done) < len(graph):
        ready = [name for name in graph if name not in done and graph[name] <= set(done)]
        assert ready, (
            f"the client's modules import each other in a circle: {set(graph) - set(done)}"
        )
        done += ready
    # The calls and the flows made of them know nothing of the client above them.
    assert graph[f"{client}.calls"] == set()
    assert graph[f"{client}.flows"] <= {f"{client}.calls"}
