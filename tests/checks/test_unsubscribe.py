"""The unsubscribe headers read: RFC 2369 targets, RFC 8058 one-click, DKIM coverage."""

from __future__ import annotations

import json
from email.message import EmailMessage
from pathlib import Path

import pytest

from pytest_tempinbox.checks.unsubscribe import (
    ONE_CLICK,
    Unsubscribe,
    dkim_signed_headers,
    parse_unsubscribe,
    unsubscribe_link,
)
from pytest_tempinbox.errors import MailAssertionError
from pytest_tempinbox.parsing.message import parse_message

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "parsing"
HTTPS = "https://example.com/unsubscribe?u=42"
MAILTO = "mailto:unsubscribe@example.com?subject=unsubscribe"


def headers(raw_headers: str) -> dict[str, tuple[str, ...]]:
    """The decoded header map the parser gives for a message with these header lines."""
    raw = raw_headers.strip("\n").replace("\n", "\r\n") + "\r\n\r\nHello.\r\n"
    return parse_message(raw.encode()).headers


def parsed(raw_headers: str) -> Unsubscribe:
    unsubscribe = parse_unsubscribe(headers(raw_headers))
    assert unsubscribe is not None
    return unsubscribe


def test_valid_one_click_headers_give_the_https_link() -> None:
    unsubscribe = parsed(f"""
List-Unsubscribe: <{MAILTO}>, <{HTTPS}>
List-Unsubscribe-Post: List-Unsubscribe=One-Click
""")
    assert (unsubscribe.http, unsubscribe.mailto) == ((HTTPS,), (MAILTO,))
    assert unsubscribe.one_click
    assert unsubscribe.problems == ()
    assert unsubscribe.dkim_covers is None
    assert unsubscribe_link(unsubscribe, one_click=True) == HTTPS


def test_a_message_built_by_an_application_is_read_alike() -> None:
    message = EmailMessage()
    message["From"] = "news@example.com"
    message["To"] = "reader@example.com"
    message["List-Unsubscribe"] = f"<{HTTPS}>"
    message["List-Unsubscribe-Post"] = ONE_CLICK
    message.set_content("Our news.")
    unsubscribe = parse_unsubscribe(parse_message(message.as_bytes()).headers)
    assert unsubscribe is not None
    assert unsubscribe_link(unsubscribe, one_click=True) == HTTPS


def test_mailto_only_has_no_link() -> None:
    unsubscribe = parsed(f"List-Unsubscribe: <{MAILTO}>")
    assert (unsubscribe.http, unsubscribe.mailto, unsubscribe.one_click) == ((), (MAILTO,), False)
    assert unsubscribe.problems == ()
    with pytest.raises(MailAssertionError, match="expected an http\\(s\\) link") as caught:
        unsubscribe_link(unsubscribe)
    assert MAILTO in str(caught.value)


def test_a_plain_http_link_is_given_but_is_not_one_click() -> None:
    unsubscribe = parsed("""
List-Unsubscribe: <http://example.com/unsubscribe>
List-Unsubscribe-Post: List-Unsubscribe=One-Click
""")
    assert unsubscribe_link(unsubscribe) == "http://example.com/unsubscribe"
    assert not unsubscribe.one_click
    assert any("is not HTTPS" in problem for problem in unsubscribe.problems)
    assert any("no https URL to POST to" in problem for problem in unsubscribe.problems)
    with pytest.raises(MailAssertionError, match="an https URL in List-Unsubscribe"):
        unsubscribe_link(unsubscribe, one_click=True)


def test_https_is_preferred_over_http_whatever_the_order() -> None:
    unsubscribe = parsed(f"List-Unsubscribe: <http://example.com/u>, <{HTTPS}>")
    assert unsubscribe_link(unsubscribe) == HTTPS


def test_a_folded_header_with_several_uris_and_comments_is_read() -> None:
    unsubscribe = parsed(f"""
List-Unsubscribe: (Use this command to get off the list)
 <{MAILTO}>,
\t<https://example.com/unsubscribe/
 a-very-long-token> (or this (nested) page),
 <https://example.org/other>
""")
    assert unsubscribe.mailto == (MAILTO,)
    assert unsubscribe.http == (
        "https://example.com/unsubscribe/a-very-long-token",
        "https://example.org/other",
    )
    assert unsubscribe.problems == ()


def test_garbage_is_no_link_and_says_why() -> None:
    unsubscribe = parsed("List-Unsubscribe: click https://example.com/u to unsubscribe")
    assert (unsubscribe.http, unsubscribe.mailto) == ((), ())
    assert unsubscribe.problems == (
        "'click https://example.com/u to unsubscribe' is not in angle brackets; "
        "RFC 2369 counts only <...> entries",
        "List-Unsubscribe has no usable http(s) or mailto entry",
    )
    with pytest.raises(MailAssertionError, match="not in angle brackets"):
        unsubscribe_link(unsubscribe)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("<https://example.com/u", "opens '<' without a closing '>'"),
        ("<>", "an empty <> entry"),
        ("<ftp://example.com/u>", "has the scheme 'ftp', not http(s) or mailto"),
        ("<example.com/u>", "is not a URI: it has no scheme"),
        ("<https:///u>", "has no host"),
        ("<mailto:?subject=x>", "names no address"),
        ("<https://example.com/u> (unclosed", "without a closing ')'"),
    ],
)
def test_malformed_entries_are_told(value: str, problem: str) -> None:
    unsubscribe = parsed(f"List-Unsubscribe: {value}")
    assert any(problem in found for found in unsubscribe.problems), unsubscribe.problems


def test_a_wrong_post_value_is_not_one_click() -> None:
    unsubscribe = parsed(f"""
List-Unsubscribe: <{HTTPS}>
List-Unsubscribe-Post: List-Unsubscribe=one-click
""")
    assert not unsubscribe.one_click
    assert unsubscribe.post == "List-Unsubscribe=one-click"
    assert unsubscribe.problems == (
        "List-Unsubscribe-Post is 'List-Unsubscribe=one-click'; "
        "RFC 8058 allows only 'List-Unsubscribe=One-Click'",
    )
    assert unsubscribe_link(unsubscribe) == HTTPS
    with pytest.raises(MailAssertionError, match="found 'List-Unsubscribe=one-click'"):
        unsubscribe_link(unsubscribe, one_click=True)


def test_without_the_post_header_one_click_fails_saying_so() -> None:
    unsubscribe = parsed(f"List-Unsubscribe: <{HTTPS}>")
    assert not unsubscribe.one_click
    assert unsubscribe.problems == ()
    with pytest.raises(MailAssertionError) as caught:
        unsubscribe_link(unsubscribe, one_click=True)
    assert "List-Unsubscribe-Post: List-Unsubscribe=One-Click header (the message has none)" in str(
        caught.value
    )


def test_repeated_headers_are_problems() -> None:
    unsubscribe = parsed(f"""
List-Unsubscribe: <{HTTPS}>
List-Unsubscribe: <{MAILTO}>
List-Unsubscribe-Post: List-Unsubscribe=One-Click
List-Unsubscribe-Post: List-Unsubscribe=One-Click
""")
    assert (unsubscribe.http, unsubscribe.mailto) == ((HTTPS,), (MAILTO,))
    assert "2 List-Unsubscribe headers; RFC 2369 allows one" in unsubscribe.problems
    assert "2 List-Unsubscribe-Post headers; RFC 8058 allows one" in unsubscribe.problems
    assert not unsubscribe.one_click
    with pytest.raises(MailAssertionError, match="a single List-Unsubscribe-Post header"):
        unsubscribe_link(unsubscribe, one_click=True)


def test_a_post_header_alone_is_a_problem() -> None:
    unsubscribe = parsed(f"List-Unsubscribe-Post: {ONE_CLICK}")
    assert "List-Unsubscribe-Post without a List-Unsubscribe header" in unsubscribe.problems
    with pytest.raises(MailAssertionError, match="found no usable entry"):
        unsubscribe_link(unsubscribe)


def test_no_header_is_none_and_the_link_fails_saying_so() -> None:
    assert parse_unsubscribe(headers("Subject: hi")) is None
    with pytest.raises(MailAssertionError, match="the message has none"):
        unsubscribe_link(None)


ONE_CLICK_HEADERS = f"""
List-Unsubscribe: <{HTTPS}>
List-Unsubscribe-Post: {ONE_CLICK}
"""


def test_a_dkim_signature_covering_both_headers_allows_one_click() -> None:
    unsubscribe = parsed(
        ONE_CLICK_HEADERS
        + "DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=sel;\n"
        + " h=From:To:Subject:list-unsubscribe:\n  LIST-UNSUBSCRIBE-POST; bh=abc=; b=def="
    )
    assert unsubscribe.dkim_covers is True
    assert unsubscribe.one_click
    assert unsubscribe_link(unsubscribe, one_click=True) == HTTPS


def test_a_dkim_signature_leaving_a_header_out_fails_one_click() -> None:
    unsubscribe = parsed(
        ONE_CLICK_HEADERS
        + "DKIM-Signature: v=1; d=example.com; s=sel; h=From:List-Unsubscribe; b=x"
    )
    assert unsubscribe.dkim_covers is False
    assert not unsubscribe.one_click
    assert unsubscribe.problems == (
        "the message is DKIM-signed, but no signature's h= covers both List-Unsubscribe and "
        "List-Unsubscribe-Post (the signature of d=example.com leaves out "
        "list-unsubscribe-post); RFC 8058 needs both signed",
    )
    assert unsubscribe_link(unsubscribe) == HTTPS
    with pytest.raises(MailAssertionError, match="a DKIM signature covering List-Unsubscribe"):
        unsubscribe_link(unsubscribe, one_click=True)


def test_one_of_several_dkim_signatures_covering_both_is_enough() -> None:
    unsubscribe = parsed(
        ONE_CLICK_HEADERS
        + "DKIM-Signature: v=1; d=esp.example; h=From:To; b=x\n"
        + "DKIM-Signature: v=1; d=example.com; h=From:List-Unsubscribe:List-Unsubscribe-Post; b=y"
    )
    assert unsubscribe.dkim_covers is True
    assert unsubscribe.one_click


def test_signed_headers_are_read_from_the_h_tag() -> None:
    signature = "v=1; d=x.test;\th = From : To:\r\n Subject ; bh=h=notthis; b=abc"
    assert dkim_signed_headers(signature) == ("from", "to", "subject")
    assert dkim_signed_headers("v=1; d=x.test; b=abc") == ()


def test_header_names_are_matched_in_any_case() -> None:
    unsubscribe = parse_unsubscribe(
        {"List-Unsubscribe": (f"<{HTTPS}>",), "LIST-UNSUBSCRIBE-POST": (ONE_CLICK,)}
    )
    assert unsubscribe is not None
    assert unsubscribe.one_click


def test_the_result_survives_its_json_form() -> None:
    unsubscribe = parsed(f"""
List-Unsubscribe: <http://example.com/u>, <{MAILTO}>
List-Unsubscribe-Post: nonsense
DKIM-Signature: v=1; d=example.com; h=From; b=x
""")
    data = json.loads(json.dumps(unsubscribe.to_json()))
    assert data == {
        "http": ["http://example.com/u"],
        "mailto": [MAILTO],
        "one_click": False,
        "post": "nonsense",
        "dkim_covers": False,
        "problems": list(unsubscribe.problems),
    }
    assert Unsubscribe.from_json(data) == unsubscribe


def corpus_unsubscribe(name: str) -> Unsubscribe:
    unsubscribe = parse_unsubscribe(parse_message((CORPUS / name).read_bytes()).headers)
    assert unsubscribe is not None
    return unsubscribe


def test_a_real_mailman_list_offers_http_and_mailto() -> None:
    unsubscribe = corpus_unsubscribe("flufl.bounce/simple_04.txt")
    assert unsubscribe.http == ("http://mail.python.org/mailman/listinfo/mailman-users",)
    assert unsubscribe.mailto == ("mailto:mailman-users-request@python.org?subject=unsubscribe",)
    assert not unsubscribe.one_click
    assert unsubscribe_link(unsubscribe) == unsubscribe.http[0]


def test_a_real_mailchimp_campaign_signed_without_the_post_header_is_not_one_click() -> None:
    # Mailchimp in 2018 offered one-click, but its DKIM h= did not yet sign List-Unsubscribe-Post.
    unsubscribe = corpus_unsubscribe("mail-parser/mail_test_13")
    assert unsubscribe.post == ONE_CLICK
    assert unsubscribe.https[0].startswith("https://cimanagementconference.us14.list-manage.com/")
    assert unsubscribe.dkim_covers is False
    assert not unsubscribe.one_click
    assert unsubscribe_link(unsubscribe) == unsubscribe.https[0]
    with pytest.raises(MailAssertionError, match="DKIM signature covering"):
        unsubscribe_link(unsubscribe, one_click=True)


def test_a_real_signed_newsletter_without_one_click_has_no_problem() -> None:
    unsubscribe = corpus_unsubscribe("mail-parser/mail_test_6")
    assert unsubscribe.https
    assert unsubscribe.post is None
    assert unsubscribe.dkim_covers is False  # List-Unsubscribe is signed, the Post header is absent
    assert unsubscribe.problems == ()
