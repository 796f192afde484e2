"""The documentation site against the code: nothing it lists can drift from what exists.

The plugin's options, ini keys and fixtures are read from pytest itself, the
standalone flags from the command's own help, the HTTP routes from the OpenAPI
document, and each must be on its reference page with its default. The examples
a page holds are written out from files that this test suite runs
(docs/examples/), and its Python reference from the docstrings: docs/_ext/pages.py
writes both, and a test here fails when a page is stale.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pytest_tempinbox
from pytest_tempinbox import _cli, errors
from pytest_tempinbox.plugin import URL_ENVIRONMENT_VARIABLE
from pytest_tempinbox.server.openapi import openapi_document

from .helpers import Standalone

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
SECTION_MARKER = re.compile(r"-{1,}8<-{1,}\s+\[(start|end):([a-z][-_0-9a-z]*)\]")
DEFAULT = re.compile(r"\(default: ([^;)]*)[;)]")


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def table_cells(text: str) -> list[list[str]]:
    """The cells of each row of every Markdown table in ``text``, header rows included."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|") and not line.startswith("|---")
    ]


def table_rows(text: str) -> dict[str, list[str]]:
    """The rows of every Markdown table in ``text``, by their first cell (backticks removed)."""
    return {cells[0].strip("`"): cells for cells in table_cells(text)}


def sections(text: str, level: int) -> dict[str, str]:
    """Each heading of ``level`` (2 for ``##``) and the text under it, down to the next one."""
    marker = "#" * level + " "
    found: dict[str, str] = {}
    heading = None
    for line in text.splitlines():
        if line.startswith("#") and line.split(" ", 1)[0].count("#") <= level:
            heading = line[len(marker) :].strip() if line.startswith(marker) else None
            if heading is not None:
                found[heading] = ""
            continue
        if heading is not None:
            found[heading] += line + "\n"
    return found


def help_entries(help_text: str, pattern: str) -> dict[str, str]:
    """Each option (or ini key) matching ``pattern`` in a help text, with its help on one line."""
    entries: dict[str, str] = {}
    current = None
    for line in help_text.splitlines():
        match = re.match(rf"\s{{2}}({pattern})(?:[= ]\S+)?(?:\s{{2,}}|:|$)(.*)", line)
        if match:
            current = match.group(1)
            entries[current] = match.group(2).strip()
        elif current is not None and line.startswith(" " * 10) and line.strip():
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


def default_in(help: str) -> str:
    """The default a help text states, ``none`` when it states none."""
    match = DEFAULT.search(help)
    return match.group(1).strip() if match else "none"


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Wide help, so that no line of it is wrapped away from its option; no
    # TEMPINBOX_URL from the environment, which the plugin would check at start.
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.delenv(URL_ENVIRONMENT_VARIABLE, raising=False)
    return pytester


def plugin_help(pytester: pytest.Pytester) -> str:
    result = pytester.runpytest("--help")
    assert result.ret == 0
    return result.stdout.str()


def test_every_plugin_option_is_in_the_reference_with_its_default(
    pytester: pytest.Pytester,
) -> None:
    options = help_entries(plugin_help(pytester), r"--tempinbox-[a-z-]+")
    assert "--tempinbox-url" in options, "the help was not parsed"
    rows = table_rows(sections(page("plugin.md"), 2)["Options"])

    for flag, help in options.items():
        assert flag in rows, f"{flag} is not in the options table of docs/plugin.md"
        default_cell = rows[flag][-1].replace("`", "")
        default = default_in(help)
        assert default_cell.startswith(default), (
            f"{flag}: pytest --help says the default is {default!r}, docs/plugin.md says "
            f"{default_cell!r}"
        )
        for variable in re.findall(r"\$([A-Z_]+)", help):
            assert f"`{variable}`" in rows[flag][1], f"{flag}: ${variable} is not in its row"


def test_every_ini_key_is_in_the_reference_with_its_default(pytester: pytest.Pytester) -> None:
    keys = help_entries(plugin_help(pytester), r"tempinbox_[a-z_]+ \(\w+\)")
    assert keys, "the help was not parsed"
    rows = table_rows(sections(page("plugin.md"), 2)["Options"])
    by_key = {cell.split("`")[1]: row for row in rows.values() if (cell := row[1]).startswith("`")}

    for entry, help in keys.items():
        key = entry.split()[0]
        assert key in by_key, f"ini key {key} is not in the options table of docs/plugin.md"
        default_cell = by_key[key][-1].replace("`", "")
        assert default_cell.startswith(default_in(help)), f"{key}: the default differs"


def test_the_url_environment_variable_is_in_the_reference() -> None:
    assert f"`{URL_ENVIRONMENT_VARIABLE}`" in sections(page("plugin.md"), 2)["Options"]


def test_every_fixture_is_in_the_reference_with_its_scope(pytester: pytest.Pytester) -> None:
    output = pytester.runpytest("--fixtures").stdout.str()
    ours = output.split("fixtures defined from pytest_tempinbox.plugin", 1)[1].split("\n--", 1)[0]
    fixtures = dict(re.findall(r"^(\w+)(?: \[(\w+) scope\])? -- ", ours, re.MULTILINE))
    assert "tempinbox" in fixtures, "pytest --fixtures was not parsed"
    text = page("plugin.md")
    rows = table_rows(sections(text, 2)["Fixtures"])

    for name, scope in fixtures.items():
        assert name in rows, f"fixture {name} is not in the fixtures table of docs/plugin.md"
        assert rows[name][1] == (scope or "function"), f"fixture {name}: the scope differs"
        assert f"<!-- api: pytest_tempinbox.plugin.{name}\n" in text, f"no docstring of {name}"


def test_every_standalone_flag_is_on_its_page_with_its_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        _cli.main(["--help"])
    flags = help_entries(capsys.readouterr().out, r"--[a-z-]+")
    flags.pop("--help", None)  # argparse's own
    assert "--smtp-port" in flags, "the help was not parsed"
    rows = table_rows(page("standalone.md"))

    for flag, help in flags.items():
        assert flag in rows, f"{flag} is not in the table of docs/standalone.md"
        if DEFAULT.search(help):
            default_cell = rows[flag][1].replace("`", "")
            assert default_cell.startswith(default_in(help)), f"{flag}: the default differs"


def openapi() -> dict[str, Any]:
    return openapi_document(pytest_tempinbox.__version__)


def api_paths() -> dict[str, dict[str, dict[str, Any]]]:
    """The document's paths that docs/api.md documents: the API's and /metrics.

    The providers' endpoints (``/providers/<name>/...``) are the providers' own
    APIs, documented on docs/providers.md (see the test after these).
    """
    from pytest_tempinbox.server.api.routes import ROUTES

    providers = {route.path for route in ROUTES if ":" in route.name}  # "<provider>:<method> ..."
    paths: dict[str, dict[str, dict[str, Any]]] = openapi()["paths"]
    return {path: item for path, item in paths.items() if path not in providers}


def test_every_provider_endpoint_of_the_document_is_on_the_providers_page() -> None:
    text = page("providers.md")
    paths: dict[str, dict[str, dict[str, Any]]] = openapi()["paths"]
    for path, operations in paths.items():
        if path.startswith("/providers/"):
            # The provider's own path, a trailing slash apart (served both ways where SDKs differ).
            own = "/" + (path.split("/", 3)[3:] or [""])[0].rstrip("/")
            for method in operations:
                named = (f"`{method.upper()} {own}`", f"`{own}`", f"`{method.upper()} {own}/`")
                assert any(name in text for name in named), f"docs/providers.md: {method} {own}"


def test_every_path_of_the_openapi_document_is_documented() -> None:
    documented = sections(page("api.md"), 2)
    paths = api_paths()

    for path, operations in paths.items():
        for method, operation in operations.items():
            heading = f"{method.upper()} {path}"
            assert heading in documented, f"docs/api.md has no section '## {heading}'"
            rows = table_rows(documented[heading])
            for parameter in operation.get("parameters", []):
                name, where = parameter["name"], parameter["in"]
                assert name in rows, f"{heading}: the {where} parameter {name} is not in its table"
                assert rows[name][1] == where, f"{heading}: {name} is not a {where} parameter"
            body = operation.get("requestBody", {})
            for schema in body.get("content", {}).values():
                for name in schema["schema"].get("properties", {}):
                    assert name in rows, f"{heading}: the body field {name} is not in its table"
                    assert rows[name][1] == "body", f"{heading}: {name} is not a body field"
            for status, answer in operation["responses"].items():
                if answer.get("description", "").startswith("Over a rate limit"):
                    continue  # rate_limited answers any request: the table of errors lists it
                assert status in rows, f"{heading}: status {status} is not in its table"


def test_every_documented_endpoint_is_in_the_openapi_document() -> None:
    paths: dict[str, dict[str, Any]] = openapi()["paths"]
    operations = {f"{method.upper()} {path}" for path, ops in paths.items() for method in ops}
    for heading in sections(page("api.md"), 2):
        if heading.split(" ")[-1].startswith("/api/"):
            assert heading in operations, f"docs/api.md documents {heading}, the server has not"


def test_the_fields_of_every_answer_are_documented() -> None:
    documented = sections(page("api.md"), 2)
    paths = api_paths()
    for path, operations in paths.items():
        for method, operation in operations.items():
            text = documented[f"{method.upper()} {path}"]
            for answer in operation["responses"].values():
                for content in answer.get("content", {}).values():
                    for name in _property_names(content["schema"]):
                        assert f"`{name}`" in text, f"{method.upper()} {path}: field {name}"


def _property_names(schema: dict[str, Any]) -> list[str]:
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        if name in {"Message", "Problem"}:  # documented once, below and under Errors
            return []
        schemas: dict[str, dict[str, Any]] = openapi()["components"]["schemas"]
        schema = schemas[name]
    names = []
    properties: dict[str, dict[str, Any]] = schema.get("properties", {})
    for name, inner in properties.items():
        names.append(name)
        names += _property_names(inner)
    return names


def test_the_message_schema_is_documented() -> None:
    schemas: dict[str, dict[str, Any]] = openapi()["components"]["schemas"]
    message = sections(page("api.md"), 2)["The message object"]
    tables = {"Message": message.split("### ")[0], **sections(message, 3)}
    envelope = schemas["Message"]["properties"]["envelope"]
    parts = [(name, schemas[name]) for name in ("Message", "Address", "Attachment", "Link")]
    for title, schema in [*parts, ("Envelope", envelope)]:
        rows = table_rows(tables[title])
        for name in schema["properties"]:
            assert name in rows, f"the {title} field {name} is not in docs/api.md"


def test_every_problem_code_is_in_the_errors_table() -> None:
    schemas: dict[str, dict[str, Any]] = openapi()["components"]["schemas"]
    description = str(schemas["Problem"]["properties"]["code"]["description"])
    codes = re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", description.split(":", 1)[1])
    assert "inbox_not_found" in codes
    errors_table = table_cells(sections(page("api.md"), 2)["Errors"])
    documented = {cells[1].strip("`") for cells in errors_table}
    for code in codes:
        assert code in documented, f"problem code {code} is not in the errors table of docs/api.md"


def test_the_errors_page_gives_each_exception_its_code_and_status() -> None:
    rows = table_rows(page("errors.md"))
    for name in errors.__all__:
        error = getattr(errors, name)
        if not isinstance(error, type) or error is errors.TempInboxError:
            continue  # ERRORS_BY_CODE, and the base class, which the text names
        assert issubclass(error, errors.TempInboxError)
        assert name in rows, f"{name} is not in the table of docs/errors.md"
        status = str(error.status) if error in errors.ERRORS_BY_CODE.values() else ""
        assert rows[name][1:3] == [f"`{error.code}`", status], f"{name}: code or status differs"


def load_extension(name: str) -> ModuleType:
    """A module of docs/_ext/ (not a package): pages.py writes the pages, hooks.py builds."""
    spec = importlib.util.spec_from_file_location(f"docs_ext_{name}", DOCS / "_ext" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


PAGES = load_extension("pages")


def includes() -> list[tuple[str, str]]:
    """Every ``<!-- include: ... -->`` of every page: (page, target)."""
    return [
        (path.relative_to(ROOT).as_posix(), match.group("target"))
        for path in PAGES.pages()
        for match in PAGES.INCLUDE.finditer(path.read_text(encoding="utf-8"))
    ]


def test_every_page_holds_what_its_regions_stand_for() -> None:
    stale = PAGES.stale_pages()
    assert stale == [], (
        f"these pages differ from their examples or from the docstrings: {', '.join(stale)}; "
        "run python docs/_ext/pages.py and commit what it writes"
    )


def test_no_page_shows_build_syntax_on_github() -> None:
    # GitHub shows a page as it is: an --8<-- include or a ::: directive would
    # be raw text there. Both live in HTML comments, which it hides.
    raw = re.compile(r"^\s*(?:-{1,}8<-{1,}\s|::: )", re.MULTILINE)
    for path in PAGES.pages():
        found = raw.search(path.read_text(encoding="utf-8"))
        assert found is None, f"{path.relative_to(ROOT)} shows {found.group(0)!r} as text"


def test_every_included_file_and_section_exists() -> None:
    assert includes(), "no page includes a file"
    for name, target in includes():
        file = target.partition(":")[0]
        assert (ROOT / file).is_file(), f"{name} includes {file}, which does not exist"
        PAGES.included_text(target)  # raises PageError for a missing section


def test_a_missing_section_is_a_clear_error() -> None:
    page = "<!-- include: docs/examples/test_client.py:nowhere -->\n<!-- end include -->\n"
    with pytest.raises(PAGES.PageError, match="no section 'nowhere'"):
        PAGES.render(page)
    with pytest.raises(PAGES.PageError, match="no such module"):
        PAGES.render("<!-- api: nowhere.Thing -->\n<!-- end api -->\n")


def test_an_included_markdown_file_links_from_the_including_page() -> None:
    readme = "See [Limits](docs/limits.md#memory-under-load), [the bench](bench/README.md), "
    readme += "[above](#performance) and [PyPI](https://pypi.org/p/x)."
    assert PAGES.relinked(readme, "README.md", "docs/performance.md") == (
        "See [Limits](limits.md#memory-under-load), [the bench](../bench/README.md), "
        "[above](#performance) and [PyPI](https://pypi.org/p/x)."
    )
    assert PAGES.relinked(readme, "docs/x.md", "docs/performance.md") == readme
    page = "<!-- include: README.md:performance -->\n<!-- end include -->\n"
    assert "](docs/" not in PAGES.render(page, "docs/performance.md")


def test_an_edited_example_is_written_anew() -> None:
    page = (DOCS / "python.md").read_text(encoding="utf-8")
    assert PAGES.render(page) == page
    region = PAGES.INCLUDE.search(page)
    assert region is not None
    edited = page.replace(region.group("body"), region.group("body").replace("def ", "def x"), 1)
    assert PAGES.render(edited) == page


def test_the_site_renders_each_reference_with_mkdocstrings() -> None:
    hooks = load_extension("hooks")
    page = (
        "# Title\n\n<!-- api: pytest_tempinbox.plugin.tempinbox\n    options:\n"
        "      heading: tempinbox -->\n\n### `tempinbox`\n\nText.\n\n<!-- end api -->\n\nAfter.\n"
    )
    assert hooks.on_page_markdown(page) == (
        "# Title\n\n::: pytest_tempinbox.plugin.tempinbox\n    options:\n"
        "      heading: tempinbox\n\n\nAfter.\n"
    )


def test_every_example_is_included_in_a_page() -> None:
    included = {target.partition(":")[0] for _, target in includes()}
    for example in sorted(EXAMPLES.glob("*.py")):
        path = example.relative_to(ROOT).as_posix()
        assert path in included, f"{path} is on no page of the docs"


def test_every_python_block_of_the_docs_is_an_included_file() -> None:
    fence = re.compile(r"^( *)```(?:python|py)\b[^\n]*\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
    for path in PAGES.pages():
        text = path.read_text(encoding="utf-8")
        # What the regions hold is checked above; the rest must hold no Python.
        outside = PAGES.API.sub("", PAGES.INCLUDE.sub("", text))
        for _, body in fence.findall(outside):
            raise AssertionError(
                f"{path.relative_to(ROOT)} has Python that no test runs: put it in docs/examples/ "
                f"and include it (<!-- include: docs/examples/....py -->)\n{body}"
            )


def test_the_readme_quick_start_is_the_tested_example() -> None:
    example = (EXAMPLES / "test_quickstart.py").read_text(encoding="utf-8")
    without_markers = "".join(
        line for line in example.splitlines(keepends=True) if not SECTION_MARKER.search(line)
    )
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```python\n{without_markers}```" in readme, (
        "the README's quick start is not docs/examples/test_quickstart.py"
    )


def readme_sections() -> dict[str, str]:
    return sections((ROOT / "README.md").read_text(encoding="utf-8"), 2)


def test_the_readme_puts_the_users_path_before_the_contributors() -> None:
    headings = list(readme_sections())
    assert headings[:2] == ["Install", "Quick start: the pytest plugin"]
    assert "python -m pip install pytest-tempinbox\n" in readme_sections()["Install"]
    development = readme_sections()["Development"]
    # .ci/run and CI's readers take these two commands from here, exactly.
    assert "```sh\npython -m pip install . && python -m pytest_tempinbox\n```" in development
    assert "```sh\npython -m pip install -e '.[test]' && python -m pytest\n```" in development


def test_the_readme_try_by_hand_pastes_as_written() -> None:
    if shutil.which("curl") is None or shutil.which("python3") is None:
        pytest.skip("curl and python3 are needed on PATH")
    section = readme_sections()["Try the service by hand"]
    script = "".join(re.findall(r"^```sh\n(.*?)^```", section, re.MULTILINE | re.DOTALL))
    assert "ADDRESS=$(" in script, "the shell blocks were not found"
    server = Standalone("--smtp-port", "0", "--api-port", "0")
    try:
        _, smtp_port, api_url = server.read_addresses()
        api_port = api_url.rsplit(":", 1)[1].removesuffix("/api")
        script = script.replace("localhost:8025", f"localhost:{api_port}")
        script = script.replace('"127.0.0.1", 1025', f'"127.0.0.1", {smtp_port}')
        result = subprocess.run(
            ["bash", "-eu"], input=script, capture_output=True, text=True, timeout=60, check=True
        )
    finally:
        server.process.kill()
        server.process.communicate()
    generated, messages, viewer, deleted = result.stdout.splitlines()
    assert '"expires_at":"20' in generated  # the standalone server's one-hour ttl
    assert '"subject":"Your code"' in messages
    assert '"codes":["482913"]' in messages
    assert viewer.startswith(f"http://localhost:{api_port}/?inbox=")
    assert deleted.endswith('"deleted":true,"purged":1}')
