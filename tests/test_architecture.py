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
    found = every_import(path, top_level_only=top_level_only)
    return {name for name in found if name.startswith("pytest_tempinbox.")}


def every_import(path: Path, *, top_level_only: bool = False) -> set[str]:
    """Every module ``path`` imports, the package's and others', as absolute dotted names."""
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
    return found


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
    store = imports(PACKAGE / "server" / "store" / "stored_message.py")
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


# The server's wings (README, "Architecture"): each rule reads every import of the
# wing's modules, those inside functions and under TYPE_CHECKING too.
SERVER = "pytest_tempinbox.server."
STORES = ("store.memory", "store.redis", "store.factory")
# The server's parts a rule may name by their bare name; any other bare name is a library.
SERVER_PARTS = {"smtp", "store", "api", "http", "in_process", "inbox_server", "viewer"}


def wing_modules(wing: str) -> list[Path]:
    """The modules of a wing of the server (``smtp``, ``store``, ``api``, ``http``)."""
    return sorted((PACKAGE / "server" / wing).rglob("*.py"))


def crossings(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    """``module imports target`` for each import of a module in ``paths`` that ``forbidden`` names.

    A forbidden name is a top-level module (``starlette``) or a part of the server
    (``server.smtp``), and covers the modules under it.
    """
    names = [SERVER + name if "." in name or name in SERVER_PARTS else name for name in forbidden]
    found = []
    for path in paths:
        for target in sorted(every_import(path)):
            if any(target == name or target.startswith(name + ".") for name in names):
                found.append(f"{module_name(path)} imports {target}")
    return found


def test_the_store_imports_no_smtp_and_no_http() -> None:
    others = ("smtp", "api", "http", "in_process", "inbox_server", "viewer")
    found = crossings(wing_modules("store"), (*others, "aiosmtpd", "starlette", "uvicorn"))
    assert not found, (
        "the store imports nothing of the SMTP side, the API or HTTP: they call the store, "
        "never the reverse; move the shared code into the store or out of it:\n" + "\n".join(found)
    )


def test_the_smtp_side_knows_the_store_only_through_its_protocol() -> None:
    found = crossings(wing_modules("smtp"), (*STORES, "api", "http", "in_process", "viewer"))
    assert not found, (
        "the SMTP side reaches the store through server.store.protocol (InboxStore) and its "
        "shared records, never the memory or Redis store nor the factory, and serves no "
        "API or HTTP:\n" + "\n".join(found)
    )


def test_the_api_imports_no_web_framework_and_no_smtp() -> None:
    found = crossings(
        wing_modules("api"), (*STORES, "smtp", "http", "aiosmtpd", "starlette", "uvicorn")
    )
    assert not found, (
        "the API is framework-free: it answers from the store's protocol, and the HTTP "
        "adapters (server.http) and the in-process transport serve its answers:\n"
        + "\n".join(found)
    )


def test_only_the_http_adapters_import_starlette_or_uvicorn() -> None:
    outside = [path for path in MODULES if "http" not in path.relative_to(PACKAGE).parts[:2]]
    found = crossings(outside, ("starlette", "uvicorn"))
    assert not found, (
        "only pytest_tempinbox.server.http may import Starlette or uvicorn; give the HTTP "
        "side an adapter there instead:\n" + "\n".join(found)
    )


def test_only_the_smtp_side_imports_aiosmtpd() -> None:
    outside = [path for path in MODULES if "smtp" not in path.relative_to(PACKAGE).parts[:2]]
    found = crossings(outside, ("aiosmtpd",))
    assert not found, (
        "only pytest_tempinbox.server.smtp may import aiosmtpd (and only its _aiosmtpd "
        "touches aiosmtpd's private parts):\n" + "\n".join(found)
    )


def test_only_the_redis_store_imports_redis() -> None:
    outside = [path for path in MODULES if path.parent.name != "redis"]
    found = crossings(outside, ("redis", "hiredis"))
    assert not found, (
        "only pytest_tempinbox.server.store.redis may import redis-py or hiredis (the redis "
        "extra, imported when a redis:// store is asked for):\n" + "\n".join(found)
    )


def test_the_wing_rules_see_the_imports() -> None:
    # The checker itself: a crossing of each kind is found, third-party and inside functions.
    service = PACKAGE / "server" / "smtp" / "service.py"
    assert crossings([service], ("aiosmtpd",)) == [f"{SERVER}smtp.service imports aiosmtpd"]
    listener = PACKAGE / "server" / "http" / "listener.py"
    assert "uvicorn" in every_import(listener)  # imported inside a function
    factory = PACKAGE / "server" / "store" / "factory.py"
    assert crossings([factory], ("store.redis",)) == [
        f"{SERVER}store.factory imports {SERVER}store.redis.store"
    ]
