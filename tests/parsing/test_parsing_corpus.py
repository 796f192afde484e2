"""Real mail from other projects' test data: every one parses, in time, and reads right.

The mails in ``tests/corpus/parsing/`` come from the test data that three
established Python mail packages ship in their source distributions: replies
from real mail clients (talon), bounces from real mail servers (flufl.bounce),
and spam, phishing and hand-made oddities (mail-parser); ``SOURCE.md`` there
tells which, and their license. Every mail must parse without raising, well
within the budget, to JSON-safe text, with each listed attachment served as
listed, and, where the shortcut for the usual message takes it, exactly as the
full parser reads it. Some mails carry facts checked by hand, several of them
the packages' own expectations.
"""

# The pinned facts are in the mails' own scripts, punctuation included.
# ruff: noqa: RUF001

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from unittest import mock

import pytest

from pytest_tempinbox.models import Address
from pytest_tempinbox.parsing import message as parsing
from pytest_tempinbox.parsing.fast import simple_message
from pytest_tempinbox.parsing.message import ParsedMessage, parse_message, served_attachment

CORPUS = Path(__file__).parents[1] / "corpus" / "parsing"
SOURCES = ("flufl.bounce", "mail-parser", "talon")
MAILS = sorted(path for source in SOURCES for path in (CORPUS / source).iterdir())
# Far above what any of these takes (40 ms for the largest here), so that a slow
# CI machine cannot trip it, yet low enough to catch a parse that runs away.
PARSE_BUDGET = 2.0


def _name(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def _parse(path: Path) -> tuple[bytes, ParsedMessage]:
    raw = path.read_bytes()
    started = time.perf_counter()
    parsed = parse_message(raw, budget=PARSE_BUDGET)
    elapsed = time.perf_counter() - started
    assert elapsed < PARSE_BUDGET, f"{_name(path)} took {elapsed:.2f} s"
    return raw, parsed


def test_the_corpus_holds_every_source() -> None:
    assert {path.parent.name for path in MAILS} == set(SOURCES)
    assert len(MAILS) == 144


@pytest.mark.parametrize("path", MAILS, ids=_name)
def test_every_mail_parses_in_time_to_json_safe_text(path: Path) -> None:
    raw, parsed = _parse(path)
    assert not any(defect.startswith("parse budget") for defect in parsed.defects)
    json.dumps(dataclasses.asdict(parsed), default=str, ensure_ascii=False).encode("utf-8")
    for attachment in parsed.attachments:
        described, content_type, payload = served_attachment(raw, attachment.index)
        assert described == attachment
        assert len(payload) == attachment.size
        # A header value as HTTP takes it, starting with the type the JSON gives.
        content_type.encode("ascii")
        assert content_type.isprintable()
        assert content_type.split(";")[0] in (attachment.content_type, "application/octet-stream")


SIMPLE_MAILS = [path for path in MAILS if simple_message(path.read_bytes()) is not None]


def test_the_shortcut_takes_some_real_mail() -> None:
    assert len(SIMPLE_MAILS) >= 40


@pytest.mark.parametrize("path", SIMPLE_MAILS, ids=_name)
def test_the_shortcut_reads_real_mail_as_the_full_parser_does(path: Path) -> None:
    raw = path.read_bytes()
    with mock.patch.object(parsing, "simple_message", return_value=None):
        full = parse_message(raw, budget=PARSE_BUDGET)
    assert parse_message(raw, budget=PARSE_BUDGET) == full


@dataclasses.dataclass(frozen=True)
class Facts:
    """What a mail is known to say; None where nothing is pinned."""

    subject: str | None = None
    sender: Address | None = None
    to: tuple[Address, ...] | None = None
    cc: tuple[Address, ...] | None = None
    reply_to: tuple[Address, ...] | None = None
    text: str | None = None  # a snippet the text body holds
    html: str | None = None  # a snippet the HTML body holds
    attachments: list[tuple[str | None, str]] | None = None  # (filename, content_type)
    served: list[str] | None = None  # each attachment's Content-Type over HTTP
    defects: tuple[str, ...] | None = None
    no_sender: bool = False


UNQUOTED = "unquoted address as display name in header {!r}"

FACTS = {
    # --- replies from mail clients (talon) ---
    "talon/gmail.eml": Facts(
        subject="Re: Test",
        sender=Address("Megan One", "xxx@gmail.com"),
        text="Hello\n\nOn Mon, Apr 2, 2012 at 6:26 PM, Megan One <xxx@gmail.com> wrote:\n\n> Hi\n",
        html='<div class="gmail_quote">',
        attachments=[],
        defects=(),
    ),
    "talon/android.eml": Facts(
        sender=Address("Sergey Obykhov", "bob@example.com"),
        text='02.04.2012 14:20 пользователь "bob@xxx.mailgun.org"',
        defects=(),
    ),
    "talon/thunderbird.eml": Facts(
        sender=Address("bob", "bob@xxx.mailgun.org"),
        to=(Address("Megan One", "xxx@gmail.com"),),
        text="On 04/02/2012 06:26 PM, Megan One wrote:\n> Hi \nHello",
    ),
    "talon/yahoo.eml": Facts(
        sender=Address("Alex Q", "xxx@yahoo.com"),
        text="Hello\n\n\n----- Original Message -----\n",
    ),
    "talon/outlook.eml": Facts(
        subject="Test", text="Hello\n\nFrom: xxx@xxx.mailgun.org", html="urn:schemas-microsoft-com"
    ),
    "talon/reply-quotations-share-block.eml": Facts(
        subject="Re: You've got a new booking inquiry!",
        text="Hi Katharine.\xa0 Sounds great.",
    ),
    # --- bounces from mail servers (flufl.bounce) ---
    "flufl.bounce/dsn_01.txt": Facts(
        sender=Address("Internet Mail Delivery", "postmaster@go.com"),
        attachments=[(None, "message/delivery-status"), (None, "message/rfc822")],
        defects=(),
    ),
    "flufl.bounce/simple_39.txt": Facts(
        subject="Ваше сообщение не доставлено. Mail failure.",
        text="Это письмо создано автоматически сервером Mail.Ru",
    ),
    "flufl.bounce/newmailru_01.txt": Facts(
        text="Это сообщение создано автоматически mail-сервисом."
    ),
    "flufl.bounce/sina_01.txt": Facts(
        text="邮件无法发送到您指定的地址中。",
        attachments=[("original message.eml", "message/rfc822")],
    ),
    "flufl.bounce/simple_13.txt": Facts(
        subject="Utilisateur non recensé dans l'annuaire Ademe",
        text="L'adresse de messagerie référencée ci-dessus n'existe pas.",
        no_sender=True,
    ),
    "flufl.bounce/qmail_08.txt": Facts(
        text="a la mayor brevedad posible tendrás noticias nuestras",
        defects=("unknown charset 'ansi_x3.110-1983', decoded as latin-1",),
    ),
    "flufl.bounce/groupwise_03.txt": Facts(
        attachments=[
            ("Hotel Raquel (19).jpg", "image/jpeg"),
            ("pratt nc 34050.RTF", "application/msword"),
        ],
        defects=("invalid base64 in part 1.2", "invalid base64 in part 2"),
    ),
    # "From: Mail Delivery System <>", and the sender's own "charset=UFT-8" served as written.
    "flufl.bounce/simple_31.txt": Facts(
        served=["message/delivery-status; charset=UFT-8", "message/rfc822; charset=UFT-8"],
        no_sender=True,
    ),
    "flufl.bounce/dsn_03.txt": Facts(
        sender=Address("postmaster@example.be", "postmaster@advalvas.be"),  # quoted: no defect
        defects=("multipart without its closing boundary",),
    ),
    # --- spam, phishing and oddities (mail-parser); its own expectations where it has them ---
    "mail-parser/mail_test_19": Facts(
        sender=Address("alice@example.com", "bob@example.com"),
        to=(Address("Charlie Brown", "charlie@example.com"), Address(None, "dave@example.com")),
        cc=(Address("eve@example.com", "frank@example.com"),),
        reply_to=(Address("henry@example.com", "ivan@example.com"),),
        defects=(UNQUOTED.format("From"), UNQUOTED.format("Cc"), UNQUOTED.format("Reply-To")),
    ),
    # Labelled gb2312, holding a GBK character: read as GBK, as browsers do.
    "mail-parser/mail_test_9": Facts(html="&nbsp;&nbsp;&nbsp;我把镜头拉近些，", defects=()),
    # UTF-8 with one damaged byte (Ñf.к., for т.к.): the rest still reads as UTF-8.
    "mail-parser/mail_test_6": Facts(
        subject="Быстрее вкладывайте в золото!",
        sender=Address("Время пришло", "noreply@ggg.com"),
        html="Не пересылайте данное письмо, Ñf.к. в нем содержатся ссылки",
        attachments=[(None, "image/png")] * 4,
    ),
    # A multipart inside a multipart, both with one boundary: the text is the text part's,
    # and the archive after the alternative is listed, as mail-parser and mail clients list it.
    "mail-parser/mail_malformed_1": Facts(
        subject="immagine",
        text="--Sent from my iPhone",
        html='<div><font size="2">--Sent from my iPhone</font></div>',
        attachments=[("20160523_916527.jpg_.zip", "application/zip")],
        defects=("multipart whose boundary never occurs in part 1",),
    ),
    "mail-parser/mail_malformed_3": Facts(
        subject="Ahorre Dinero en su Recibo de Luz",
        reply_to=(Address("VICTORIA Souvenirs", "smgesi4@gmail.com"),),
        defects=("NUL bytes in the message", "multipart whose boundary never occurs"),
    ),
    "mail-parser/mail_malformed_2": Facts(
        attachments=[
            ("DSN57BAC498.txt", "message/delivery-status"),
            (None, "message/rfc822-headers"),
        ],
    ),
    "mail-parser/mail_test_5": Facts(
        subject="Je prépare mon été zéro complexe !",
        sender=Address("Marina de Carlance", "contact@carlance.fr"),
        attachments=[
            ("mailingassets_d68799cd6301c7f5731a3c42946e528bcb78eb84.jpg", "image/jpeg"),
            ("mailingassets_a9ed45ff2645cff7fca702b289bc684b1bc72e2a.png", "image/png"),
            ("mailingassets_0e4def97310df75c2fa6e0db8fe67b79d130b3c3.png", "image/png"),
            ("mailingassets_228b182da05725833a4003dcbd8f6fe67956ad40.png", "image/png"),
            ("mailingassets_4545af8d596bb510a1181c9a3be0460bc5718649.png", "image/png"),
        ],
    ),
    "mail-parser/mail_test_18": Facts(
        sender=Address("LastßlName, FirstName", "comma.name@example.com"),
        # mail-parser drops an encoded name equal to the address; this keeps what was written.
        to=(Address("tony.stark@example.com", "tony.stark@example.com"),),
        cc=(
            Address(None, "simple@example.net"),
            Address('John "Johnny" Doe', "john.doe@example.com"),
        ),
        defects=(),
    ),
    "mail-parser/mail_test_17": Facts(
        subject="Transferencia Interbancaria Banca en Línea",
        html="<body>Test</body>",
        reply_to=(Address(None, "info@alejandrosalcedo.es"),),
    ),
    "mail-parser/mail_test_12": Facts(
        to=(Address(None, "danglüe@email.com"),),  # raw UTF-8 in the header
        text="你好！我公司",
        defects=("the body is not valid 'gb2312', decoded as UTF-8",),
    ),
    "mail-parser/mail_test_3": Facts(
        text="I am sending you the bills of the goods we delivered to you in the attachment\n",
        attachments=[("message.txt", "text/plain")],
        served=["text/plain; charset=iso-8859-1"],
    ),
    "mail-parser/mail_test_14": Facts(
        subject="Test",
        text="Plaintext here.",
        html="HTML here",
        attachments=[(None, "image/png")],
    ),
}


def test_every_pinned_mail_is_in_the_corpus() -> None:
    assert set(FACTS) <= {_name(path) for path in MAILS}


@pytest.mark.parametrize("name", FACTS)
def test_a_mail_reads_as_checked_by_hand(name: str) -> None:
    facts = FACTS[name]
    raw, parsed = _parse(CORPUS / name)
    for field in ("subject", "sender", "to", "cc", "reply_to", "defects"):
        expected = getattr(facts, field)
        if expected is not None:
            assert getattr(parsed, field) == expected, field
    if facts.no_sender:
        assert parsed.sender is None
    if facts.text is not None:
        assert facts.text in (parsed.text or "")
    if facts.html is not None:
        assert facts.html in (parsed.html or "")
    if facts.attachments is not None:
        found = [(item.filename, item.content_type) for item in parsed.attachments]
        assert found == facts.attachments
    if facts.served is not None:
        served = [served_attachment(raw, item.index)[1] for item in parsed.attachments]
        assert served == facts.served
