"""Regenerate ``pytest_tempinbox/checks/caniemail.json`` from the ``caniemail`` npm package.

The package (MIT, by Avi Goldman and Andrew Powell) carries caniemail.com's
database of HTML and CSS features per email client. This script trims it to
what :mod:`pytest_tempinbox.checks.html_support` reads, and adds to each
feature how to find it in a message (its ``kind`` and ``match``), derived from
the feature's slug and title by the rules below. A feature that no rule knows
is kept with kind ``other`` and an empty ``match`` (never found in a message),
and named in the summary so the rules can learn it.

Usage::

    python scripts/refresh_caniemail.py              # npm pack caniemail@latest into a temp dir
    python scripts/refresh_caniemail.py SOURCE       # a .tgz, an unpacked package, or its JSON
    python scripts/refresh_caniemail.py --output PATH

Each platform's support is the value of its last-listed version (caniemail
lists a platform's tests oldest first), reduced to its letter: ``y``
(supported), ``a`` (partial) or ``n`` (not supported), so "y #1" counts as
supported and "a #2" as partial whatever the note says; ``u`` (unknown) and
untested platforms become ``-``. The output is deterministic (sorted keys, one client order), so
a refresh shows in a diff as exactly what changed; the script prints counts.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parents[1] / "pytest_tempinbox" / "checks" / "caniemail.json"
LICENSE_OUTPUT = OUTPUT.with_name("caniemail-LICENSE")

# Features whose slug and title no general rule below reads: slug -> (kind, match).
OVERRIDES: dict[str, tuple[str, list[str]]] = {
    "amp": ("html-element-attribute", ["html[amp4email]", "html[\u26a14email]"]),
    "bimi": ("other", []),  # a header and a DNS record, nothing in the HTML
    "html-address": ("html-element", ["address"]),
    "html-anchor-links": ("html-element-attribute", ["a[href^=#]", "a[name]"]),
    "html-comments": ("html-element", ["!--"]),
    "html-doctype": ("html-element", ["!doctype"]),
    "html-h1-h6": ("html-element", ["h1", "h2", "h3", "h4", "h5", "h6"]),
    "html-image-maps": ("html-element", ["map"]),
    "html-lists": ("html-element", ["dl", "ol", "ul"]),
    "html-mailto-links": ("html-element-attribute", ["a[href^=mailto:]"]),
    "html-meta-color-scheme": ("html-element-attribute", ["meta[name=color-scheme]"]),
    "html-semantics": (
        "html-element",
        [
            "article",
            "aside",
            "details",
            "figcaption",
            "figure",
            "footer",
            "header",
            "main",
            "mark",
            "nav",
            "section",
            "summary",
            "time",
        ],
    ),
    "html-srcset": ("html-attribute", ["sizes", "srcset"]),
    "html-svg": ("html-element", ["svg"]),
    "css-inert-attribute": ("html-attribute", ["inert"]),
    "css-important": ("css-keyword", ["!important"]),
    "css-comments": ("css-syntax", ["comment"]),
    "css-nesting": ("css-syntax", ["nesting"]),
    "css-variables": ("css-function", ["var"]),
    "css-modern-color": ("css-function", ["lab", "lch", "oklab", "oklch"]),
    "css-linear-gradient": ("css-function", ["linear-gradient", "repeating-linear-gradient"]),
    "css-radial-gradient": ("css-function", ["radial-gradient", "repeating-radial-gradient"]),
    "css-conic-gradient": ("css-function", ["conic-gradient", "repeating-conic-gradient"]),
    "css-rgb": ("css-function", ["rgb"]),
    "css-rgba": ("css-function", ["rgba"]),
    "css-unit-calc": ("css-function", ["calc"]),
    "css-unit-initial": ("css-value", ["*:initial"]),
    "css-unit-percent": ("css-unit", ["%"]),
    "css-intrinsic-size": ("css-value", ["*:fit-content", "*:max-content", "*:min-content"]),
    "css-sytem-ui": (
        "css-value",
        ["*:system-ui", "*:ui-monospace", "*:ui-rounded", "*:ui-sans-serif", "*:ui-serif"],
    ),
    "css-display-flex": ("css-value", ["display:flex", "display:inline-flex"]),
    "css-display-grid": ("css-value", ["display:grid", "display:inline-grid"]),
    "css-display-none": ("css-value", ["display:none"]),
    "css-flex-direction": ("css-value", ["flex-direction:column", "flex-direction:column-reverse"]),
    "css-flex-wrap": ("css-value", ["flex-wrap:wrap", "flex-wrap:wrap-reverse"]),
    "css-at-media-device-pixel-ratio": ("css-media-feature", ["device-pixel-ratio"]),
    "css-at-media-hover": ("css-media-feature", ["any-hover", "hover"]),
    "css-pseudo-class-lang": ("css-selector", [":lang"]),
    "css-selector-adjacent-sibling": ("css-selector", ["adjacent-sibling"]),
    "css-selector-attribute": ("css-selector", ["attribute"]),
    "css-selector-chaining": ("css-selector", ["chaining"]),
    "css-selector-child": ("css-selector", ["child"]),
    "css-selector-class": ("css-selector", ["class"]),
    "css-selector-descendant": ("css-selector", ["descendant"]),
    "css-selector-general-sibling": ("css-selector", ["general-sibling"]),
    "css-selector-grouping": ("css-selector", ["grouping"]),
    "css-selector-id": ("css-selector", ["id"]),
    "css-selector-type": ("css-selector", ["type"]),
    "css-selector-universal": ("css-selector", ["universal"]),
    # Properties whose title names a group, or which have longhands the title leaves out.
    "css-animation": ("css-property", ["animation", "animation-*"]),
    "css-background": ("css-property", ["background", "background-attachment"]),
    "css-block-inline-size": ("css-property", ["block-size", "inline-size"]),
    "css-border-inline-block": ("css-property", ["border-block", "border-inline"]),
    "css-border-inline-block-individual": (
        "css-property",
        ["border-block-end", "border-block-start", "border-inline-end", "border-inline-start"],
    ),
    "css-border-inline-block-longhand": (
        "css-property",
        [
            "border-block-color",
            "border-block-end-color",
            "border-block-end-style",
            "border-block-end-width",
            "border-block-start-color",
            "border-block-start-style",
            "border-block-start-width",
            "border-block-style",
            "border-block-width",
            "border-inline-color",
            "border-inline-end-color",
            "border-inline-end-style",
            "border-inline-end-width",
            "border-inline-start-color",
            "border-inline-start-style",
            "border-inline-start-width",
            "border-inline-style",
            "border-inline-width",
        ],
    ),
    "css-border-radius": (
        "css-property",
        [
            "border-bottom-left-radius",
            "border-bottom-right-radius",
            "border-radius",
            "border-top-left-radius",
            "border-top-right-radius",
        ],
    ),
    "css-border-radius-logical": (
        "css-property",
        [
            "border-end-end-radius",
            "border-end-start-radius",
            "border-start-end-radius",
            "border-start-start-radius",
        ],
    ),
    "css-color-scheme": ("css-property", ["color-scheme"]),
    "css-column-layout-properties": (
        "css-property",
        [
            "column-fill",
            "column-gap",
            "column-rule",
            "column-rule-color",
            "column-rule-style",
            "column-rule-width",
            "column-span",
            "column-width",
            "columns",
        ],
    ),
    "css-gap": ("css-property", ["column-gap", "gap", "row-gap"]),
    "css-grid-template": (
        "css-property",
        ["grid-template", "grid-template-areas", "grid-template-columns", "grid-template-rows"],
    ),
    "css-inset": ("css-property", ["inset", "inset-*"]),
    "css-left-right-top-bottom": ("css-property", ["bottom", "left", "right", "top"]),
    "css-margin-block-start-end": ("css-property", ["margin-block-end", "margin-block-start"]),
    "css-margin-inline-block": ("css-property", ["margin-block", "margin-inline"]),
    "css-margin-inline-start-end": ("css-property", ["margin-inline-end", "margin-inline-start"]),
    "css-outline": (
        "css-property",
        ["outline", "outline-color", "outline-style", "outline-width"],
    ),
    "css-overflow": (
        "css-property",
        ["overflow", "overflow-block", "overflow-inline", "overflow-x", "overflow-y"],
    ),
    "css-padding": (
        "css-property",
        ["padding", "padding-bottom", "padding-left", "padding-right", "padding-top"],
    ),
    "css-padding-block-start-end": ("css-property", ["padding-block-end", "padding-block-start"]),
    "css-padding-inline-block": ("css-property", ["padding-block", "padding-inline"]),
    "css-padding-inline-start-end": (
        "css-property",
        ["padding-inline-end", "padding-inline-start"],
    ),
    "css-scroll-snap": ("css-property", ["scroll-snap-*"]),
    "css-text-emphasis": (
        "css-property",
        ["text-emphasis", "text-emphasis-color", "text-emphasis-style"],
    ),
    "css-transform": ("css-property", ["transform", "transform-*"]),
    "css-transition": ("css-property", ["transition", "transition-*"]),
}

# Image formats: the slug's format -> the file extensions and data: MIME types that show it.
IMAGE_FORMATS: dict[str, list[str]] = {
    "apng": ["apng", "image/apng"],
    "avif": ["avif", "image/avif"],
    "base64": ["base64"],
    "bmp": ["bmp", "image/bmp"],
    "gif": ["gif", "image/gif"],
    "hdr": ["hdr"],
    "heif": ["heic", "heif", "image/heic", "image/heif"],
    "ico": ["ico", "image/vnd.microsoft.icon", "image/x-icon"],
    "jpg": ["jpeg", "jpg", "image/jpeg", "image/jpg"],
    "mp4": ["mp4", "video/mp4"],
    "png": ["png", "image/png"],
    "svg": ["svg", "image/svg+xml"],
    "tiff": ["tif", "tiff", "image/tiff"],
    "webp": ["webp", "image/webp"],
}

PROPERTY = re.compile(r"[a-z][a-z-]*")


def derive(feature: Mapping[str, Any]) -> tuple[str, list[str]]:
    """How to find one feature in a message: its kind and what to match (see the module)."""
    slug: str = feature["slug"]
    title: str = feature["title"].strip()
    if slug in OVERRIDES:
        kind, match = OVERRIDES[slug]
        return kind, sorted(match)
    if slug.startswith("image-"):
        return "image-format", sorted(IMAGE_FORMATS.get(slug.removeprefix("image-"), []))
    if slug.startswith("html-"):
        pair = re.fullmatch(r"<(\w+) (\w+)=\"(\w+)\"> element", title)
        if pair:
            return "html-element-attribute", [f"{pair[1]}[{pair[2]}={pair[3]}]"]
        if title.endswith(" attribute"):
            return "html-attribute", [title.removesuffix(" attribute")]
        element = re.fullmatch(r"<(\w+)>(?: element)?", title)
        if element:
            return "html-element", [element[1].lower()]
    if slug.startswith("css-pseudo-class-"):
        return "css-selector", [":" + slug.removeprefix("css-pseudo-class-")]
    if slug.startswith("css-pseudo-element-"):
        return "css-selector", ["::" + slug.removeprefix("css-pseudo-element-")]
    if slug.startswith("css-unit-"):
        return "css-unit", [slug.removeprefix("css-unit-")]
    if slug.startswith("css-function-"):
        return "css-function", [slug.removeprefix("css-function-")]
    if slug.startswith("css-at-media-"):
        return "css-media-feature", [slug.removeprefix("css-at-media-")]
    if slug.startswith("css-at-"):
        return "css-at-rule", [title.lower()]
    if slug.startswith("css-"):
        name = title.removesuffix(" shorthand").removesuffix(" property").strip()
        if PROPERTY.fullmatch(name):
            names = {name}
            keywords = feature.get("keywords") or ""
            names |= {
                word.strip()
                for word in keywords.split(",")
                if word.strip().startswith(name + "-") and PROPERTY.fullmatch(word.strip())
            }
            return "css-property", sorted(names)
    return "other", []


def support_letter(value: str) -> str:
    """One of ``y``, ``a``, ``n``, ``-`` for a caniemail support value such as ``"a #1 #2"``."""
    letter = value.strip()[:1]
    return letter if letter in ("y", "a", "n") else "-"


def trim(source: Mapping[str, Any], package_version: str | None) -> dict[str, Any]:
    """The vendored data: caniemail's JSON reduced to what the check reads."""
    clients = sorted(
        {
            f"{family}.{platform}"
            for feature in source["data"]
            for family, platforms in feature["stats"].items()
            for platform in platforms
        }
    )
    features: dict[str, Any] = {}
    for feature in source["data"]:
        latest = {}
        for family, platforms in feature["stats"].items():
            for platform, versions in platforms.items():
                if versions:
                    # caniemail lists a platform's versions oldest first: the last is current.
                    latest[f"{family}.{platform}"] = support_letter(list(versions.values())[-1])
        kind, match = derive(feature)
        features[feature["slug"]] = {
            "category": feature["category"],
            "kind": kind,
            "match": match,
            "support": "".join(latest.get(client, "-") for client in clients),
            "title": feature["title"].strip(),
            "url": feature["url"],
        }
    nicenames = source.get("nicenames", {})
    return {
        "clients": clients,
        "families": dict(nicenames.get("family", {})),
        "platforms": dict(nicenames.get("platform", {})),
        "source": {
            "api_version": source.get("api_version"),
            "homepage": "https://www.caniemail.com/",
            "last_update_date": source.get("last_update_date"),
            "license": "MIT",
            "package": "caniemail",
            "package_version": package_version,
        },
        "features": features,
    }


def load(source: Path | None, workdir: Path) -> tuple[dict[str, Any], str | None, str | None]:
    """Read caniemail's JSON, the package's version and its LICENSE text, from ``source`` or npm."""
    if source is None:
        # caniemail@latest: a bare name lets npm pick an older release when node is older
        # than the latest one's "engines" asks, and the data must be the newest.
        subprocess.run(
            ["npm", "pack", "caniemail@latest", "--silent"],
            cwd=workdir,
            check=True,
            stdout=sys.stderr,
        )
        source = next(workdir.glob("caniemail-*.tgz"))
    if source.is_file() and source.name.endswith((".tgz", ".tar.gz")):
        with tarfile.open(source) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(workdir, filter="data")
            else:  # Python before 3.10.12 / 3.11.4: the archive comes from the npm registry
                tar.extractall(workdir)
        source = workdir / "package"
    if source.is_dir():
        package = json.loads((source / "package.json").read_text(encoding="utf-8"))
        license_path = source / "LICENSE"
        license_text = license_path.read_text(encoding="utf-8") if license_path.exists() else None
        data = json.loads((source / "data" / "caniemail.json").read_text(encoding="utf-8"))
        return data, package.get("version"), license_text
    return json.loads(source.read_text(encoding="utf-8")), None, None


def dumps(data: Mapping[str, Any]) -> str:
    """The file's text: sorted keys, one value a line, so refreshes diff cleanly."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def summary(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[str]:
    """What changed, counted: features added, removed, whose support changed; undetected ones."""
    new_features = new["features"]
    lines = [
        f"caniemail {new['source']['package_version']} "
        f"(data of {new['source']['last_update_date']}): "
        f"{len(new_features)} features, {len(new['clients'])} client platforms"
    ]
    if old is not None:
        old_features = old.get("features", {})
        added = sorted(set(new_features) - set(old_features))
        removed = sorted(set(old_features) - set(new_features))
        old_clients = old.get("clients", [])

        def by_client(clients: list[str], support: str) -> dict[str, str]:
            return dict(zip(clients, support, strict=True))

        changed = sorted(
            slug
            for slug in set(new_features) & set(old_features)
            if by_client(old_clients, old_features[slug]["support"])
            != by_client(new["clients"], new_features[slug]["support"])
        )
        lines.append(f"added: {len(added)} {' '.join(added)}".rstrip())
        lines.append(f"removed: {len(removed)} {' '.join(removed)}".rstrip())
        lines.append(f"support changed: {len(changed)} {' '.join(changed)}".rstrip())
        gained = sorted(set(new["clients"]) - set(old_clients))
        lost = sorted(set(old_clients) - set(new["clients"]))
        lines.append(f"clients added: {len(gained)} {' '.join(gained)}".rstrip())
        lines.append(f"clients removed: {len(lost)} {' '.join(lost)}".rstrip())
    undetected = sorted(slug for slug, f in new_features.items() if not f["match"])
    lines.append(f"never detected (no rule): {len(undetected)} {' '.join(undetected)}".rstrip())
    return lines


def main(argv: list[str] | None = None) -> int:
    """Refresh the vendored file; print what changed, counted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "source",
        nargs="?",
        type=Path,
        help="a caniemail .tgz, an unpacked package directory or its caniemail.json "
        "(default: npm pack caniemail@latest)",
    )
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"default: {OUTPUT}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        source, version, license_text = load(args.source, Path(workdir))
    new = trim(source, version)
    output: Path = args.output
    old = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    output.write_text(dumps(new), encoding="utf-8")
    if license_text is not None:
        output.with_name(LICENSE_OUTPUT.name).write_text(
            attribution(license_text, version), encoding="utf-8"
        )
    print("\n".join(summary(old, new)))
    print(f"wrote {output} ({output.stat().st_size:,} bytes)")
    return 0


def attribution(license_text: str, version: str | None) -> str:
    """The attribution file shipped beside the data: where it comes from and its licence."""
    return (
        "caniemail.json is derived from the data of caniemail.com (https://www.caniemail.com/),\n"
        f"as published in the npm package caniemail {version or ''} "
        "(https://github.com/shellscape/caniemail),\n"
        "trimmed by scripts/refresh_caniemail.py. It is used under the package's licence:\n\n"
        + license_text.strip()
        + "\n"
    )


if __name__ == "__main__":
    raise SystemExit(main())
