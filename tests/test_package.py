"""The package's public surface, that importing it stays cheap, and what its distributions ship."""

from __future__ import annotations

import inspect
import subprocess
import sys
import tarfile
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

import pytest_tempinbox

ROOT = Path(__file__).resolve().parents[1]


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(pytest_tempinbox).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    public -= {"annotations", "TYPE_CHECKING", "Any"}  # the module's own imports
    public |= set(pytest_tempinbox._LAZY) | {"__version__"}  # loaded lazily
    assert pytest_tempinbox.__all__ == sorted(public)
    for name in pytest_tempinbox.__all__:
        assert getattr(pytest_tempinbox, name) is not None


def test_importing_the_package_does_not_import_the_server_stack() -> None:
    code = (
        "import sys, pytest_tempinbox;"
        "heavy = [m for m in ('aiosmtpd', 'starlette', 'uvicorn', 'requests') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_the_server_and_client_load_on_first_use() -> None:
    from pytest_tempinbox.client.http import TempInboxClient
    from pytest_tempinbox.client.inbox import Inbox
    from pytest_tempinbox.server.inbox_server import InboxServer

    assert pytest_tempinbox.InboxServer is InboxServer
    assert pytest_tempinbox.TempInboxClient is TempInboxClient
    assert pytest_tempinbox.Inbox is Inbox


@pytest.fixture(scope="module")
def distributions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The file names in the sdist and the wheel built from this checkout.

    ``python -m build --no-isolation`` (about 3 s): the sdist from the checkout, then the
    wheel from the sdist, as a release builds them. Needs the ``test`` extra's ``build``
    and ``setuptools``.
    """
    # By distribution, not import: a checkout's build/ folder imports as "build" too.
    try:
        version("build")
    except PackageNotFoundError:
        pytest.skip("the build package is missing: pip install -e '.[test]' brings it")
    if int(version("setuptools").split(".")[0]) < 77:
        pytest.skip("setuptools>=77 (the test extra) builds this project without isolation")
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, f"python -m build failed:\n{built.stdout[-3000:]}{built.stderr}"
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    with tarfile.open(sdist) as archive:
        sdist_names = [name.partition("/")[2] for name in archive.getnames()]
    with zipfile.ZipFile(wheel) as archive:
        wheel_names = archive.namelist()
    return {"sdist": sdist_names, "wheel": wheel_names}


@pytest.mark.parametrize("kind", ["sdist", "wheel"])
def test_no_corpus_file_ships_in_the_distributions(
    distributions: dict[str, list[str]], kind: str
) -> None:
    # The corpora are rendered from other projects' templates, some under the AGPL.
    corpus = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests" / "corpus").rglob("*")
        if path.is_file()
    }
    shipped = [
        name
        for name in distributions[kind]
        if name in corpus or "corpus" in name.split("/") or name.endswith(".eml")
    ]
    assert shipped == [], f"the {kind} ships corpus files"


def test_the_sdist_leaves_the_tests_out(distributions: dict[str, list[str]]) -> None:
    tests = [name for name in distributions["sdist"] if name.split("/")[0] == "tests"]
    assert tests == [], "MANIFEST.in prunes tests/: the tests need the corpora, kept out"


def test_the_wheel_holds_only_the_package(distributions: dict[str, list[str]]) -> None:
    others = [
        name
        for name in distributions["wheel"]
        if name.split("/")[0] != "pytest_tempinbox" and ".dist-info/" not in name
    ]
    assert others == []


@pytest.mark.parametrize("kind", ["sdist", "wheel"])
def test_every_data_file_of_the_package_ships(
    distributions: dict[str, list[str]], kind: str
) -> None:
    # The viewer's page, caniemail.com's data, the OpenAPI document: package-data in pyproject.
    package = ROOT / "pytest_tempinbox"
    data = [
        path.relative_to(ROOT).as_posix()
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    ]
    assert "pytest_tempinbox/server/openapi.json" in data
    missing = [name for name in data if name not in distributions[kind]]
    assert missing == [], f"the {kind} leaves out data files the package reads"
