"""What ``pytest_tempinbox/server/smtp/_aiosmtpd.py`` relies on in aiosmtpd, checked name by name.

An aiosmtpd release that renames, removes or reshapes one of the private names
the project relies on fails here, saying which name and which aiosmtpd version,
before it fails somewhere less clear. The module's docstring says why each name
is relied on.

That the overrides still take effect over real sockets is tested where the
behaviour is: the DATA line limit (raised, and leaving the command-line limit
alone) in ``test_hostile_smtp_data.py``, a path cut short in
``test_hostile_smtp.py``, the connection limit across STARTTLS in
``test_tls.py``, a fault's delay holding the idle timer off in
``test_fault_delays.py``, the short ``dir()`` in ``test_smtp.py``, and the
address reader against aiosmtpd's own in ``test_smtp_properties.py``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from importlib.metadata import version
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP, Envelope, Session

from pytest_tempinbox.server.smtp import _aiosmtpd
from pytest_tempinbox.server.smtp._hook_names import DISPATCH_PREFIXES
from pytest_tempinbox.server.smtp.data import LINE_TOO_LONG, TOO_MUCH_DATA
from pytest_tempinbox.server.smtp.protocol import TrackedSMTP

INSTALLED = version("aiosmtpd")
SOURCE = inspect.getsource(SMTP)


def changed(name: str, what: str) -> str:
    """The failure message: which name changed, in which aiosmtpd, and where to look."""
    return (
        f"aiosmtpd {INSTALLED} changed {name}: {what}. "
        f"pytest_tempinbox/server/smtp/_aiosmtpd.py was written against aiosmtpd "
        f"{_aiosmtpd.ASSUMED_VERSION} and relies on it; its docstring says why."
    )


def parameters(function: Callable[..., Any]) -> list[tuple[str, object]]:
    """A function's parameters, as (name, default) pairs."""
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


def source_of(function: Callable[..., Any]) -> str:
    return inspect.getsource(function)


@pytest.fixture(scope="module")
def protocol() -> Iterator[SMTP]:
    """A bare aiosmtpd protocol, as aiosmtpd makes it before a connection."""
    loop = asyncio.new_event_loop()
    try:
        yield SMTP(object(), hostname="x.test", timeout=123.0, loop=loop)
    finally:
        loop.close()


EMPTY = inspect.Parameter.empty

# Methods of aiosmtpd's SMTP that _aiosmtpd overrides or calls, with the
# parameters (and defaults) relied on.
PRIVATE_METHODS = {
    "_getaddr": [("self", EMPTY), ("arg", EMPTY)],
    "_create_session": [("self", EMPTY)],
    "_create_envelope": [("self", EMPTY)],
    "_reset_timeout": [("self", EMPTY), ("duration", None)],
}
# Public methods overridden (here or in smtp.py), with their parameters.
OVERRIDDEN_METHODS = {
    "connection_made": [("self", EMPTY), ("transport", EMPTY)],
    "connection_lost": [("self", EMPTY), ("error", EMPTY)],
    "push": [("self", EMPTY), ("status", EMPTY)],
    "smtp_DATA": [("self", EMPTY), ("arg", EMPTY)],
    "smtp_AUTH": [("self", EMPTY), ("arg", EMPTY)],
    "check_auth_needed": [("self", EMPTY), ("caller_method", EMPTY)],
}


@pytest.mark.parametrize("name", sorted(PRIVATE_METHODS | OVERRIDDEN_METHODS))
def test_each_method_relied_on_exists_with_its_signature(name: str) -> None:
    method = getattr(SMTP, name, None)
    assert callable(method), changed(f"SMTP.{name}", "it is gone")
    expected = (PRIVATE_METHODS | OVERRIDDEN_METHODS)[name]
    found = parameters(method)
    assert found == expected, changed(f"SMTP.{name}", f"its parameters are now {found}")


@pytest.mark.parametrize(
    ("name", "caller"),
    [
        ("_getaddr", "smtp_MAIL"),
        ("_getaddr", "smtp_RCPT"),
        ("_create_session", "connection_made"),
        ("_create_envelope", "_set_post_data_state"),
        ("_reset_timeout", "connection_made"),
        ("_reader", "smtp_DATA"),
        ("_original_transport", "connection_made"),
        ("_original_transport", "smtp_STARTTLS"),
        ("_handler_coroutine.cancel", "connection_lost"),
        ("_smtp_methods.get(command)", "_handle_client"),
    ],
)
def test_each_private_name_is_still_used_where_the_override_needs_it(
    name: str, caller: str
) -> None:
    """An override that aiosmtpd no longer calls would change nothing, silently."""
    method = getattr(SMTP, caller, None)
    assert method is not None, changed(f"SMTP.{caller}", "it is gone")
    assert f"self.{name}" in source_of(method), changed(
        f"SMTP.{caller}", f"it no longer uses self.{name}"
    )


def test_the_private_attributes_relied_on_are_set_up_by_the_constructor(protocol: SMTP) -> None:
    attributes = vars(protocol)
    assert attributes.get("_timeout_duration") == 123.0, changed(
        "SMTP._timeout_duration", "it no longer holds the timeout given"
    )
    assert "_original_transport" in attributes, changed("SMTP._original_transport", "it is gone")
    assert isinstance(attributes.get("_smtp_methods"), dict), changed(
        "SMTP._smtp_methods", "it is no longer the constructor's dict of commands"
    )
    assert attributes["_original_transport"] is None, changed(
        "SMTP._original_transport", "it is no longer None before STARTTLS"
    )


def test_the_reader_is_aiosmtpd_s_stream_reader_with_its_buffer_limit() -> None:
    assert "self._reader = reader" in source_of(SMTP._cb_client_connected), changed(
        "SMTP._reader", "_cb_client_connected no longer sets it to the stream reader"
    )
    loop = asyncio.new_event_loop()
    try:
        reader = asyncio.StreamReader(limit=77, loop=loop)
    finally:
        loop.close()
    assert getattr(reader, "_limit", None) == 77, changed(
        "asyncio.StreamReader._limit (read through SMTP._reader)", "it is gone"
    )


def test_the_command_hook_and_auth_tables_are_built_from_dir() -> None:
    """The short ``__dir__`` of the protocol and handler stands on this."""
    init = source_of(SMTP.__init__)
    for use in ("dir(self)", "dir(handler)", "inspect.getmembers(obj)"):
        assert use in init, changed("SMTP.__init__", f"it no longer reads {use}")
    for prefix in DISPATCH_PREFIXES:
        assert f'startswith("{prefix}")' in init or f"startswith('{prefix}')" in init, changed(
            "SMTP.__init__", f"it no longer looks for names starting with {prefix!r}"
        )
    assert "inspect.signature(ehlo_hook)" in init, changed(
        "SMTP.__init__", "it no longer reads handle_EHLO's signature"
    )


def test_login_data_is_the_warning_property_quiet_session_replaces() -> None:
    assert isinstance(inspect.getattr_static(Session, "login_data"), property), changed(
        "Session.login_data", "it is no longer a property"
    )


def test_the_limits_set_on_each_session_are_aiosmtpd_s_class_attributes() -> None:
    for name in ("command_size_limit", "command_size_limits", "line_length_limit"):
        assert name in vars(SMTP), changed(f"SMTP.{name}", "it is gone")
    assert "local_part_limit" in vars(SMTP), changed("SMTP.local_part_limit", "it is gone")


@pytest.mark.parametrize(
    "reply",
    [
        "500 Command line too long",
        "530 Must issue a STARTTLS command first",
        "501 Syntax: MAIL FROM: <address>",
        "501 Syntax: RCPT TO: <address>",
        " [SP <mail-parameters>]",
    ],
)
def test_the_replies_given_an_enhanced_code_are_aiosmtpd_s_words(reply: str) -> None:
    assert reply in SOURCE, changed("SMTP's replies", f"it no longer answers {reply!r}")


@pytest.mark.parametrize(
    "reply",
    [
        "503 Error: need RCPT command",
        "501 Syntax: DATA",
        "354 End data with <CR><LF>.<CR><LF>",
        LINE_TOO_LONG,
        TOO_MUCH_DATA,
    ],
)
def test_the_replies_of_our_data_are_aiosmtpd_s_words(reply: str) -> None:
    """SMTPProtocol.smtp_DATA reads DATA its own way, with aiosmtpd's replies."""
    assert reply in SOURCE, changed("SMTP.smtp_DATA", f"it no longer answers {reply!r}")


def test_our_attribute_names_do_not_shadow_aiosmtpd_s(protocol: SMTP) -> None:
    """The project's own names on the protocol must not be aiosmtpd's too."""
    ours = {
        "_refused",
        "_sessions",
        "_max_connections",
        "_auth_offered",
        "_password_required",
        "_within_limit",
        "envelope_class",
        "read_path",
        "admit",
        "release",
        "pause",
        "close_now",
        "drop",
        "data_line_limit",
    }
    theirs = set(vars(protocol)) | set(dir(SMTP))
    assert not ours & theirs, changed("SMTP", f"it now has names of ours: {sorted(ours & theirs)}")


def test_the_overrides_are_the_ones_aiosmtpd_calls() -> None:
    """The protocol the service uses overrides each private method, not a lookalike."""
    for name in PRIVATE_METHODS:
        if name == "_reset_timeout":
            continue  # called, not overridden
        assert name in vars(_aiosmtpd.SMTPProtocol), name
        assert getattr(TrackedSMTP, name) is not getattr(SMTP, name), name
    assert issubclass(TrackedSMTP, _aiosmtpd.SMTPProtocol)
    assert issubclass(_aiosmtpd.QuietSession, Session)
    assert issubclass(TrackedSMTP.envelope_class, Envelope)
