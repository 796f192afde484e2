"""One-time codes in mixed case: a code only with the evidence that ranks codes.

Keycloak's email verification by code sends 8 letters and digits of both cases
(``RandomString.randomCode(8)``), Hanko's alphanumeric passcodes 6 of them.
"""

from __future__ import annotations

import random

import pytest

from pytest_tempinbox.parsing.code_shapes import random_looking
from pytest_tempinbox.parsing.codes import find_codes

KEYCLOAK_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HANKO_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def test_an_eight_character_code_next_to_a_code_word_is_found() -> None:
    assert find_codes("Verify email", "Your verification code is CiHcjgZI.") == ["CiHcjgZI"]


def test_a_six_character_code_alone_on_its_line_is_found() -> None:
    body = "Enter the following passcode to verify your identity:\n\npKZXcm\n\nValid for 5 minutes."
    assert find_codes("Use passcode pKZXcm to login", body) == ["pKZXcm"]


def test_an_emphasised_code_is_found() -> None:
    html = '<p>Welcome!</p><div style="font-size: 34px">aB7xQ2kP</div>'
    assert find_codes("Welcome", "Welcome!\naB7xQ2kP is yours", html) == ["aB7xQ2kP"]


def test_a_mixed_case_word_without_evidence_is_no_code() -> None:
    assert find_codes("Hello", "We saw pKZXcm in the logs yesterday, among other things.") == []


@pytest.mark.parametrize(
    "word",
    [
        "iPhone",
        "McDonald",
        "GitHub",
        "YouTube",
        "camelCase",
        "userId",
        "LinkedIn",
        "PayPal",
        "JavaScript",
        "WordPress",
        "DeadBeef",
        "iPhone15",
        "macOS",
        "PostgreSQL",
        "DeAngelo",
    ],
)
def test_names_brands_and_camel_case_are_words(word: str) -> None:
    assert not random_looking(word)


@pytest.mark.parametrize(
    "body",
    [
        "Your GitHub code is 482913.",
        "Your YouTube verification code: 482913",
        "Code for your iPhone:\n482913",
        "McDonald's code: 482913",
    ],
)
def test_a_brand_next_to_a_code_word_is_not_the_code(body: str) -> None:
    assert find_codes("Your code", body) == ["482913"]


@pytest.mark.parametrize(
    "word", ["iPhone", "McDonald", "GitHub", "YouTube", "camelCase", "Passcode"]
)
def test_a_word_alone_on_its_line_under_a_code_word_is_no_code(word: str) -> None:
    assert find_codes("Your code", f"Your code:\n\n{word}\n") == []


def test_a_base64_fragment_is_no_code() -> None:
    body = (
        "Your code is in the attached block:\n"
        "eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4\n"
        "dGhlIGNvZGU\n"
    )
    assert find_codes("Code", body) == []


def test_a_word_touching_base64_padding_or_plus_is_no_code() -> None:
    assert find_codes("Code", "Your token: aGVsbG8K= and code dGhpcw+aGk") == []


def test_a_hexadecimal_number_is_no_code() -> None:
    assert find_codes("Code", "Your code: 0x1aF3bC") == []


def test_a_mixed_case_word_labelled_as_an_id_is_no_code() -> None:
    assert find_codes("Request", "Request ID: a8Kd2LmQ") == []


def test_all_lowercase_words_are_no_code_even_under_a_code_word() -> None:
    assert find_codes("Code", "Your code:\n\npassword\n\nwelcome") == []


@pytest.mark.parametrize("word", ["ONE-TIME", "one-time", "OTP", "otp", "CODE", "Code", "code"])
def test_a_code_word_is_never_a_candidate(word: str) -> None:
    assert find_codes("Your code", f"Enter the {word} code C6XLDFTM") == ["C6XLDFTM"]


def test_one_time_in_capitals_is_not_listed_beside_the_code() -> None:
    assert find_codes("Sign in", "ENTER THE ONE-TIME CODE C6XLDFTM") == ["C6XLDFTM"]


@pytest.mark.parametrize(
    ("alphabet", "length", "share"), [(KEYCLOAK_ALPHABET, 8, 0.98), (HANKO_ALPHABET, 6, 0.93)]
)
def test_nearly_every_random_mixed_case_code_reads_as_random(
    alphabet: str, length: int, share: float
) -> None:
    # Codes with small letters that the finder takes for a word are missed, never
    # wrong; all-capital ones are the old shape. Seeded: the same codes every run.
    rng = random.Random(28)
    codes = ["".join(rng.choice(alphabet) for _ in range(length)) for _ in range(2000)]
    mixed = [code for code in codes if any(char.islower() for char in code)]
    found = sum(random_looking(code) for code in mixed)
    assert found / len(mixed) >= share


def test_an_emphasised_mixed_case_code_among_many_candidates_is_found() -> None:
    # Over eight candidates the HTML is read in one pass, for capitals and digits.
    others = " ".join(f"A{n}B{n}C{n}D" for n in range(10))
    html = f"<p>{others}</p><p><b>rIXYS0z5</b></p>"
    assert find_codes("Hello", f"{others}\nUse rIXYS0z5 now", html)[0] == "rIXYS0z5"
