"""One-time codes: which words are codes, in what order, and the one ``code()`` returns.

And what a test that asks for a code the message does not make clear prints.
"""

from __future__ import annotations

import re
import time
from email.message import EmailMessage

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tempinbox.errors import MailAssertionError
from pytest_tempinbox.models import Message
from pytest_tempinbox.parsing.codes import Candidate, find_codes, rank_codes
from pytest_tempinbox.parsing.message import parse_message

from ..helpers import message_json


def ranked(body: str, subject: str = "", html: str | None = None) -> list[Candidate]:
    return rank_codes(subject, body, html)


def why(body: str, code: str, subject: str = "", html: str | None = None) -> str:
    """The reasons given for ``code`` in ``body``, or why it was left out."""
    found = {item.code: item for item in ranked(body, subject, html)}
    assert code in found, f"{code!r} is not even a candidate in {body!r}"
    return found[code].why()


def message(subject: str = "Hello", text: str | None = None, html: str | None = None) -> Message:
    """A message as a client rebuilds it from the server's JSON."""
    return Message.from_json(message_json(subject=subject, text=text, html=html))


def failure(item: Message, pattern: str | re.Pattern[str] | None = None) -> str:
    with pytest.raises(MailAssertionError) as caught:
        item.code(pattern)
    return str(caught.value)


# --- what is a candidate --------------------------------------------------------


def test_a_code_written_right_after_chinese_or_japanese_text_is_found() -> None:
    # "\uff0c" is a full-width comma.
    assert find_codes("", "您的验证码是123456\uff0c请勿泄露") == ["123456"]


def test_digit_groups_next_to_a_code_word_are_one_code_as_written() -> None:
    assert find_codes("", "Your code: 123 456") == ["123 456"]


@pytest.mark.parametrize("code", ["123-456", "1234-5678", "ABCD-EFGH", "AB12-CD34-EF56"])
def test_dashed_groups_next_to_a_code_word_are_one_code_as_written(code: str) -> None:
    assert find_codes("", f"Your device code is {code}.") == [code]


def test_grouped_codes_count_when_alone_on_their_line() -> None:
    assert find_codes("", "Enter it below:\n\n    482 913\n") == ["482 913"]


def test_digit_groups_that_nothing_calls_a_code_are_no_code() -> None:
    assert find_codes("", "See you at 123 456 and ABCD-EFGH") == []


def test_a_digit_word_in_a_run_of_short_digit_groups_is_no_code() -> None:
    assert why("dial +49 30 12345678 today", "12345678") == "part of a longer number"


def test_words_of_the_same_length_separated_by_spaces_are_each_a_code() -> None:
    assert find_codes("", "000001 000002 000003") == ["000001", "000002", "000003"]


# --- what counts for a code -------------------------------------------------------


def test_a_code_word_before_the_code_counts() -> None:
    assert why("Your code is 482913", "482913") == 'next to "code"'


def test_a_code_word_after_the_code_in_its_sentence_counts() -> None:
    assert why("482913 is your Example verification code.", "482913") == ('next to "verification"')


def test_a_code_word_on_the_line_before_counts_when_the_code_starts_its_line() -> None:
    assert why("Your one-time code:\n\n   482913\n\nThanks", "482913") == (
        'next to "code", alone on its line'
    )


def test_the_line_before_does_not_reach_a_number_inside_a_line() -> None:
    text = "Category: One Time Password\n\nThis mail was sent to user 48291377."
    assert why(text, "48291377") == "nothing around it says code"


def test_a_code_word_in_another_sentence_does_not_count() -> None:
    assert why("We sent you a code. Room 4821 is booked.", "4821") == (
        "nothing around it says code"
    )


def test_a_code_alone_on_its_line_counts() -> None:
    assert why("Hello,\n\n**482913**\n", "482913") == "alone on its line"


@pytest.mark.parametrize(
    ("html", "shown"),
    [
        ("<strong>482913</strong>", "<strong>"),
        ("<b> 482913 </b>", "<b>"),
        ("<h2>482913</h2>", "<h2>"),
        ("<code>482913</code>", "<code>"),
        ("<kbd>482913</kbd>", "<kbd>"),
        ('<td style="font-size: 32px">482913</td>', "font-size 32px"),
        ('<div style="font-size:2em">482913</div>', "font-size 2em"),
        ('<span style="letter-spacing: 6px">482913</span>', "letter-spaced"),
        ("<p style=\"font-family: 'Courier New', monospace\">482913</p>", "monospace"),
        ('<span style="font-weight:700">482913</span>', "bold"),
        ('<div class="otp-code">482913</div>', "class"),
        ('<td style="font-size:28px"><span>482913</span></td>', "font-size 28px"),
    ],
)
def test_the_whole_text_of_an_element_that_stands_out_counts(html: str, shown: str) -> None:
    assert why("Hello, your number: 482913 for now", "482913", html=f"<p>x</p>{html}") == (
        f"emphasised ({shown})"
    )


@pytest.mark.parametrize(
    "html",
    [
        '<p style="font-size:14px">482913</p>',
        "<span>482913</span>",
        "<p>Use <em>482913</em></p>",
        "<p><b>Code:</b> 482913</p>",
        "<p>482913 <b>now</b></p>",
    ],
)
def test_an_element_that_does_not_stand_out_adds_nothing(html: str) -> None:
    assert why("Hello, your number: 482913 for now", "482913", html=html) == (
        "nothing around it says code"
    )


def test_a_code_next_to_a_code_word_in_the_subject_counts_once_more() -> None:
    assert why("Your code is 482913", "482913", subject="482913 is your code") == (
        'next to "code", in the subject'
    )


def test_the_evidence_of_every_occurrence_adds_up() -> None:
    text = "Your code is 482913.\n\n482913\n"
    assert why(text, "482913") == 'next to "code", alone on its line'


def test_codes_are_ordered_by_score_then_by_first_appearance() -> None:
    text = "Ref A1B2C3D4 and 77777777 first.\nYour code:\n\n482913\n\nor 991234 with code"
    assert find_codes("", text) == ["482913", "991234", "77777777"]


def test_the_subject_comes_first_among_equals() -> None:
    assert find_codes("subject has 111111", "body has 222222") == ["111111", "222222"]


# --- what is not a code -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "number", "reason"),
    [
        ("Since 2019 we have served you.", "2019", "a year"),
        ("© 2026 Example Inc.", "2026", "a year"),
        ("Sent on Nov 22, 2026 by us", "2026", "a date"),
        ("2026年11月22日に送信", "2026", "a date or a time"),
        ("Total: 1234", "1234", 'an amount, after "Total"'),
        ("It costs $ 4821 today", "4821", "an amount"),
        ("It costs EUR 4821 today", "4821", "an amount"),
        ("It is 4821 EUR today", "4821", "an amount (eur)"),
        ("Gesamtbetrag 4821 €", "4821", 'an amount, after "Gesamtbetrag"'),
        ("It grew by 4821%", "4821", "an amount"),
        ("Call us at 5551234", "5551234", 'a phone number, after "Call"'),
        ("Tel. 0301234567", "0301234567"[:8], ""),
        ("1 Main Street, Springfield, IL 62704", "62704", "a postal code"),
        ("Musterstraße 1\n10115 Berlin", "10115", "a postal code"),
        ("ул. Тверская, д. 7, 125009 Москва", "125009", 'a postal code, after "ул"'),
        ("Example SA · 75001 Paris · France", "75001", "a postal code"),
        ("ZIP code: 94107", "94107", 'a postal code, after "ZIP code"'),
        ("1600 Main Street, Springfield", "1600", 'a street number, before "Street"'),
        ("from the IP 2001:db8::1", "2001", "an IP address"),
        ("Date: Thu, 14 Nov 2026 10:22:01 -0500", "0500", "a time zone offset"),
        ("Sent: 14 Nov 2026 10:22 +0400", "0400", "a time zone offset"),
        ("at 10:22 (GMT+0100)", "0100", "a time zone offset"),
        ("It expires in 1440 minutes.", "1440", "a duration (minutes)"),
        ("Der Link gilt 4800 Stunden.", "4800", "a duration (stunden)"),
        ("有效期10000分钟", "10000", "a date or a time"),
        ("You have 1000 attempts left.", "1000", "a count (attempts)"),
        ("Order #77810", "77810", 'after "Order"'),
        ("Issue #4821 was closed", "4821", 'after "Issue"'),
        ("See #A1B2C3", "A1B2C3", 'after "#"'),
        ("Your order number is 77810123.", "77810123", 'after "order"'),
        ("Invoice: INV42XYZ", "INV42XYZ", 'after "Invoice"'),
        ("Reference ABC12345", "ABC12345", 'after "Reference"'),
        ("Ticket 48213", "48213", 'after "Ticket"'),
        ("Account number: 12345678", "12345678", 'after "Account number"'),
        ("Customer no. 12345678", "12345678", 'after "Customer"'),
        ("Your user ID: 12345678", "12345678", 'after "ID"'),
        ("Use promo code SAVE2024 at checkout", "SAVE2024", 'a coupon, after "promo code"'),
    ],
)
def test_numbers_of_another_kind_are_left_out_with_the_reason(
    text: str, number: str, reason: str
) -> None:
    if not reason:  # digit groups and phone numbers that are not even candidates
        assert find_codes("", text) == []
        return
    assert why(text, number) == reason
    assert find_codes("", text) == []


def test_a_year_next_to_a_code_word_is_a_code() -> None:
    assert find_codes("", "Your PIN: 1987") == ["1987"]


def test_a_label_names_only_the_first_number_after_it() -> None:
    assert find_codes("", "Order 12345678, code 482913") == ["482913"]


def test_an_account_mentioned_in_passing_is_no_label() -> None:
    assert find_codes("", "Use this code to sign in to your account: 482913") == ["482913"]


def test_a_word_is_left_out_only_when_every_occurrence_of_it_is() -> None:
    assert find_codes("", "Order 48213 is ready.\nYour code: 48213") == ["48213"]


# --- languages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Your verification code is 482913",
        "Your one-time passcode: 482913",
        "Ihr Bestätigungscode lautet 482913",
        "Ihre TAN: 482913",
        "Votre code de vérification est 482913",
        "Tu código de verificación es 482913",
        "Seu código de verificação é 482913",
        "Il tuo codice di verifica è 482913",
        "Uw verificatiecode is 482913",
        "Twój kod weryfikacyjny to 482913",
        "Ваш код подтверждения: 482913",
        "您的验证码是 482913",
        "認証コードは 482913 です",
        "인증번호 482913",
    ],
)
def test_code_words_are_known_in_many_languages(text: str) -> None:
    assert why(text, "482913").startswith("next to ")


@pytest.mark.parametrize(
    "text",
    [
        "Your order number is 48213001",
        "Ihre Bestellnummer lautet 48213001",
        "Rechnung Nr. 48213001",
        "Numéro de commande : 48213001",
        "Número de pedido: 48213001",
        "Número da encomenda: 48213001",
        "Numero d'ordine 48213001",
        "Bestelnummer 48213001",
        "Numer zamówienia: 48213001",
        "Номер заказа: 48213001",
        "订单号\uff1a48213001",  # a full-width colon
        "注文番号\uff1a48213001",
    ],
)
def test_order_labels_are_known_in_many_languages(text: str) -> None:
    assert why(text, "48213001").startswith("after ")


@pytest.mark.parametrize(
    "text",
    [
        "The link expires in 1440 minutes",
        "Der Link ist 1440 Minuten gültig",
        "Le lien expire dans 1440 minutes",
        "El enlace caduca en 1440 minutos",
        "O link expira em 1440 minutos",
        "Il link scade tra 1440 minuti",
        "De link verloopt over 1440 minuten",
        "Link wygaśnie za 1440 minut",
        "Ссылка действует 1440 минут",
        "链接在1440分钟后过期",
        "リンクは1440分で期限切れになります",
    ],
)
def test_durations_are_known_in_many_languages(text: str) -> None:
    assert find_codes("", text) == []


# --- robustness ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.sampled_from("0123456789ABCDEFGH abcdef-:#$./\n<>=\"'\u3002验证码Code ")),
    st.text(st.sampled_from("<>/bstrong style=font-size:32px 123456ABC\"'")),
)
def test_ranking_never_raises_and_lists_each_word_once(text: str, html: str) -> None:
    codes = find_codes(text[:20], text, html)
    assert len(set(codes)) == len(codes)


def test_ranking_a_mebibyte_of_candidates_stops_at_its_deadline() -> None:
    text = "Order 12345678 code 482913 © 2026\n" * (1 << 15)
    started = time.monotonic()
    rank_codes("", text, "<b>482913</b>" * (1 << 14), deadline=started + 0.05)
    assert time.monotonic() - started < 2


def test_parsed_codes_are_ranked() -> None:
    mail = EmailMessage()
    mail["Subject"] = "Welcome"
    mail.set_content("Order 7781 of 2026.\nUse 12345678 later.\nYour code:\n\n482913\n")
    assert parse_message(mail.as_bytes()).codes == ("482913", "12345678")


# --- the one code -------------------------------------------------------------------------


def test_code_returns_the_single_most_likely_code() -> None:
    text = "Order 7781. Backup 12345678.\nYour code:\n\n482913\n"
    assert message(text=text).code() == "482913"


def test_code_reads_the_html_visible_text_when_there_is_no_text_part() -> None:
    html = "<p>Your code:</p><p style='font-size:32px'>482913</p><p>Ref 7781</p>"
    assert message(html=html).code() == "482913"


def test_code_agrees_with_codes() -> None:
    mail = EmailMessage()
    mail["Subject"] = "Your code"
    mail.set_content("Use 12345678 later.\nYour code:\n\n482913\n")
    parsed = parse_message(mail.as_bytes())
    item = message(subject=parsed.subject, text=parsed.text, html=parsed.html)
    assert item.code() == parsed.codes[0]


def test_code_fails_when_no_word_looks_like_a_code() -> None:
    assert failure(message("Your receipt", "Thanks for shopping!")) == (
        "no one-time code in message 'Your receipt' from app@example.com: no word in it"
        " looks like a code (4-8 digits, 6-10 capitals and digits, or 6-10 mixed-case"
        " letters and digits)."
    )


def test_code_fails_naming_the_numbers_it_left_out() -> None:
    assert failure(message("Your receipt", "Order 7781\n© 2026 Shop")) == (
        "no one-time code in message 'Your receipt' from app@example.com: the words that"
        " look like codes (4-8 digits, 6-10 capitals and digits, or 6-10 mixed-case letters"
        " and digits) are not:"
        " '7781' (after \"Order\"), '2026' (a year)."
    )


def test_code_fails_when_nothing_says_which_word_is_a_code() -> None:
    assert failure(message("Hello", "Use 12345678 or X7Y8Z9W0 today")) == (
        "no one-time code in message 'Hello' from app@example.com: 2 words look like codes"
        " ('12345678', 'X7Y8Z9W0'), but none is next to a word such as \"code\", alone on its"
        " line or emphasised; pass pattern=... to pick one."
    )


def test_code_fails_on_a_lone_word_that_nothing_calls_a_code() -> None:
    assert failure(message("Hello", "See you in room 4821 today")) == (
        "no one-time code in message 'Hello' from app@example.com: 1 word looks like a code"
        " ('4821'), but it is not next to a word such as \"code\", alone on its line or"
        " emphasised; pass pattern=... to pick one."
    )


def test_code_fails_when_the_two_best_are_equally_likely() -> None:
    text = "Your code:\n\n482913\n\nOr your backup code:\n\n771204\n"
    assert failure(message("Your codes", text)) == (
        "2 codes in message 'Your codes' from app@example.com are equally likely:"
        " '482913' (next to \"code\", alone on its line),"
        " '771204' (next to \"code\", alone on its line); pass pattern=... to pick one"
    )


def test_code_with_a_pattern_returns_its_first_group() -> None:
    item = message(text="Your code:\n482913\nBackup code: 771204")
    assert item.code(r"Backup code: (\d+)") == "771204"


def test_code_with_a_pattern_without_groups_returns_the_match() -> None:
    assert message(text="Codes: 482913, 771204").code(r"77\d{4}") == "771204"


def test_code_with_a_compiled_pattern_keeps_its_flags() -> None:
    item = message(text="BACKUP CODE: 771204")
    assert item.code(re.compile(r"backup code: (\d+)", re.IGNORECASE)) == "771204"


def test_code_with_a_pattern_searches_the_subject() -> None:
    assert message("482913 is your code", "Hi").code(r"^(\d+) is") == "482913"


def test_code_with_a_pattern_reads_html_with_white_space_collapsed() -> None:
    html = "<p>Your code:</p>\n<p>\n  <b>482913</b>\n</p>"
    assert message(html=html).code(r"code: (\d+)") == "482913"


def test_code_with_a_pattern_counts_one_string_found_twice_once() -> None:
    item = message("Code 482913", "Your code: 482913", "<p>Your code: <b>482913</b></p>")
    assert item.code(r"(\d{6})") == "482913"


def test_code_with_a_pattern_fails_when_it_matches_nothing() -> None:
    item = message("Welcome", "Your code is 482913")
    assert failure(item, r"Code: (\d+)") == (
        "pattern 'Code: (\\d+)' matches nothing in message 'Welcome' from app@example.com"
        " (searched its subject, text body and HTML's visible text);"
        " the likely codes in it: '482913'."
    )


def test_code_with_a_pattern_fails_when_it_matches_two_different_strings() -> None:
    item = message("Welcome", "Your code is 482913, or 771204")
    assert failure(item, r"\d{6}") == (
        "pattern '\\d{6}' matches 2 different strings in message 'Welcome'"
        " from app@example.com: '482913', '771204'."
    )


# --- as a user's test reads it ------------------------------------------------------------

FAILURES = """
import smtplib
from email.message import EmailMessage


def send(server, to, subject, body):
    message = EmailMessage()
    message["From"] = "app@example.com"
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="localhost") as smtp:
        smtp.send_message(message)


def test_two_codes(tempinbox, tempinbox_server):
    body = "Your code:\\n\\n482913\\n\\nOr your backup code:\\n\\n771204\\n"
    send(tempinbox_server, tempinbox.address, "Your codes", body)
    tempinbox.wait_for_message().code()


def test_no_code(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Your receipt", "Order 7781. Thanks!\\n")
    tempinbox.wait_for_message().code()


def test_pattern_matches_nothing(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Welcome", "Your code is 482913\\n")
    tempinbox.wait_for_message().code(r"Code: (\\d+)")


def test_pattern_matches_two(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Welcome", "Codes: 482913, 771204\\n")
    tempinbox.wait_for_message().code(r"\\d{6}")
"""


def test_code_failures_read_as_failed_assertions_in_a_users_run(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(FAILURES)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "E * pytest_tempinbox.errors.MailAssertionError: 2 codes in message 'Your codes'"
            " from app@example.com are equally likely: '482913' (next to \"code\", alone on its"
            " line), '771204' (next to \"code\", alone on its line); pass pattern=... to pick one",
            "E * pytest_tempinbox.errors.MailAssertionError: no one-time code in message"
            " 'Your receipt' from app@example.com: the words that look like codes (4-8 digits,"
            " 6-10 capitals and digits, or 6-10 mixed-case letters and digits) are not: '7781'"
            ' (after "Order").',
            "E * pytest_tempinbox.errors.MailAssertionError: pattern 'Code: (\\d+)' matches"
            " nothing in message 'Welcome' from app@example.com (searched its subject, text"
            " body and HTML's visible text); the likely codes in it: '482913'.",
            "E * pytest_tempinbox.errors.MailAssertionError: pattern '\\d{6}' matches 2"
            " different strings in message 'Welcome' from app@example.com: '482913', '771204'.",
        ]
    )
    # The frames of the package are hidden: the test's own line is the last shown.
    assert "pytest_tempinbox/_codes.py" not in result.stdout.str()
