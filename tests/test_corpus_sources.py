"""Every corpus file has a recorded project, licence and source, and its licence text beside it.

The shape a folder of ``tests/corpus/transactional/`` must have is written in that
folder's ``README.md``; these tests hold it, one folder at a time, so a new project's
folder is checked as soon as it exists. ``tests/corpus/parsing/`` has a shape of its
own: one ``SOURCE.md`` naming every file of its folders and the licence files beside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

CORPUS = Path(__file__).parent / "corpus"
TRANSACTIONAL = CORPUS / "transactional"
PARSING = CORPUS / "parsing"
PROJECTS = sorted(path.name for path in TRANSACTIONAL.iterdir() if path.is_dir())

# A folder's own record files; every other file in it is a mail its manifest lists.
RECORD_FILES = {"SOURCE.md", "manifest.json", "LICENSE"}
REPOSITORY_LINE = re.compile(r"^- Repository: (https://\S+)$", re.MULTILINE)
LICENSE_LINE = re.compile(r"^- License: (\S+)$", re.MULTILINE)
COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
PATH = re.compile(r"[\w.{},/-]+")

# The licence texts a corpus may carry, as SPDX ids, and the heading that tells each
# text apart; the first heading found in LICENSE names its kind, so the Affero and
# Lesser GPLs are tried before the GPL. A licence not listed here is added here.
KINDS: list[tuple[str, str, str]] = [
    (
        "GNU AGPL v3",
        "GNU AFFERO GENERAL PUBLIC LICENSE Version 3",
        "AGPL-3.0-only AGPL-3.0-or-later",
    ),
    (
        "GNU LGPL v2.1",
        "GNU LESSER GENERAL PUBLIC LICENSE Version 2.1",
        "LGPL-2.1-only LGPL-2.1-or-later",
    ),
    (
        "GNU LGPL v3",
        "GNU LESSER GENERAL PUBLIC LICENSE Version 3",
        "LGPL-3.0-only LGPL-3.0-or-later",
    ),
    ("GNU GPL v2", "GNU GENERAL PUBLIC LICENSE Version 2", "GPL-2.0-only GPL-2.0-or-later"),
    ("GNU GPL v3", "GNU GENERAL PUBLIC LICENSE Version 3", "GPL-3.0-only GPL-3.0-or-later"),
    ("Mozilla Public License 2.0", "Mozilla Public License Version 2.0", "MPL-2.0"),
    ("Apache License 2.0", "Apache License Version 2.0, January 2004", "Apache-2.0"),
    ("MIT", "Permission is hereby granted, free of charge, to any person", "MIT"),
    ("ISC", "Permission to use, copy, modify, and/or distribute this software for any", "ISC"),
    ("BSD 3-clause", "Neither the name", "BSD-3-Clause"),
    ("BSD 2-clause", "Redistribution and use in source and binary forms", "BSD-2-Clause"),
]
SPDX_IDS = frozenset(spdx for _, _, ids in KINDS for spdx in ids.split())


def flattened(text: str) -> str:
    """``text`` with each run of white space, line ends included, made one space."""
    return " ".join(text.split())


def template_files(paths: str) -> list[str]:
    """The file names in a manifest entry's template paths: the last segment of each
    path that has an extension ("email/base.html" gives "base.html"; "(msgids)" nothing).
    """
    names = (path.rsplit("/", 1)[-1] for path in PATH.findall(paths))
    return [name for name in names if re.fullmatch(r"[\w{},-]+(\.[\w-]+)+", name)]


def licence_kind(text: str) -> tuple[str, frozenset[str]] | None:
    """The kind of licence a LICENSE text is, with the SPDX ids that may name it."""
    text = flattened(text)
    for name, heading, ids in KINDS:
        if heading in text:
            return name, frozenset(ids.split())
    return None


def source_of(project: str) -> str:
    """The project's SOURCE.md, or a failure saying it is missing."""
    path = TRANSACTIONAL / project / "SOURCE.md"
    assert path.is_file(), f"{project}/: no SOURCE.md (the folder's shape: ../README.md)"
    return path.read_text(encoding="utf-8")


def manifest_of(project: str) -> list[dict[str, Any]]:
    """The project's manifest.json entries."""
    path = TRANSACTIONAL / project / "manifest.json"
    assert path.is_file(), f"{project}/: no manifest.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(entries, list), f"{project}/manifest.json: a list of entries expected"
    return entries


def declared_licence(project: str) -> str:
    """The SPDX id on SOURCE.md's ``- License:`` line."""
    found = LICENSE_LINE.findall(source_of(project))
    assert len(found) == 1, (
        f"{project}/SOURCE.md: one line '- License: <SPDX id>' expected, found {found}"
    )
    return str(found[0])


def repository_of(project: str) -> str:
    """The repository on SOURCE.md's ``- Repository:`` line, as ``owner/name``."""
    found = REPOSITORY_LINE.findall(source_of(project))
    assert len(found) == 1, (
        f"{project}/SOURCE.md: one line '- Repository: https://<host>/<owner>/<name>'"
        f" expected, found {found}"
    )
    return urlparse(str(found[0])).path.strip("/").removesuffix(".git")


def test_the_transactional_corpus_has_project_folders() -> None:
    assert len(PROJECTS) >= 10, PROJECTS


@pytest.mark.parametrize("project", PROJECTS)
def test_source_names_the_repository_and_an_spdx_licence(project: str) -> None:
    assert "/" in repository_of(project)
    licence = declared_licence(project)
    assert licence in SPDX_IDS, (
        f"{project}/SOURCE.md: licence {licence!r} is not one of the SPDX ids this test"
        f" knows ({', '.join(sorted(SPDX_IDS))}); use the exact SPDX id (GPL family:"
        f" -only or -or-later), or add the licence to KINDS in {Path(__file__).name}"
    )


@pytest.mark.parametrize("project", PROJECTS)
def test_license_file_is_the_licence_source_names(project: str) -> None:
    path = TRANSACTIONAL / project / "LICENSE"
    assert path.is_file(), f"{project}/: no LICENSE (the licence text, verbatim from upstream)"
    kind = licence_kind(path.read_text(encoding="utf-8"))
    licence = declared_licence(project)
    assert kind is not None, f"{project}/LICENSE: not a licence text this test recognises"
    name, ids = kind
    assert licence in ids, (
        f"{project}: SOURCE.md says {licence}, but LICENSE reads as the {name}"
        f" ({' or '.join(sorted(ids))})"
    )


@pytest.mark.parametrize("project", PROJECTS)
def test_every_file_of_the_folder_is_a_mail_its_manifest_lists(project: str) -> None:
    listed = [str(entry.get("file")) for entry in manifest_of(project)]
    present = {
        path.name
        for path in (TRANSACTIONAL / project).iterdir()
        if path.name not in RECORD_FILES and not path.name.startswith("NOTICE")
    }
    assert sorted(present - set(listed)) == [], f"{project}/: files no manifest entry lists"
    assert sorted(set(listed) - present) == [], f"{project}/manifest.json: entries with no file"
    assert len(listed) == len(set(listed)), f"{project}/manifest.json: a file listed twice"


@pytest.mark.parametrize("project", PROJECTS)
def test_every_mail_names_its_templates_and_source_gives_their_commit(project: str) -> None:
    repository = repository_of(project)
    source = source_of(project)
    assert COMMIT.search(source), f"{project}/SOURCE.md: no 40-hex-digit commit named"
    problems = []
    for entry in manifest_of(project):
        template = entry.get("template") or ""
        prefix, _, paths = template.partition(":")
        if prefix != repository or not paths.strip():
            problems.append(
                f"{entry.get('file')}: template {template!r} does not read"
                f" '{repository}:<path>[, <path>...]'"
            )
            continue
        unrecorded = [name for name in template_files(paths) if name not in source]
        if unrecorded:
            problems.append(f"{entry.get('file')}: {unrecorded} not in SOURCE.md")
    assert not problems, f"{project}:\n" + "\n".join(problems)


def test_parsing_source_lists_every_file_of_its_folders() -> None:
    source = (PARSING / "SOURCE.md").read_text(encoding="utf-8")
    unlisted = [
        f"{folder.name}/{path.name}"
        for folder in sorted(PARSING.iterdir())
        if folder.is_dir()
        for path in sorted(folder.iterdir())
        if f"`{path.name}`" not in source
    ]
    assert unlisted == [], "tests/corpus/parsing/SOURCE.md does not list these files"


def test_parsing_source_names_its_licence_and_notice_files() -> None:
    source = (PARSING / "SOURCE.md").read_text(encoding="utf-8")
    beside = [path for path in sorted(PARSING.iterdir()) if path.is_file()]
    unnamed = [p.name for p in beside if p.name != "SOURCE.md" and f"`{p.name}`" not in source]
    assert unnamed == [], "files beside tests/corpus/parsing/SOURCE.md that it does not name"
    licence = PARSING / "LICENSE-APACHE-2.0"
    assert licence_kind(licence.read_text(encoding="utf-8")) == (
        "Apache License 2.0",
        frozenset({"Apache-2.0"}),
    )
