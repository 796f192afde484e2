"""DKIM verification against keys given as a mapping: real signatures made with dkimpy."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tempinbox.checks.dkim import DkimResult, load_dkim_keys, verify_dkim

from .dkim_support import SIGNED_HEADERS, Signer

dkim = pytest.importorskip("dkim", reason="dkimpy is not installed (pip install dkimpy)")

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "transactional"
MESSAGE = (
    b"From: Shop <noreply@example.com>\r\n"
    b"To: olivia@tempinbox.test\r\n"
    b"Subject: Your order\r\n"
    b"Date: Mon, 03 Mar 2025 09:12:44 +0000\r\n"
    b"Message-ID: <order-1@example.com>\r\n"
    b"\r\n"
    b"Thank you for your order.\r\n"
)


@pytest.fixture(scope="module")
def signer() -> Signer:
    return Signer()


@pytest.fixture(scope="module")
def other_signer() -> Signer:
    return Signer()


@pytest.fixture(scope="module")
def keys(signer: Signer) -> dict[str, str]:
    return {"sel._domainkey.example.com": signer.record}


@pytest.mark.parametrize("canonicalize", [(b"relaxed", b"simple"), (b"simple", b"simple")])
def test_a_signed_message_passes(
    signer: Signer, keys: dict[str, str], canonicalize: tuple[bytes, bytes]
) -> None:
    result = verify_dkim(signer.sign(MESSAGE, canonicalize=canonicalize), keys)
    assert result == DkimResult("pass", domain="example.com", selector="sel", reason=None)


def test_key_names_are_matched_without_case_or_trailing_dot(signer: Signer) -> None:
    keys = {"SEL._DomainKey.Example.COM.": signer.record}
    assert verify_dkim(signer.sign(MESSAGE), keys).result == "pass"


def test_a_real_world_template_signed_passes(signer: Signer, keys: dict[str, str]) -> None:
    raw = (CORPUS / "keycloak" / "en-verify-email.eml").read_bytes()
    assert verify_dkim(signer.sign(raw), keys).result == "pass"


def test_a_changed_body_fails_on_the_body_hash(signer: Signer, keys: dict[str, str]) -> None:
    tampered = signer.sign(MESSAGE).replace(b"Thank you", b"Pay now")
    result = verify_dkim(tampered, keys)
    assert result == DkimResult("fail", "example.com", "sel", "body hash did not verify")


def test_a_changed_signed_header_fails_the_signature(signer: Signer, keys: dict[str, str]) -> None:
    tampered = signer.sign(MESSAGE).replace(b"Subject: Your order", b"Subject: Your refund")
    result = verify_dkim(tampered, keys)
    assert result == DkimResult("fail", "example.com", "sel", "signature did not verify")


def test_an_added_header_outside_the_signature_still_passes(
    signer: Signer, keys: dict[str, str]
) -> None:
    signed = signer.sign(MESSAGE)
    assert verify_dkim(b"X-Added-Later: yes\r\n" + signed, keys).result == "pass"


def test_an_unknown_selector_fails_naming_the_dns_name(
    signer: Signer, keys: dict[str, str]
) -> None:
    result = verify_dkim(signer.sign(MESSAGE, selector=b"other"), keys)
    assert result == DkimResult(
        "fail", "example.com", "other", "no key for other._domainkey.example.com"
    )


def test_another_signers_key_fails_the_signature(signer: Signer, other_signer: Signer) -> None:
    keys = {"sel._domainkey.example.com": other_signer.record}
    assert verify_dkim(signer.sign(MESSAGE), keys).reason == "signature did not verify"


def test_an_unusable_key_record_fails_naming_it(signer: Signer) -> None:
    keys = {"sel._domainkey.example.com": "v=DKIM1; k=rsa; p=AAAA"}
    result = verify_dkim(signer.sign(MESSAGE), keys)
    assert result.result == "fail"
    assert result.reason is not None
    assert result.reason.startswith("bad key for sel._domainkey.example.com: ")


def test_an_unsigned_message_is_none(keys: dict[str, str]) -> None:
    assert verify_dkim(MESSAGE, keys) == DkimResult("none", None, None, None)


@pytest.mark.parametrize(
    "header",
    [
        b"DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=sel\r\n",
        b"DKIM-Signature: garbage\r\n",
        b"DKIM-Signature: v=1; a=rot13; b=AAAA; bh=AAAA; d=example.com; h=from; s=sel\r\n",
    ],
)
def test_a_malformed_signature_fails_without_raising(header: bytes, keys: dict[str, str]) -> None:
    result = verify_dkim(header + MESSAGE, keys)
    assert result.result == "fail"
    assert result.reason is not None
    assert result.reason.startswith("malformed DKIM-Signature: ")


def test_a_malformed_signature_still_names_its_domain_and_selector(keys: dict[str, str]) -> None:
    header = b"DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=sel\r\n"
    result = verify_dkim(header + MESSAGE, keys)
    assert (result.domain, result.selector) == ("example.com", "sel")
    assert result.reason == "malformed DKIM-Signature: missing b="


def test_an_expired_signature_fails_saying_so(signer: Signer, keys: dict[str, str]) -> None:
    signed = signer.sign(MESSAGE).replace(b"v=1;", b"v=1; x=1000;", 1)
    reason = verify_dkim(signed, keys).reason
    assert reason is not None
    assert reason.startswith("signature expired")


@given(st.binary(max_size=300))
def test_no_input_makes_verification_raise(noise: bytes) -> None:
    result = verify_dkim(b"DKIM-Signature: " + noise + b"\r\n" + MESSAGE, {})
    assert result.result in {"fail", "none"}
    assert verify_dkim(noise, {}).result in {"fail", "none"}


def test_the_first_signature_that_passes_is_reported(signer: Signer, keys: dict[str, str]) -> None:
    twice = signer.sign(signer.sign(MESSAGE), selector=b"gone", domain=b"mailer.example")
    assert verify_dkim(twice, keys) == DkimResult("pass", "example.com", "sel")


def test_when_none_passes_the_first_signatures_failure_is_reported(signer: Signer) -> None:
    twice = signer.sign(signer.sign(MESSAGE), selector=b"gone", domain=b"mailer.example")
    result = verify_dkim(twice, {})
    assert result == DkimResult(
        "fail", "mailer.example", "gone", "no key for gone._domainkey.mailer.example"
    )


@pytest.mark.skipif(importlib.util.find_spec("nacl") is not None, reason="PyNaCl is installed here")
def test_an_ed25519_key_without_pynacl_fails_naming_it(signer: Signer) -> None:
    keys = {"sel._domainkey.example.com": "v=DKIM1; k=ed25519; p=" + "A" * 44}
    reason = verify_dkim(signer.sign(MESSAGE), keys).reason
    assert (
        reason == "the ed25519 key of sel._domainkey.example.com needs PyNaCl (pip install pynacl)"
    )


def test_an_ed25519_signature_passes() -> None:
    signing = pytest.importorskip(
        "nacl.signing", reason="ed25519 needs PyNaCl (pip install pynacl)"
    )
    key = signing.SigningKey.generate()
    private = base64.b64encode(bytes(key)).decode()
    public = base64.b64encode(bytes(key.verify_key)).decode()
    header = dkim.sign(
        MESSAGE,
        b"ed",
        b"example.com",
        private.encode(),
        signature_algorithm=b"ed25519-sha256",
        include_headers=SIGNED_HEADERS,
    )
    keys = {"ed._domainkey.example.com": f"v=DKIM1; k=ed25519; p={public}"}
    assert verify_dkim(header + MESSAGE, keys).result == "pass"


def test_json_round_trip() -> None:
    result = DkimResult("fail", "example.com", "sel", "body hash did not verify")
    data = result.to_json()
    assert data == {
        "result": "fail",
        "domain": "example.com",
        "selector": "sel",
        "reason": "body hash did not verify",
    }
    assert DkimResult.from_json(json.loads(json.dumps(data))) == result


def test_from_json_refuses_an_unknown_result() -> None:
    with pytest.raises(ValueError, match="not a DKIM result: 'neutral'"):
        DkimResult.from_json({"result": "neutral"})


def test_keys_load_from_a_json_file(tmp_path: Path, signer: Signer) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"sel._domainkey.example.com": signer.record}), encoding="utf-8")
    keys = load_dkim_keys(path)
    assert keys == {"sel._domainkey.example.com": signer.record}
    assert verify_dkim(signer.sign(MESSAGE), keys).result == "pass"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "no such file"),
        ("{not json", "not JSON (Expecting property name enclosed in double quotes at line 1"),
        ('["v=DKIM1; p=AAAA"]', "expected a JSON object mapping DNS names to TXT records"),
        ('{"sel._domainkey.example.com": 42}', "'sel._domainkey.example.com' must be a string"),
        ('{"sel._domainkey.example.com": null}', "must be a string, found null"),
    ],
)
def test_a_bad_keys_file_is_refused_naming_the_file_and_problem(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "keys.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=r"^DKIM keys file ") as caught:
        load_dkim_keys(path)
    message = str(caught.value)
    assert message.startswith(f"DKIM keys file {path}: ")
    assert problem in message
    assert "\n" not in message


def test_a_directory_as_keys_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be read"):
        load_dkim_keys(tmp_path)


def test_a_keys_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_bytes(b'{"sel": "\xff"}')
    with pytest.raises(ValueError, match="not UTF-8"):
        load_dkim_keys(path)


@pytest.mark.parametrize(
    ("name", "domain", "selector"),
    [
        ("flufl.bounce/simple_28.txt", "googlemail.com", "gamma"),
        ("mail-parser/mail_test_5", "rmh2.net", "k"),
        ("mail-parser/mail_test_13", "mail90.suw15.mcsv.net", "k1"),
    ],
)
def test_real_signed_mail_without_its_key_fails_naming_the_key(
    name: str, domain: str, selector: str
) -> None:
    raw = (CORPUS.parent / "parsing" / name).read_bytes()
    assert verify_dkim(raw, {}) == DkimResult(
        "fail", domain, selector, f"no key for {selector}._domainkey.{domain}"
    )


def test_a_signature_quoted_in_the_body_is_no_signature() -> None:
    raw = MESSAGE + b"DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=sel; b=AAAA\r\n"
    assert verify_dkim(raw, {}) == DkimResult("none")
