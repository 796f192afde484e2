"""The plugin's ``--tempinbox-loop``: the event loop of the server a session starts."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from pytest_tempinbox.server.inbox_server import InboxServer

_NO_UVLOOP = importlib.util.find_spec("uvloop") is None
_NEEDS_UVLOOP = pytest.mark.skipif(_NO_UVLOOP, reason="uvloop is not installed")
# The loop's class is uvloop.Loop or one of asyncio's own (asyncio.unix_events...).
LOOP_TEST = """
def test_loop(tempinbox_server):
    assert type(tempinbox_server._loop).__module__.split(".")[0] == {expected!r}
"""
# As if the uvloop extra were missing: importing it raises ImportError.
NO_UVLOOP_CONFTEST = """
import sys
sys.modules["uvloop"] = None
"""


def loop_test(pytester: pytest.Pytester, expected: str) -> None:
    """Write a user's test that checks the module of the session server's loop."""
    pytester.makepyfile(LOOP_TEST.format(expected=expected))


@pytest.mark.parametrize("kind", ["asyncio", pytest.param("uvloop", marks=_NEEDS_UVLOOP)])
def test_the_loop_option_chooses_the_servers_event_loop(
    pytester: pytest.Pytester, kind: str
) -> None:
    loop_test(pytester, kind)
    pytester.runpytest("--tempinbox-loop", kind).assert_outcomes(passed=1)


def test_by_default_the_server_runs_on_uvloop_where_it_is_installed(
    pytester: pytest.Pytester,
) -> None:
    loop_test(pytester, "asyncio" if _NO_UVLOOP else "uvloop")
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_loop_comes_from_the_ini_file_after_the_command_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\ntempinbox_loop = asyncio\n")
    loop_test(pytester, "asyncio")
    pytester.runpytest().assert_outcomes(passed=1)  # not auto's uvloop, where installed
    pytester.makeini("[pytest]\ntempinbox_loop = uvloop\n")
    pytester.runpytest("--tempinbox-loop=asyncio").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("ini", "args", "origin"),
    [
        ("", ["--tempinbox-loop", "trio"], "--tempinbox-loop"),
        ("tempinbox_loop = trio\n", [], "tempinbox_loop in tox.ini"),
    ],
    ids=["option", "ini"],
)
def test_an_unknown_loop_is_a_usage_error_naming_where_it_came_from(
    pytester: pytest.Pytester, ini: str, args: list[str], origin: str
) -> None:
    pytester.makeini("[pytest]\n" + ini)
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        f"ERROR: {origin}: 'trio' is not an event loop (auto, asyncio, uvloop)"
    )
    assert "Traceback" not in result.stderr.str()


def test_uvloop_missing_ends_the_run_once_as_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_UVLOOP_CONFTEST)
    pytester.makepyfile(
        """
        def test_plain(): pass
        def test_uses(tempinbox): pass
        def test_uses_too(tempinbox): pass
        """
    )
    # A process of its own, as a user's run is: the run ends with pytest.exit.
    result = pytester.runpytest_subprocess("--tempinbox-loop", "uvloop")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=1)
    message = (
        "pytest-tempinbox: the uvloop event loop needs uvloop: "
        "pip install 'pytest-tempinbox[uvloop]', or choose another --tempinbox-loop"
    )
    output = result.stdout.str()
    assert f"Exit: {message} !" in output  # (fnmatch would read [uvloop] as a pattern)
    assert output.count("needs uvloop") == 1
    assert "Traceback" not in output


def test_the_xdist_controller_starts_the_server_on_the_loop_chosen(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(NO_UVLOOP_CONFTEST)
    pytester.makepyfile("def test_uses(tempinbox): pass")
    # The controller starts the server while it sets up its workers: no uvloop, no run.
    result = pytester.runpytest_subprocess("-n", "1", "-p", "xdist", "--tempinbox-loop", "uvloop")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*Exit: pytest-tempinbox: the uvloop event loop needs uvloop*"])
    assert "passed" not in result.stdout.str()


def test_the_loop_has_no_effect_on_a_remote_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile("def test_uses(tempinbox): pass")
    with InboxServer(event_loop="asyncio") as remote:
        monkeypatch.setitem(sys.modules, "uvloop", None)  # as if the uvloop extra were missing
        result = pytester.runpytest("--tempinbox-url", remote.api_url, "--tempinbox-loop=uvloop")
    result.assert_outcomes(passed=1)
