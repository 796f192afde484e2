"""Links with their text: what the parser finds, what the API serves, what ``link()`` picks.

And what a test that asks for a link the message does not hold prints.
"""

from __future__ import annotations

import json
import re
import time
from email.message import EmailMessage

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from pytest_tempinbox.client.http import Inbox
from pytest_tempinbox.errors import MailAssertionError
from pytest_tempinbox.models import Link, Message
from pytest_tempinbox.parsing import html as _html
from pytest_tempinbox.parsing.message import parse_message
from pytest_tempinbox.server.inbox_server import InboxServer

from .helpers import make_message, message_json, send

LOGO = '<a href="https://app.example/"><img src="https://app.example/logo.png" alt="Example"></a>'
BUTTON = '<a href="https://app.example/confirm/abc" class="button">Confirm your email</a>'
FOOTER = '<a href="https://app.example/">Example Inc</a>'


def welcome(to: str = "user@tempinbox.test", subject: str = "Welcome to Example") -> EmailMessage:
    """A text-first welcome mail: the confirmation URL in the text, a logo and a button in HTML."""
    message = make_message(to, subject, "Confirm: https://app.example/confirm/abc\n")
    message.add_alternative(f"<p>{LOGO}</p><p>Welcome!</p><p>{BUTTON}</p>{FOOTER}", subtype="html")
    return message


WELCOME_LINKS = (
    Link("https://app.example/confirm/abc", None, "text"),
    Link("https://app.example/", "Example", "html"),
    Link("https://app.example/confirm/abc", "Confirm your email", "html"),
    Link("https://app.example/", "Example Inc", "html"),
)


def message_with(*links: Link, subject: str = "Welcome to Example") -> Message:
    """A message holding these links, as a client rebuilds it from the server's JSON."""
    return Message.from_json(links_json(*links, subject=subject))


def links_json(*links: Link, subject: str = "Welcome to Example") -> dict[str, object]:
    return message_json(
        subject=subject,
        links=list(dict.fromkeys(link.url for link in links)),
        link_details=[link.to_json() for link in links],
    )


def failure(message: Message, *args: str | None, **kwargs: str | re.Pattern[str]) -> str:
    with pytest.raises(MailAssertionError) as caught:
        message.link(*args, **kwargs)  # type: ignore[arg-type]
    return str(caught.value)


# --- extraction -----------------------------------------------------------------


def test_a_logo_and_a_button_that_share_a_url_are_two_links() -> None:
    html = LOGO + '<a href="https://app.example/">Go to Example</a>'
    assert _html.html_anchors(html) == [
        ("https://app.example/", "Example"),
        ("https://app.example/", "Go to Example"),
    ]


def test_an_anchor_without_text_takes_the_alt_text_of_its_images() -> None:
    html = (
        '<a href="https://x.test/1"><img src=a.png alt="Facebook"></a>'
        "<a href='https://x.test/2'><img alt=''><img src=b.png alt='Our logo'></a>"
        '<a href="https://x.test/3"><img src=c.png alt=Unquoted width=1></a>'
        '<a href="https://x.test/4">\n <IMG SRC=d.png ALT="Upper &amp; case"> <span></span></a>'
    )
    assert [text for _, text in _html.html_anchors(html)] == [
        "Facebook",
        "Our logo",
        "Unquoted",
        "Upper & case",
    ]


def test_an_anchor_with_text_ignores_the_alt_of_its_image() -> None:
    html = '<a href="https://x.test/"><img src=i.png alt="icon"> Download</a>'
    assert _html.html_anchors(html) == [("https://x.test/", "Download")]


def test_an_area_takes_its_alt_text() -> None:
    html = (
        '<map><area shape=rect href="https://x.test/north" alt="North &amp; East">'
        '<area href="https://x.test/south"></map>'
    )
    assert _html.html_anchors(html) == [
        ("https://x.test/north", "North & East"),
        ("https://x.test/south", None),
    ]


def test_an_anchor_with_neither_text_nor_alt_has_no_text() -> None:
    html = '<a href="https://x.test/a"></a><a href="https://x.test/b"> <img src=x.png> </a>'
    assert _html.html_anchors(html) == [("https://x.test/a", None), ("https://x.test/b", None)]


def test_tags_in_an_anchor_are_dropped_and_block_tags_part_words() -> None:
    html = (
        '<a href="https://x.test/"><table><tr><td><span>Con</span><b>firm</b></td>'
        "<td>now<br>please</td></tr></table></a>"
    )
    assert _html.html_anchors(html) == [("https://x.test/", "Confirm now please")]


def test_entities_in_an_anchor_text_are_decoded_once() -> None:
    html = '<a href="https://x.test/">Terms&nbsp;&amp;&#32;conditions &lt;b&gt;</a>'
    assert _html.html_anchors(html) == [("https://x.test/", "Terms & conditions <b>")]


def test_white_space_in_an_anchor_text_is_collapsed() -> None:
    html = '<a href="https://x.test/">\n   Confirm\t\tyour\r\n   email  \n</a>'
    assert _html.html_anchors(html) == [("https://x.test/", "Confirm your email")]


def test_hidden_content_gives_neither_links_nor_text() -> None:
    html = (
        '<!-- <a href="https://x.test/comment">c</a> --><title><a href="https://x.test/t"></title>'
        '<a href="https://x.test/">Go<!-- not this --><style>.x{color:red}</style>'
        "<script>var s = 'nor this';</script> now</a>"
        '<template><a href="https://x.test/template">t</a></template>'
    )
    assert _html.html_anchors(html) == [("https://x.test/", "Go now")]


def test_an_unclosed_anchor_ends_where_the_next_one_starts() -> None:
    html = (
        '<a href="https://x.test/outer">outer <a href="https://x.test/inner">inner</a> tail</a>'
        '<a href="https://x.test/unclosed">unclosed <a name="top">anchor</a>'
        '<a href="https://x.test/last">last <p>paragraph</p> and the rest'
    )
    assert _html.html_anchors(html) == [
        ("https://x.test/outer", "outer"),
        ("https://x.test/inner", "inner"),
        ("https://x.test/unclosed", "unclosed"),
        ("https://x.test/last", "last paragraph and the rest"),
    ]


def test_a_long_anchor_text_is_cut_to_2048_characters() -> None:
    html = '<a href="https://x.test/">' + "word " * 10_000
    [(_, text)] = _html.html_anchors(html)
    assert text is not None
    assert len(text) == 2048
    assert text.endswith("wo\u2026")


def test_a_long_url_as_the_anchor_text_is_kept_whole() -> None:
    url = "https://sso.example/realms/demo/login-actions/action-token?key=" + "x" * 900
    [(_, text)] = _html.html_anchors(f'<a href="{url}">{url}</a>')
    assert text == url


def test_an_anchor_cut_by_the_reading_window_drops_the_tag_cut_in_two() -> None:
    html = '<a href="https://x.test/">' + "<img src=x.png>" * 2000
    assert _html.html_anchors(html) == [("https://x.test/", None)]


def test_an_anchor_with_only_a_non_web_href_is_no_link_and_ends_the_one_before() -> None:
    html = '<a href="https://x.test/">Go <a href="mailto:a@x.test">mail us</a>'
    assert _html.html_anchors(html) == [("https://x.test/", "Go")]


_PLAIN_VALUES = st.sampled_from(
    [
        "https://x.test/",
        " https://x.test/a?b=1&amp;c=2 ",
        "https://x.test/wra\n  pped",
        "&#x68;ttps://x.test/entity",
        "javascript:alert(1)",
        "",
        "Logo &amp; co",
        "it's",
        "color:#fff;font-weight:bold",
    ]
)
_PLAIN_ATTRIBUTES = st.tuples(
    st.sampled_from(["href", "HREF", "alt", "style", "class", "data-href", "x:y", "_a.b"]),
    st.sampled_from([" ", "\n", "  ", "\t"]),
    st.sampled_from(["=", " = ", "\n=\n"]),
    st.sampled_from(['"', "'"]),
    _PLAIN_VALUES,
)


@given(
    st.sampled_from(["a", "A", "area", "AREA"]),
    st.lists(_PLAIN_ATTRIBUTES, max_size=5),
    st.sampled_from(["", " ", "\n"]),
)
def test_plain_tags_read_without_html_parser_as_html_parser_reads_them(
    name: str, attributes: list[tuple[str, str, str, str, str]], end: str
) -> None:
    tag = f"<{name}"
    for attribute, space, equals, quote, value in attributes:
        if quote in value:
            quote = '"' if quote == "'" else "'"
        tag += f"{space}{attribute}{equals}{quote}{value}{quote}"
    tag += end + ">"
    assert _html._PLAIN_LINK_TAG.fullmatch(tag)
    reference = _html._LinkReader()
    reference.feed(tag)  # html.parser itself
    assert _html._LinkReader().read(tag) == reference.found


@pytest.mark.parametrize(
    "markup",
    [
        "".join(f'<a href="https://x.test/{index}">' for index in range(100_000)),
        '<a href="https://x.test/">x ' * 100_000,
        "<a" * 200_000,
        '<a href="https://x.test/">' + "<b>" * 200_000,
        '<a href="https://x.test/"><img ' + "alt " * 200_000 + ">",
        "</a>" * 200_000 + '<a href="https://x.test/">x</a>',
    ],
    ids=["unique-unclosed", "same-unclosed", "lone-starts", "tags", "attributes", "end-tags"],
)
def test_hostile_html_is_read_in_linear_time(markup: str) -> None:
    started = time.perf_counter()
    anchors = _html.html_anchors(markup)
    assert time.perf_counter() - started < 5
    assert len(anchors) in (0, 1, 100_000)


def test_a_hundred_thousand_unclosed_anchors_parse_within_the_budget() -> None:
    body = "".join(f'<a href="https://x.test/{index}">' for index in range(100_000))
    raw = f"Content-Type: text/html\r\n\r\n{body}".encode()
    started = time.perf_counter()
    parsed = parse_message(raw, budget=0.5)
    # One bounded step may run past the budget; a slow machine may run it out.
    assert time.perf_counter() - started < 2
    assert parsed.links
    assert parsed.links == tuple(dict.fromkeys(link.url for link in parsed.link_details))
    assert {link.text for link in parsed.link_details} == {None}


# --- parsing --------------------------------------------------------------------


def test_link_details_of_a_text_first_mail_list_the_text_links_first() -> None:
    parsed = parse_message(welcome().as_bytes())
    assert parsed.link_details == WELCOME_LINKS
    assert parsed.links == ("https://app.example/confirm/abc", "https://app.example/")


def test_link_details_of_an_html_first_mail_list_the_html_links_first() -> None:
    raw = (
        b'Content-Type: multipart/alternative; boundary="=_b"\r\n\r\n'
        b"--=_b\r\nContent-Type: text/html\r\n\r\n"
        b'<a href="https://x.test/h">Here</a>\r\n'
        b"--=_b\r\nContent-Type: text/plain\r\n\r\n"
        b"https://x.test/t https://x.test/h\r\n"
        b"--=_b--\r\n"
    )
    parsed = parse_message(raw)
    assert parsed.link_details == (
        Link("https://x.test/h", "Here", "html"),
        Link("https://x.test/t", None, "text"),
        Link("https://x.test/h", None, "text"),
    )
    assert parsed.links == ("https://x.test/h", "https://x.test/t")


def test_a_message_without_links_has_no_link_details() -> None:
    parsed = parse_message(make_message("user@tempinbox.test").as_bytes())
    assert parsed.link_details == ()
    assert parsed.links == ()


# --- through the server -----------------------------------------------------------


def test_link_details_reach_the_client_and_link_picks_by_text(
    server: InboxServer, inbox: Inbox
) -> None:
    send(server, welcome(inbox.address))
    message = inbox.wait_for_message(subject="Welcome", timeout=10)
    assert message.link_details == WELCOME_LINKS
    assert message.link("confirm   YOUR email") == "https://app.example/confirm/abc"
    assert message.link("Example") == "https://app.example/"
    assert message.link(contains="/confirm") == "https://app.example/confirm/abc"
    assert message.link(pattern=r"/confirm/\w+$") == "https://app.example/confirm/abc"
    assert message.link(pattern=re.compile(r"EXAMPLE/$", re.I)) == "https://app.example/"


def test_the_json_serves_link_details_right_after_links(
    server: InboxServer, address: str, api: str, http: requests.Session
) -> None:
    send(server, welcome(address))
    [served] = http.get(f"{api}/messages/{address}", params={"wait": 10}).json()
    keys = list(served)
    assert keys.index("link_details") == keys.index("links") + 1
    assert served["link_details"][:2] == [
        {"url": "https://app.example/confirm/abc", "text": None, "source": "text"},
        {"url": "https://app.example/", "text": "Example", "source": "html"},
    ]


# --- link() ---------------------------------------------------------------------


def test_every_filter_given_must_hold() -> None:
    message = message_with(
        Link("https://x.test/open/1", "Open", "html"),
        Link("https://x.test/open/2", "Open", "html"),
        Link("https://x.test/close/2", "Close", "html"),
    )
    assert message.link("open", contains="/2") == "https://x.test/open/2"
    assert message.link("Open", pattern=r"1$") == "https://x.test/open/1"
    assert message.link(contains="/2", pattern="close") == "https://x.test/close/2"
    assert message.link("Close", contains="x.test", pattern="/2$") == "https://x.test/close/2"


def test_symbols_and_punctuation_around_a_button_text_do_not_matter() -> None:
    message = message_with(
        Link("https://x.test/verify", "Verify email address \u279c", "html"),
        Link("https://x.test/back", "\u00ab Back", "html"),
    )
    assert message.link("verify email address") == "https://x.test/verify"
    assert message.link("Back!") == "https://x.test/back"


def test_a_text_of_symbols_alone_is_compared_as_it_is() -> None:
    message = message_with(
        Link("https://x.test/next", "\u2192", "html"), Link("https://x.test/x", "x", "html")
    )
    assert message.link("\u2192") == "https://x.test/next"


def test_anchors_sharing_a_url_count_as_one() -> None:
    message = message_with(*WELCOME_LINKS)
    assert message.link(contains="/confirm/") == "https://app.example/confirm/abc"


def test_link_without_filters_is_the_only_url() -> None:
    message = message_with(
        Link("https://x.test/", "Logo", "html"), Link("https://x.test/", None, "text")
    )
    assert message.link() == "https://x.test/"


def test_a_url_written_in_text_has_no_text_to_match() -> None:
    message = message_with(Link("https://x.test/", None, "text"))
    assert failure(message, "https://x.test/") == (
        "no link with text 'https://x.test/' in message 'Welcome to Example'"
        " from app@example.com; its 1 link:\n"
        "  - (text) https://x.test/\n"
        "URLs written in the text body have no text: use contains= or pattern=."
    )


def test_no_matching_link_lists_every_link_and_a_close_text() -> None:
    message = message_with(*WELCOME_LINKS)
    assert failure(message, "Confirm") == (
        "no link with text 'Confirm' in message 'Welcome to Example' from app@example.com;"
        " its 4 links:\n"
        "  - (text) https://app.example/confirm/abc\n"
        "  - 'Example' (html) https://app.example/\n"
        "  - 'Confirm your email' (html) https://app.example/confirm/abc\n"
        "  - 'Example Inc' (html) https://app.example/\n"
        "Did you mean 'Confirm your email'?"
    )


def test_a_misspelt_text_suggests_the_closest() -> None:
    message = message_with(Link("https://x.test/u", "Unsubscribe", "html"))
    assert failure(message, "Unsubscirbe").endswith("\nDid you mean 'Unsubscribe'?")


def test_several_urls_are_listed_once_each_with_their_text() -> None:
    message = message_with(
        Link("https://x.test/a", None, "text"),
        Link("https://x.test/a", "Open", "html"),
        Link("https://x.test/b", "Open", "html"),
        Link("https://x.test/b", "open", "html"),
    )
    assert failure(message, contains="x.test") == (
        "2 links with URL containing 'x.test' in message 'Welcome to Example'"
        " from app@example.com; expected one:\n"
        "  - 'Open' (text, html) https://x.test/a\n"
        "  - 'Open' (html) https://x.test/b\n"
        "Narrow it down with text= or pattern=."
    )


def test_several_urls_are_listed_with_every_anchor_text_of_each() -> None:
    # The logo's alt text and the button's words: the button's are what a test looks for.
    message = message_with(
        Link("https://x.test/confirm", "Example", "html"),
        Link("https://x.test/confirm", "Confirm your email", "html"),
        Link("https://x.test/confirm", "or click here", "html"),
        Link("https://x.test/help", "Help", "html"),
    )
    assert failure(message, contains="x.test").splitlines()[1:3] == [
        "  - 'Example', 'Confirm your email', 'or click here' (html) https://x.test/confirm",
        "  - 'Help' (html) https://x.test/help",
    ]


def test_a_url_written_only_in_the_text_body_is_listed_without_a_text() -> None:
    message = message_with(
        Link("https://x.test/a", None, "text"), Link("https://x.test/b", None, "text")
    )
    assert failure(message, contains="x.test").splitlines()[1:3] == [
        "  - (text) https://x.test/a",
        "  - (text) https://x.test/b",
    ]


def test_with_several_filters_the_failure_counts_what_each_passes() -> None:
    message = message_with(*WELCOME_LINKS)
    text = failure(message, "Confirm your email", contains="/reset", pattern=r"\d")
    assert text.startswith(
        "no link with text 'Confirm your email', URL containing '/reset' and URL matching '\\\\d'"
        " in message 'Welcome to Example' from app@example.com; its 4 links:\n"
    )
    assert "Did you mean" not in text
    assert text.endswith(
        "\nLinks passing each filter alone: text 'Confirm your email': 1;"
        " URL containing '/reset': 0; URL matching '\\\\d': 0."
    )


def test_a_url_in_another_case_is_pointed_out() -> None:
    message = message_with(Link("https://x.test/Reset/1", "Reset", "html"))
    assert failure(message, contains="/reset/").endswith(
        "\nURLs are compared case-sensitively; this one holds it in another case:"
        " https://x.test/Reset/1"
    )


def test_a_message_without_links_says_so() -> None:
    assert failure(message_with(), "Confirm") == (
        "no link with text 'Confirm' in message 'Welcome to Example' from app@example.com:"
        " it has no links at all."
    )


def test_the_listing_is_capped_and_long_urls_and_texts_are_cut() -> None:
    long = Link("https://x.test/" + "p" * 300, "t" * 300, "html")
    message = message_with(long, *(Link(f"https://x.test/{n}", None, "text") for n in range(40)))
    lines = failure(message, "Nothing").splitlines()
    assert lines[1] == f"  - {'t' * 57 + '...'!r} (html) https://x.test/{'p' * 82}..."
    assert lines[30] == "  - (text) https://x.test/28"
    assert lines[31] == "  ... and 11 more"
    assert len(lines) == 32
    assert max(len(line) for line in lines) < 200


def test_a_message_from_an_older_server_still_has_its_links_picked() -> None:
    data = links_json(Link("https://x.test/", "Go", "html"))
    del data["link_details"]
    message = Message.from_json(data)
    assert message.link(contains="x.test") == "https://x.test/"


def test_a_failed_link_is_an_assertion_error() -> None:
    with pytest.raises(AssertionError, match="no link with text 'Nope'"):
        message_with(*WELCOME_LINKS).link("Nope")


# --- what a failing test prints ---------------------------------------------------


def test_a_test_asking_for_a_missing_link_fails_listing_every_link(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import smtplib
        from email.message import EmailMessage

        def test_confirm(tempinbox, tempinbox_server):
            mail = EmailMessage()
            mail["From"] = "app@example.com"
            mail["To"] = tempinbox.address
            mail["Subject"] = "Welcome to Example"
            mail.set_content("Confirm: https://app.example/confirm/abc")
            mail.add_alternative(
                '<a href="https://app.example/"><img alt="Example" src="logo.png"></a>'
                '<a href="https://app.example/confirm/abc">Confirm your email</a>',
                subtype="html",
            )
            host, port = tempinbox_server.smtp_host, tempinbox_server.smtp_port
            with smtplib.SMTP(host, port, local_hostname="client.test") as smtp:
                smtp.send_message(mail)
            message = tempinbox.wait_for_message(subject="Welcome", timeout=10)
            message.link("Confirm")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    def test_confirm(tempinbox, tempinbox_server):",
            '>       message.link("Confirm")',
            "E       pytest_tempinbox.errors.MailAssertionError: no link with text 'Confirm'"
            " in message 'Welcome to Example' from app@example.com; its 3 links:",
            "E         - (text) https://app.example/confirm/abc",
            "E         - 'Example' (html) https://app.example/",
            "E         - 'Confirm your email' (html) https://app.example/confirm/abc",
            "E       Did you mean 'Confirm your email'?",
            "test_*.py:*: MailAssertionError",
            "FAILED test_*.py::test_confirm*",
        ]
    )
    result.stdout.no_fnmatch_line("*_links.py*")  # the picking's own frames are hidden


def test_tests_asking_for_ambiguous_or_absent_links_fail_with_what_there_is(
    pytester: pytest.Pytester,
) -> None:
    several = links_json(
        Link("https://x.test/a", "Open", "html"), Link("https://x.test/b", "Open", "html")
    )
    empty = links_json(subject="Your receipt")
    pytester.makepyfile(
        f"""
        import json
        from pytest_tempinbox import Message

        def test_several():
            Message.from_json(json.loads({json.dumps(several)!r})).link("Open")

        def test_none():
            Message.from_json(json.loads({json.dumps(empty)!r})).link(contains="/confirm")
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E       pytest_tempinbox.errors.MailAssertionError: 2 links with text 'Open'"
            " in message 'Welcome to Example' from app@example.com; expected one:",
            "E         - 'Open' (html) https://x.test/a",
            "E         - 'Open' (html) https://x.test/b",
            "E       Narrow it down with contains= or pattern=.",
            "E       pytest_tempinbox.errors.MailAssertionError: no link with URL containing"
            " '/confirm' in message 'Your receipt' from app@example.com:"
            " it has no links at all.",
        ]
    )
