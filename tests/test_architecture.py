"""The package's shape: which part may import which, read from the source.

Three programs share the package: the parser (``parsing/``), the server
(``server/``) and the client (``client/``), with the checks of a message
(``checks/``) between the parser and the two others, over a core of data and settings
(``config``, ``values``, ``errors``, ``limits``, ``smtp_security``,
``transport``, ``_net``). ``models`` (``Message``, which reads and checks a
mail) sits above the parser and the checks, below the server and the client. The
pytest plugin, the command line and the package's front door sit on top. The
rules below are the README's "Architecture" picture; a test fails the day an
import crosses it, or two modules import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_tempinbox"
CORE = {
    "certificate_settings",
    "config",
    "errors",
    "limits",
    "proxies",
    "rate_limits",
    "values",
    "side_values",
    "smtp_security",
    "smtp_logins",
    "quotas",
    "tenants",
    "transcripts",
    "transport",
    "_net",
    "_version",
    "webhook_urls",
}
# What each part may import from the package, besides itself.
ALLOWED = {
    "core": CORE,
    "parsing": CORE,
    "checks": CORE | {"parsing"},
    "models": CORE | {"parsing", "checks"},
    "server": CORE | {"parsing", "checks", "models"},
    "client": CORE | {"parsing", "checks", "models"},
}
TOP = {
    "__init__",
    "__main__",
    "_cli",
    "plugin",
    "django_mail",
    "django_providers",
}  # may import anything
# Calls that import the module their first argument names (a literal, relative to the caller's
# package when it starts with a dot): importlib's, and the route table's lazy endpoints.
IMPORTING_CALLS = {"import_module", "_later"}


def part_of(module: str) -> str:
    """The part a module (dotted, under the package) belongs to."""
    first = module.split(".")[1] if "." in module else "__init__"
    if first in {"parsing", "checks", "models", "server", "client", "plugin"}:
        return first
    return "__init__" if first == "__init__" else ("top" if first in TOP else "core")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, *, top_level_only: bool = False, type_checking: bool = True) -> set[str]:
    """The package's modules that ``path`` imports, as dotted names.

    ``from package import name`` gives both ``package`` and ``package.name`` (a
    module or not). Without ``type_checking``, the imports under ``if
    TYPE_CHECKING:`` are left out.
    """
    found = every_import(path, top_level_only=top_level_only, type_checking=type_checking)
    return {name for name in found if name.startswith("pytest_tempinbox.")}


def every_import(
    path: Path, *, top_level_only: bool = False, type_checking: bool = True, names: bool = True
) -> set[str]:
    """Every module ``path`` imports, the package's and others', as absolute dotted names.

    With ``names``, ``from package import name`` also gives ``package.name``.
    """
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if not type_checking:
        tree.body = [node for node in tree.body if not _type_checking_only(node)]
    nodes = tree.body if top_level_only else [n for top in tree.body for n in ast.walk(top)]
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
                if names:
                    found |= {f"{target}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Call) and (named := _imported_by_call(node)):
            dots = len(named) - len(named.lstrip("."))
            base = package.split(".")[: package.count(".") + 2 - dots] if dots else []
            found.add(".".join([*base, named.lstrip(".")]).strip("."))
    return found


def _imported_by_call(call: ast.Call) -> str | None:
    """The module a call of :data:`IMPORTING_CALLS` imports, when a literal names it."""
    function = call.func
    name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
    if name not in IMPORTING_CALLS or not call.args:
        return None
    first = call.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _type_checking_only(node: ast.stmt) -> bool:
    """Whether ``node`` is an ``if TYPE_CHECKING:`` block (without an ``else``)."""
    if not isinstance(node, ast.If) or node.orelse:
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def first_name(module: str) -> str:
    return module.split(".")[1]


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: module_name(path))
def test_each_part_imports_only_what_lies_below_it(path: Path) -> None:
    part = part_of(module_name(path))
    if part in {"__init__", "top", "plugin"}:
        return
    allowed = ALLOWED[part] | {part}
    for target in imports(path):
        name = first_name(target)
        assert name in allowed, (
            f"{module_name(path)} ({part}) imports {target}, which its part may not import"
        )


def test_the_rules_see_the_imports() -> None:
    # The checker itself: the known imports are found, relative and absolute.
    store = imports(PACKAGE / "server" / "store" / "stored_message.py")
    assert "pytest_tempinbox.models" in store
    assert "pytest_tempinbox.parsing.message" in store
    assert "pytest_tempinbox.server.inbox_server" in imports(PACKAGE / "server" / "__init__.py")
    assert part_of("pytest_tempinbox.client.http") == "client"
    assert part_of("pytest_tempinbox.models") == "models"
    assert part_of("pytest_tempinbox.values") == "core"
    assert "pytest_tempinbox.checks.spam" in imports(PACKAGE / "models.py")
    # The route table's lazy endpoints count as imports of their modules.
    routes = imports(PACKAGE / "server" / "api" / "routes.py")
    assert {"pytest_tempinbox.server.api.events", "pytest_tempinbox.server.viewer"} <= routes


def test_the_values_import_nothing_of_the_package_but_errors() -> None:
    # The data every part shares stays below everything: errors is the one thing it may name,
    # and the values beside the mail, which it re-exports when first asked for, and a
    # refusal's transcript, read when a refusal has one.
    found = {first_name(target) for target in imports(PACKAGE / "values.py")}
    allowed = {"errors", "side_values", "transcripts"}
    assert found <= allowed, f"pytest_tempinbox.values imports {sorted(found - allowed)}"
    for beside in ("side_values.py", "transcripts.py"):
        named = {first_name(target) for target in imports(PACKAGE / beside)}
        assert not named, f"pytest_tempinbox.{beside[:-3]} imports {sorted(named)}"


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


def import_graph(*, type_checking: bool) -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports (not itself)."""
    modules = {module_name(path): path for path in MODULES}

    def resolved(target: str) -> str | None:
        # `from package import name` names a module, a package or something in a module.
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {resolved(target) for target in imports(path, type_checking=type_checking)}
        graph[module] = {target for target in targets if target and target != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of modules that import each other, as one circle through them: a, b, ..., a."""
    found: list[list[str]] = []
    for group in _strongly_connected(graph):
        if len(group) < 2:
            continue
        start = min(group)
        path, seen = [start], {start}
        # Walk inside the group until the walk meets a module it passed: a circle.
        while True:
            step = min(target for target in graph[path[-1]] if target in group)
            if step in seen:
                found.append([*path[path.index(step) :], step])
                break
            path.append(step)
            seen.add(step)
    return found


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph``, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def test_no_two_modules_of_the_package_import_each_other() -> None:
    """No circle of imports between the package's modules, through any number of them.

    Every import counts: at the top of a module, inside a function (one that runs
    later closes a circle as surely), and under ``if TYPE_CHECKING:``. The last
    never run, but two modules that name each other's types still cannot be
    read, changed or moved one without the other, and a type-only import is
    the one a later change turns into a runtime circle.
    """
    left = circles(import_graph(type_checking=True))
    assert not left, "modules of the package import each other:\n" + "\n".join(
        "  " + " -> ".join(name.removeprefix("pytest_tempinbox.") for name in circle)
        for circle in left
    )


def test_the_circle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert circles(graph) == [["a", "b", "c", "a"]]


# The server's wings (README, "Architecture"): each rule reads every import of the
# wing's modules, those inside functions and under TYPE_CHECKING too.
SERVER = "pytest_tempinbox.server."
STORES = ("store.memory", "store.redis", "store.factory")
# The server's parts a rule may name by their bare name; any other bare name is a library.
SERVER_PARTS = {
    "smtp",
    "store",
    "api",
    "http",
    "in_process",
    "inbox_server",
    "viewer",
    "providers",
}


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
        for target in sorted(every_import(path, names=False)):
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


def test_the_providers_import_no_web_framework_no_smtp_and_no_store_but_its_protocol() -> None:
    found = crossings(
        wing_modules("providers"),
        (*STORES, "smtp", "http", "in_process", "viewer", "aiosmtpd", "starlette", "uvicorn"),
    )
    assert not found, (
        "the providers' send APIs are framework-free like the API: they deliver through "
        "server.store.protocol (InboxStore) and answer with the API's Reply:\n" + "\n".join(found)
    )


def test_the_route_table_names_the_providers_modules_without_importing_them() -> None:
    # An unused provider layer costs nothing: its endpoints' modules load on the first send.
    routes = PACKAGE / "server" / "api" / "routes.py"
    named = {name for name in every_import(routes) if name.startswith(SERVER + "providers.")}
    assert named == set(), f"the route table imports {sorted(named)}: import them when asked"


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


def test_the_client_modules_import_one_way() -> None:
    """Each flow is written once below the client that drives it; no two modules name each other.

    Imports for type checking count too: the client and its inbox handle, which
    name each other, live in one module.
    """
    client = "pytest_tempinbox.client"
    graph = {
        module: {name for name in targets if name.startswith(client + ".")}
        for module, targets in import_graph(type_checking=True).items()
        if module.startswith(client + ".")
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
