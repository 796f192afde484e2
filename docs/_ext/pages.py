"""Keep the pages under docs/ whole: readable as plain Markdown, and true to the code.

GitHub shows the files of docs/ as they are, so a page cannot leave its examples
or its Python reference to the site's build. Each page holds them written out,
between two HTML comments that GitHub and the site both hide:

- ``<!-- include: docs/examples/test_client.py:client -->`` ... ``<!-- end include -->``
  holds a fenced block with that file's section (``path:name``, between its
  ``--8<-- [start:name]`` and ``[end:name]`` markers, dedented), the whole file
  (``path``) or its lines from a number on (``path:3:``). A Markdown file's text
  goes in without a fence, its relative links pointed from the including page
  (the README's ``docs/limits.md`` is ``limits.md`` from a page of docs/).
- ``<!-- api: pytest_tempinbox.models.Message -->`` ... ``<!-- end api -->`` holds
  that object's reference, written from its signatures and docstrings. The
  comment may carry mkdocstrings options on the lines after the name; the site
  renders the object with mkdocstrings instead (``docs/_ext/hooks.py``).

``python docs/_ext/pages.py`` writes every region anew; with ``--check`` it only
says which pages are stale, and exits 1 if any is. The test suite runs the check
(``tests/test_docs.py``), so a changed example or docstring shows up there.
Standard library only: it runs with the test dependencies alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import posixpath
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

INCLUDE = re.compile(
    r"^<!-- include: (?P<target>\S+) -->\n(?P<body>.*?)^<!-- end include -->$",
    re.MULTILINE | re.DOTALL,
)
API = re.compile(
    r"^<!-- api: (?P<name>[\w.]+)(?P<options>\n.*?)? -->\n(?P<body>.*?)^<!-- end api -->$",
    re.MULTILINE | re.DOTALL,
)
FENCE = re.compile(r"\A\n*(?P<open>```[^\n]*)\n")
SECTION_MARKER = re.compile(r"-{1,}8<-{1,}\s+\[(start|end):([a-z][-_0-9a-z]*)\]")
ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|exc|mod|data|obj):`(~?)([^`<>]+)`")
SIGNATURE_WIDTH = 88
MARKDOWN_LINK = re.compile(r"(?<=\]\()(?P<path>[^()\s#:]+)(?=[#)])")


class PageError(Exception):
    """A region names a file, a section or an object that does not exist."""


# Included files.


def included_text(target: str) -> str:
    """The text that ``<!-- include: target -->`` stands for, ending with a newline."""
    path_text, _, section = target.partition(":")
    path = ROOT / path_text
    if not path.is_file():
        raise PageError(f"{target}: no file {path_text}")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if section.endswith(":") and section[:-1].isdigit():
        lines = lines[int(section[:-1]) - 1 :]
    elif section:
        lines = _section(lines, section, target)
    kept = [line for line in lines if not SECTION_MARKER.search(line)]
    return textwrap.dedent("".join(kept)).strip("\n") + "\n"


def _section(lines: list[str], name: str, target: str) -> list[str]:
    """The lines between the start and the end marker of section ``name``."""
    found: list[str] | None = None
    for line in lines:
        marker = SECTION_MARKER.search(line)
        if marker and marker.group(2) == name:
            if marker.group(1) == "end":
                if found is None:
                    break
                return found
            found = []
        elif found is not None:
            found.append(line)
    raise PageError(f"{target}: no section {name!r} with a start and an end marker")


def relinked(text: str, source: str, page: str) -> str:
    """Markdown ``text`` from file ``source``, its relative links pointed from ``page``.

    Both are paths from the root; a link with a scheme, or only an anchor, is kept.
    """
    source_dir, page_dir = posixpath.dirname(source), posixpath.dirname(page)
    if source_dir == page_dir:
        return text

    def relink(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(source_dir, match.group("path")))
        return posixpath.relpath(target, page_dir or posixpath.curdir)

    return MARKDOWN_LINK.sub(relink, text)


def _include(match: re.Match[str], page: str) -> str:
    target, body = match.group("target"), match.group("body")
    text = included_text(target)
    file = target.partition(":")[0]
    if file.endswith(".md"):
        text = relinked(text, file, page)
        return f"<!-- include: {target} -->\n\n{text}\n<!-- end include -->"
    fence = FENCE.match(body)
    opening = fence.group("open") if fence else "```python"
    return f"<!-- include: {target} -->\n\n{opening}\n{text}```\n\n<!-- end include -->"


# The Python reference.


@dataclasses.dataclass
class Options:
    """The mkdocstrings options a region's comment sets that change what it shows."""

    heading: str | None = None
    heading_level: int = 3
    show_root_heading: bool = True
    show_signature: bool = True

    @classmethod
    def parse(cls, text: str | None) -> Options:
        """Read ``key: value`` lines; the ones this writer has no use for are skipped."""
        options = cls()
        for line in (text or "").splitlines():
            key, _, value = line.strip().partition(":")
            value = value.strip()
            if key == "heading":
                options.heading = value
            elif key == "heading_level":
                options.heading_level = int(value)
            elif key == "show_root_heading":
                options.show_root_heading = value == "true"
            elif key == "show_signature":
                options.show_signature = value == "true"
        return options


def resolve(name: str) -> Any:
    """The object a dotted name names: a module, or a member of one."""
    module_name, attributes = name, list[str]()
    while True:
        try:
            found: Any = importlib.import_module(module_name)
            break
        except ModuleNotFoundError:
            if "." not in module_name:
                raise PageError(f"{name}: no such module") from None
            module_name, attribute = module_name.rsplit(".", 1)
            attributes.insert(0, attribute)
    for attribute in attributes:
        if not hasattr(found, attribute):
            raise PageError(f"{name}: {module_name} has no {attribute}")
        found = getattr(found, attribute)
    return found


def docstring(obj: Any) -> str:
    """The object's docstring, cleaned, its Sphinx roles written as Markdown code."""
    text = inspect.cleandoc(obj.__doc__ or "") if isinstance(obj.__doc__, str) else ""

    def code(match: re.Match[str]) -> str:
        role, short, target = match.groups()
        title = target.rsplit(".", 1)[-1] if short else target
        return f"`{title}()`" if role in {"meth", "func"} else f"`{title}`"

    return ROLE.sub(code, text)


def _annotation(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def _default(value: Any) -> str:
    """A default as the source would write it: a function by its name, not its address."""
    text = repr(value)
    if " at 0x" in text:
        return str(getattr(value, "__qualname__", "..."))
    return text


def signature(keyword: str, name: str, function: Callable[..., Any], drop_first: bool) -> str:
    """``def name(...) -> result``, one parameter a line when it would be too wide."""
    try:
        found = inspect.signature(function)
    except (TypeError, ValueError):
        return f"{keyword} {name}(...)"
    parameters = list(found.parameters.values())[1 if drop_first else 0 :]
    parts: list[str] = []
    star_written = False
    for index, parameter in enumerate(parameters):
        if parameter.kind is parameter.KEYWORD_ONLY and not star_written:
            parts.append("*")
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.KEYWORD_ONLY):
            star_written = True
        text = str(parameter.replace(annotation=parameter.empty, default=parameter.empty))
        if parameter.annotation is not parameter.empty:
            text += f": {_annotation(parameter.annotation)}"
        if parameter.default is not parameter.empty:
            equals = " = " if parameter.annotation is not parameter.empty else "="
            text += f"{equals}{_default(parameter.default)}"
        parts.append(text)
        following = parameters[index + 1] if index + 1 < len(parameters) else None
        if parameter.kind is parameter.POSITIONAL_ONLY and (
            following is None or following.kind is not parameter.POSITIONAL_ONLY
        ):
            parts.append("/")
    result = ""
    if found.return_annotation is not found.empty and keyword != "class":
        result = f" -> {_annotation(found.return_annotation)}"
    one_line = f"{keyword} {name}({', '.join(parts)}){result}"
    if len(one_line) <= SIGNATURE_WIDTH:
        return one_line
    inner = "".join(f"    {part},\n" for part in parts)
    return f"{keyword} {name}(\n{inner}){result}"


def _class_line(cls: type, name: str) -> str:
    """``class Name(parameters)`` for a class with its own ``__init__``, else with its bases."""
    is_protocol = getattr(cls, "_is_protocol", False)
    if dataclasses.is_dataclass(cls) or ("__init__" in vars(cls) and not is_protocol):
        return signature("class", name, vars(cls).get("__init__") or cls.__init__, True)  # type: ignore[misc]
    bases = [
        base.__name__
        for base in getattr(cls, "__orig_bases__", cls.__bases__)
        if getattr(base, "__name__", None) and base is not object
    ]
    return f"class {name}({', '.join(bases)})" if bases else f"class {name}"


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    """The public members a class defines itself, with a docstring, in source order."""
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            if docstring(member):
                yield name, member
        elif inspect.isfunction(_function(member)) and docstring(_function(member)):
            yield name, member


def _function(member: Any) -> Any:
    """The function behind a method, a class method or a static method."""
    return member.__func__ if isinstance(member, (classmethod, staticmethod)) else member


def _block(code: str) -> str:
    return f"```python\n{code}\n```\n"


def _entry(level: int, title: str, code: str | None, text: str) -> str:
    heading = f"{'#' * level} `{title}`\n\n"
    parts = [heading]
    if code is not None:
        parts.append(_block(code) + "\n")
    if text:
        parts.append(text + "\n\n")
    return "".join(parts)


def document(obj: Any, options: Options, level: int | None = None) -> str:
    """The Markdown reference of one module, class, function or fixture."""
    level = options.heading_level if level is None else level
    if inspect.ismodule(obj):
        public = getattr(obj, "__all__", [n for n in vars(obj) if not n.startswith("_")])
        names = [name for name in vars(obj) if name in public]  # in source order
        parts = []
        if options.show_root_heading:
            parts.append(_entry(level, obj.__name__, None, docstring(obj)))
            level += 1
        for name in names:
            member = getattr(obj, name)
            if (inspect.isclass(member) or inspect.isfunction(member)) and docstring(member):
                parts.append(document(member, Options(), level))
        return "".join(parts)
    name = options.heading or obj.__name__
    if inspect.isclass(obj):
        code = None
        if options.show_signature:
            code = _class_line(obj, name)
        parts = [_entry(level, name, code, docstring(obj))]
        for member_name, member in _members(obj):
            title = f"{name}.{member_name}"
            if isinstance(member, property):
                fget: Any = member.fget
                annotation = inspect.signature(fget).return_annotation
                kind = f"{member_name}: {_annotation(annotation)}  # property"
                parts.append(_entry(level + 1, title, kind, docstring(member)))
                continue
            drop_first = not isinstance(member, staticmethod)
            function = _function(member)
            keyword = "async def" if inspect.iscoroutinefunction(function) else "def"
            code = signature(keyword, member_name, function, drop_first)
            if isinstance(member, classmethod):
                code = "@classmethod\n" + code
            parts.append(_entry(level + 1, title, code, docstring(function)))
        return "".join(parts)
    code = None
    if options.show_signature:
        keyword = "async def" if inspect.iscoroutinefunction(obj) else "def"
        code = signature(keyword, name, obj, False)
    return _entry(level, name, code, docstring(obj))


def _api(match: re.Match[str]) -> str:
    name, option_text = match.group("name"), match.group("options")
    reference = document(resolve(name), Options.parse(option_text)).rstrip("\n")
    return f"<!-- api: {name}{option_text or ''} -->\n\n{reference}\n\n<!-- end api -->"


# Pages.


def render(text: str, page: str = "docs/index.md") -> str:
    """Page ``page`` (a path from the root) with every include and reference written anew."""
    included = INCLUDE.sub(lambda match: _include(match, page), text)
    return API.sub(_api, included)


def pages() -> list[Path]:
    """Every Markdown page of the docs."""
    return sorted(path for path in DOCS.rglob("*.md") if "_ext" not in path.parts)


def _name(path: Path) -> str:
    """A page's path from the root."""
    return path.relative_to(ROOT).as_posix()


def stale_pages() -> list[str]:
    """The pages whose regions differ from what they stand for, as paths from the root."""
    return [
        _name(path)
        for path in pages()
        if render(text := path.read_text(encoding="utf-8"), _name(path)) != text
    ]


def main(argv: list[str] | None = None) -> int:
    """Write the pages anew, or with ``--check`` list the stale ones."""
    parser = argparse.ArgumentParser(
        prog="python docs/_ext/pages.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--check", action="store_true", help="only list the stale pages")
    arguments = parser.parse_args(argv)
    try:
        stale = stale_pages()
    except PageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if arguments.check:
        for name in stale:
            print(f"{name} is stale: run python docs/_ext/pages.py")
        return 1 if stale else 0
    for name in stale:
        path = ROOT / name
        path.write_text(render(path.read_text(encoding="utf-8"), name), encoding="utf-8")
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
