"""Where each of the plugin's values came from: a command-line flag, an ini key, the environment.

:func:`given` reads one setting as text, with its :class:`Origin`, in the
plugin's order: the command line, then ``$TEMPINBOX_URL`` (for the URL), then
the ini file (or ``-o``). A usage error names the origin, so that a bad value
in ``pytest.ini`` is not blamed on a flag nobody typed. pytest checks the
numeric and boolean ini keys itself, with the words of Python's ``int()``; the
text it refused is read back from its error and checked here instead, with the
same words as on the command line.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

__all__ = [
    "TOKEN_ENVIRONMENT_VARIABLE",
    "URL_ENVIRONMENT_VARIABLE",
    "Origin",
    "given",
    "given_switch",
]

URL_ENVIRONMENT_VARIABLE = "TEMPINBOX_URL"
TOKEN_ENVIRONMENT_VARIABLE = "TEMPINBOX_TOKEN"
_ENVIRONMENT = {"url": URL_ENVIRONMENT_VARIABLE, "token": TOKEN_ENVIRONMENT_VARIABLE}

# The quoted value at the end of pytest's (and Python's) words for an ini value it
# refused: "invalid literal for int() with base 10: '8025x'", "invalid truth value
# 'maybe'", "... expects an int, got str: '8025x'".
_REFUSED_TEXT = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*$""")
_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f")


class Origin:
    """Where one setting's value came from, to name it in a usage error.

    ``kind`` is ``flag`` (``--tempinbox-port``), ``ini`` (``tempinbox_port`` in
    ``file``, or ``-o`` when ``file`` is None) or ``env``
    (``$TEMPINBOX_URL``); a setting given nowhere has its flag's origin.
    ``str()`` names the place; :meth:`given` names the place and the value.
    """

    __slots__ = ("file", "kind", "name")

    def __init__(self, kind: str, name: str, file: str | None = None) -> None:
        self.kind = kind
        self.name = name
        self.file = file

    @classmethod
    def flag(cls, setting: str) -> Origin:
        """The command-line flag of ``setting`` (``smtp_port``: ``--tempinbox-smtp-port``)."""
        return cls("flag", "--tempinbox-" + setting.replace("_", "-"))

    def __str__(self) -> str:
        if self.kind == "env":
            return f"${self.name}"
        if self.kind == "ini":
            return f"-o {self.name}" if self.file is None else f"{self.name} in {self.file}"
        return self.name

    def __repr__(self) -> str:
        return f"<Origin {self}>"

    def given(self, text: str) -> str:
        """The place and the value as written: ``tempinbox_tls = starttls in tox.ini``."""
        if self.kind == "env":
            return f"${self.name}={text}"
        if self.kind == "ini":
            if self.file is None:
                return f"-o {self.name}={text}"
            return f"{self.name} = {text} in {self.file}"
        return f"{self.name} {text}"


def given(config: pytest.Config, name: str) -> tuple[str | None, Origin]:
    """The text of the setting ``name`` (``port``, ``url``, ...) and where it came from.

    None when it is given nowhere (or empty). A numeric ini value that pytest
    refused comes back as its text, for the caller to check with its own
    words; an ini value that cannot be read as text is a usage error that
    names the key.
    """
    value = config.getoption(f"tempinbox_{name}")
    if value is not None:
        return _text(value), Origin.flag(name)
    variable = _ENVIRONMENT.get(name)
    if variable is not None:
        from_environment = os.environ.get(variable)
        if from_environment:
            return _text(from_environment), Origin("env", variable)
    origin = _ini_origin(config, f"tempinbox_{name}")
    try:
        value = config.getini(f"tempinbox_{name}")
    except (TypeError, ValueError, pytest.UsageError) as exc:
        return _refused_text(exc, origin, config.inipath), origin
    if value is None or value == "":
        return None, Origin.flag(name)
    return _text(value), origin  # not "or None": 0 is a value (a free port, no lifetime)


def given_switch(config: pytest.Config, name: str) -> bool:
    """A switch (``ui``, ``keep``): on when its flag is given, or its ini key is true.

    A value of the ini key that is no truth value is a usage error naming it.
    """
    if config.getoption(f"tempinbox_{name}"):
        return True
    origin = _ini_origin(config, f"tempinbox_{name}")
    try:
        return bool(config.getini(f"tempinbox_{name}"))
    except (TypeError, ValueError, pytest.UsageError) as exc:
        text = _refused_text(exc, origin, config.inipath).lower()
    if text in _TRUE or text in _FALSE:  # quoted in a TOML file, say
        return text in _TRUE
    raise pytest.UsageError(
        f"{origin}: {text!r} is not true or false (true, false, yes, no, on, off, 1, 0)"
    )


def _text(value: object) -> str | None:
    if isinstance(value, float) and value.is_integer():  # a float ini key's "-1", as written
        value = int(value)
    text = str(value).strip()
    return text if text else None


def _ini_origin(config: pytest.Config, key: str) -> Origin:
    """``key`` in the ini file, or in ``-o`` when an override gives it."""
    overrides = config.getoption("override_ini", None) or []
    if any(str(override).partition("=")[0].strip() == key for override in overrides):
        return Origin("ini", key)
    inipath = config.inipath
    if inipath is None:
        return Origin("ini", key, "the ini file")
    return Origin("ini", key, _shown_path(inipath, config.invocation_params.dir))


def _shown_path(path: Path, start: Path) -> str:
    try:
        return str(path.relative_to(start))
    except ValueError:
        return str(path)


def _refused_text(exc: BaseException, origin: Origin, inipath: Path | None) -> str:
    """The text of an ini value pytest refused, read back from its error.

    When its words quote no value (a TOML list for a number, say), the usage
    error names the key and says what pytest said, without its file path.
    """
    words = str(exc)
    found = _REFUSED_TEXT.search(words)
    if found is not None:
        try:
            value = ast.literal_eval(found.group(1))
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, str):
            return value.strip()
    if inipath is not None and words.startswith(f"{inipath}: "):  # pytest's TOML errors
        words = words[len(f"{inipath}: ") :]
    raise pytest.UsageError(f"{origin}: {words}") from None
