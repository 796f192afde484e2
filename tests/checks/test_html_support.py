"""The HTML support check: caniemail's data, what a message uses, and the score it gets."""

from __future__ import annotations

import email
import email.policy
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tempinbox.checks.html_support import (
    FeatureSupport,
    HtmlCompatibility,
    assert_html_support,
    client_names,
    html_compatibility,
)
from pytest_tempinbox.errors import InvalidRequest, MailAssertionError

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "tests" / "corpus" / "transactional").glob("*/*.eml"))

SIMPLE = """\
<table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" align="center">
  <tr>
    <td style="padding: 20px; font-family: Arial, sans-serif; color: #333333;
               background-color: #ffffff; text-align: left; line-height: 20px">
      <p>Hello <strong>Ada</strong>,</p>
      <p><a href="https://app.example/ok" style="color: #1a73e8">OK</a></p>
    </td>
  </tr>
</table>
"""

MODERN = """\
<!DOCTYPE html>
<html><head><style>
  @font-face { font-family: Brand; src: url(https://cdn.example/brand.woff2) format("woff2"); }
  .grid { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
  .card:hover > .title { transform: scale(1.1); }
</style></head>
<body>
  <div style="display: flex; flex-direction: column; position: absolute; top: 0;
              background-image: url('https://cdn.example/hero.webp')">
    <svg width="10" height="10"><circle cx="5" cy="5" r="4"/></svg>
  </div>
</body></html>
"""


def data_file() -> dict[str, Any]:
    text = resources.files("pytest_tempinbox.checks").joinpath("caniemail.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def html_bodies() -> list[tuple[str, str]]:
    bodies = []
    for path in CORPUS:
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        body = message.get_body(("html",))
        if body is not None:
            bodies.append((f"{path.parent.name}/{path.name}", body.get_content()))
    return bodies


# The data file.


def test_vendored_data_parses_and_has_the_expected_shape() -> None:
    data = data_file()
    clients = data["clients"]
    assert clients == sorted(clients)
    assert "outlook.windows" in clients
    assert "gmail.desktop-webmail" in clients
    assert data["source"]["license"] == "MIT"
    for slug, feature in data["features"].items():
        assert set(feature) == {"category", "kind", "match", "support", "title", "url"}, slug
        assert len(feature["support"]) == len(clients), slug
        assert set(feature["support"]) <= set("yan-"), slug
        assert feature["url"].startswith("https://www.caniemail.com/"), slug


def test_vendored_data_knows_the_well_known_features() -> None:
    features = data_file()["features"]
    assert features["css-display-flex"]["match"] == ["display:flex", "display:inline-flex"]
    assert features["html-style"]["kind"] == "html-element"
    assert features["css-background-image"]["kind"] == "css-property"
    # Every feature but BIMI (a header, not HTML) is something a message can be seen using.
    assert [slug for slug, feature in features.items() if not feature["match"]] == ["bimi"]


def test_vendored_data_ships_with_its_licence_and_stays_small() -> None:
    folder = resources.files("pytest_tempinbox.checks")
    attribution = folder.joinpath("caniemail-LICENSE").read_text("utf-8")
    assert "MIT License" in attribution
    assert "caniemail.com" in attribution
    assert len(folder.joinpath("caniemail.json").read_bytes()) < 300_000


def test_refresh_script_trims_a_caniemail_database(tmp_path: Path) -> None:
    source = {
        "api_version": "1.0.4",
        "last_update_date": "2030-01-02 03:04:05 +0000",
        "nicenames": {"family": {"gmail": "Gmail"}, "platform": {"ios": "iOS"}},
        "data": [
            {
                "slug": "css-display-flex",
                "title": "display:flex",
                "category": "css",
                "keywords": "flexbox",
                "url": "https://www.caniemail.com/features/css-display-flex/",
                "stats": {
                    "gmail": {"ios": {"2019-01": "n", "2024-01": "a #1"}},
                    "outlook": {"windows": {"2016": "n"}, "ios": {"2020-01": "u"}},
                },
            }
        ],
    }
    (tmp_path / "caniemail.json").write_text(json.dumps(source), encoding="utf-8")
    output = tmp_path / "out.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "refresh_caniemail.py"),
            str(tmp_path / "caniemail.json"),
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "1 features, 3 client platforms" in done.stdout
    first = output.read_text(encoding="utf-8")
    trimmed = json.loads(first)
    assert trimmed["clients"] == ["gmail.ios", "outlook.ios", "outlook.windows"]
    # The newest (last-listed) verdict of each platform, reduced to its letter.
    assert trimmed["features"]["css-display-flex"]["support"] == "a-n"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "refresh_caniemail.py"),
            str(tmp_path / "caniemail.json"),
            "--output",
            str(output),
        ],
        capture_output=True,
        check=True,
    )
    assert output.read_text(encoding="utf-8") == first  # deterministic


# What a message uses.


def test_simple_table_layout_passes() -> None:
    report = html_compatibility(SIMPLE)
    assert report.score >= 90
    assert "html-table" in report.used
    assert "css-padding" in report.used
    assert "html-cellpadding" in report.used
    assert_html_support(report)


def test_modern_layout_fails_with_what_holds_it_back() -> None:
    report = html_compatibility(MODERN)
    assert report.score < 90
    used = set(report.used)
    expected = {
        "css-at-font-face",
        "css-display-grid",
        "css-display-flex",
        "css-flex-direction",
        "css-grid-template",
        "css-gap",
        "css-transform",
        "css-pseudo-class-hover",
        "css-selector-child",
        "css-position",
        "css-left-right-top-bottom",
        "css-background-image",
        "html-svg",
        "image-webp",
        "html-doctype",
    }
    assert expected <= used
    flagged = {feature.slug for feature in report.features}
    assert {"css-at-font-face", "html-svg", "css-display-grid", "css-position"} <= flagged
    losses = [feature.loss for feature in report.features]
    assert losses == sorted(losses, reverse=True)


def test_values_functions_units_and_at_rules_are_found() -> None:
    html = """<style>
      @media (prefers-color-scheme: dark) { .x { color: rgba(0,0,0,.5) !important; } }
      @media (-webkit-min-device-pixel-ratio: 2) { a + b ~ c { width: calc(100% - 2rem); } }
      @import url("https://cdn.example/x.css");
      /* a comment */
      .a.b, #c * { font-family: system-ui; display: none; }
    </style>
    <input type="checkbox"><input><a href="mailto:x@example.com">m</a><a href="#top">t</a>
    <img src="data:image/png;base64,iVBORw0KGgo=" srcset="a.avif 2x">"""
    used = set(html_compatibility(html).used)
    assert {
        "css-at-media",
        "css-at-media-prefers-color-scheme",
        "css-at-media-device-pixel-ratio",
        "css-rgba",
        "css-important",
        "css-unit-calc",
        "css-unit-percent",
        "css-unit-rem",
        "css-at-import",
        "css-comments",
        "css-selector-adjacent-sibling",
        "css-selector-general-sibling",
        "css-selector-chaining",
        "css-selector-grouping",
        "css-selector-universal",
        "css-selector-id",
        "css-sytem-ui",
        "css-display-none",
        "html-input-checkbox",
        "html-input-text",  # an input without a type is a text input
        "html-mailto-links",
        "html-anchor-links",
        "image-png",
        "image-base64",
        "image-avif",
        "html-srcset",
    } <= used


def test_a_semicolon_inside_a_data_url_does_not_split_the_declaration() -> None:
    used = set(
        html_compatibility(
            "<div style=\"background: url('data:image/gif;base64,R0lGOD;lhAQ=') no-repeat\"></div>"
        ).used
    )
    assert {"css-background", "image-gif", "image-base64"} <= used


def test_empty_html_scores_full_support_with_no_features() -> None:
    report = html_compatibility("")
    assert report.score == 100.0
    assert report.features == ()
    assert report.used == {}
    assert report.nodes == 0
    assert_html_support(report, at_least=100)


@pytest.mark.parametrize(
    "html",
    [
        "<div style='display:flex",
        '<table><tr><td style="color:">',
        "<style>.a { color: red; .b { @media { } } } } }",
        "<style>@media (max-width: 600px { .a { display: grid",
        "<!-- unclosed comment <div>",
        "<![if !mso]><p>x<![endif]>",
        '<a href="#" name>x</a><input type>',
        "<<<>>>&&&;;;\x00\ufffd",
        "<style>" + "{" * 500 + "</style>",
        "<svg><foreignObject><p style='position:fixed'>x</svg>",
    ],
)
def test_malformed_html_never_raises(html: str) -> None:
    report = html_compatibility(html)
    assert 0 <= report.score <= 100


@given(st.text(alphabet=st.sampled_from(list("<>/=\"' {};:!@#.-()abcdiv style"))))
def test_any_text_gives_a_score(html: str) -> None:
    assert 0 <= html_compatibility(html).score <= 100


def test_every_corpus_html_body_gives_a_score() -> None:
    bodies = html_bodies()
    assert len(bodies) > 50  # some are plain text labelled text/html: they score 100
    for name, html in bodies:
        report = html_compatibility(html)
        assert 0 <= report.score <= 100, name


# Clients.


def test_clients_filter_by_family_platform_and_glob() -> None:
    outlook = html_compatibility(MODERN, clients=["outlook"])
    assert outlook.clients == tuple(name for name in client_names() if name.startswith("outlook."))
    windows = html_compatibility(MODERN, clients="outlook.windows")
    assert windows.clients == ("outlook.windows",)
    ios = html_compatibility(MODERN, clients=["*.ios", "gmail"])
    assert "apple-mail.ios" in ios.clients
    assert "gmail.desktop-webmail" in ios.clients
    assert "outlook.windows" not in ios.clients
    for report in (outlook, windows, ios):
        for feature in report.features:
            assert set(feature.unsupported) | set(feature.partial) <= set(report.clients)


def test_apple_mail_supports_what_outlook_on_windows_does_not() -> None:
    apple = html_compatibility(MODERN, clients=["apple-mail"])
    windows = html_compatibility(MODERN, clients=["outlook.windows"])
    assert apple.score > windows.score


def test_unknown_client_is_refused_with_the_known_families() -> None:
    with pytest.raises(InvalidRequest, match="gmail"):
        html_compatibility(SIMPLE, clients=["hotmail"])
    with pytest.raises(InvalidRequest):
        html_compatibility(SIMPLE, clients=[])


def test_report_rescored_for_other_clients_matches_a_fresh_check() -> None:
    report = html_compatibility(MODERN)
    assert report.for_clients(["gmail"]) == html_compatibility(MODERN, clients=["gmail"])


# JSON and the assertion.


def test_report_json_round_trip() -> None:
    report = html_compatibility(MODERN, clients=["gmail", "outlook"])
    data = json.loads(json.dumps(report.to_json()))
    assert HtmlCompatibility.from_json(data) == report
    assert set(data) == {
        "score",
        "partial",
        "unsupported",
        "features",
        "used",
        "nodes",
        "clients",
        "source",
    }
    assert set(data["features"][0]) == {
        "slug",
        "title",
        "url",
        "kind",
        "score",
        "loss",
        "tested",
        "unsupported",
        "partial",
        "found",
    }
    assert FeatureSupport.from_json(data["features"][0]) == report.features[0]


def test_the_score_weighs_each_feature_by_how_much_of_the_mail_uses_it() -> None:
    # As Mailpit weighs it: a feature on 1 element of 10 costs a tenth of what it would
    # cost on all of them, and the worst feature sets the score, not the sum of them all.
    rare = "<div>" * 9 + '<div style="display: flex">x</div>'
    everywhere = '<div style="display: flex">x</div>' * 10
    flex_rare, flex_everywhere = html_compatibility(rare), html_compatibility(everywhere)
    (feature,) = [f for f in flex_rare.features if f.slug == "css-display-flex"]
    (same,) = [f for f in flex_everywhere.features if f.slug == "css-display-flex"]
    assert (feature.found, flex_rare.nodes, same.found, flex_everywhere.nodes) == (1, 10, 10, 10)
    assert same.loss == pytest.approx(10 * feature.loss, abs=0.1)  # each rounded to 0.01
    assert flex_everywhere.score == pytest.approx(
        100 - flex_everywhere.partial - flex_everywhere.unsupported, abs=0.02
    )
    assert flex_everywhere.score < flex_rare.score


def test_assertion_lists_the_features_worst_first_with_their_pages() -> None:
    report = html_compatibility(MODERN)
    with pytest.raises(MailAssertionError) as failed:
        assert_html_support(report, at_least=95)
    message = str(failed.value)
    assert f"found {report.score:g}%" in message
    assert "at least 95%" in message
    worst = report.features[0]
    assert f"[{worst.slug}]: -{worst.loss:g} points" in message
    assert worst.url in message
    assert message.index(report.features[0].slug) < message.index(report.features[1].slug)
    assert "Likely cause" in message


def test_assertion_weighs_only_the_clients_asked_for() -> None:
    report = html_compatibility(MODERN)
    with pytest.raises(MailAssertionError, match="1 email client platforms"):
        assert_html_support(report, at_least=99, clients="outlook.windows")
    assert_html_support(html_compatibility(SIMPLE), at_least=90, clients=["apple-mail"])
