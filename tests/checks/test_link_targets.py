"""What a link check requests: the message's links, then the images its HTML loads."""

from __future__ import annotations

from pytest_tempinbox.checks.link_targets import image_sources, link_targets


def test_images_are_found_in_every_place_a_mail_program_loads_them_from() -> None:
    page = """
    <style>.hero { background: url('https://cdn.test/hero.jpg') }</style>
    <table background="https://cdn.test/bg.png"><tr><td style="background-image:url(https://cdn.test/cell.png)">
    <img src="https://cdn.test/logo.png"
      srcset="https://cdn.test/logo@2x.png 2x, https://cdn.test/logo@3x.png 3x">
    <img src="cid:logo@shop.test"><img src="data:image/png;base64,AAAA"><img src="/relative.png">
    <img src="https://cdn.test/logo.png">
    """
    assert image_sources(page) == [
        "https://cdn.test/hero.jpg",
        "https://cdn.test/bg.png",
        "https://cdn.test/cell.png",
        "https://cdn.test/logo.png",
        "https://cdn.test/logo@2x.png",
        "https://cdn.test/logo@3x.png",
    ]


def test_links_come_first_and_each_target_once() -> None:
    page = '<a href="https://app.test/x"><img src="https://cdn.test/b.png"></a>'
    assert link_targets(["https://app.test/x", "https://app.test/y"], page) == [
        "https://app.test/x",
        "https://app.test/y",
        "https://cdn.test/b.png",
    ]
    assert link_targets(["https://app.test/x"], None) == ["https://app.test/x"]


def test_broken_html_gives_what_could_be_read() -> None:
    assert image_sources('<img src="https://cdn.test/a.png"<<<><img src=') == [
        "https://cdn.test/a.png"
    ]
