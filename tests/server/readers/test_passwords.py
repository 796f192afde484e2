"""Each inbox's reader password: signed per store, checked in constant time, shared over Redis."""

from __future__ import annotations

import re

import pytest

from pytest_tempinbox.errors import InboxNotFound
from pytest_tempinbox.server.readers.passwords import InboxPasswords, passwords_of
from pytest_tempinbox.server.store.memory.store import Store


def test_a_password_is_24_base32_characters() -> None:
    store = Store()
    address = store.generate().address
    assert re.fullmatch(r"[a-z2-7]{24}", InboxPasswords(store).password(address))


def test_the_password_is_the_same_for_any_case_of_the_address() -> None:
    store = Store()
    address = store.generate().address
    passwords = passwords_of(store)
    assert passwords.password(address.upper()) == passwords.password(address)


def test_each_inbox_has_its_own_password() -> None:
    store = Store()
    passwords = passwords_of(store)
    assert passwords.password(store.generate().address) != passwords.password(
        store.generate().address
    )


def test_another_server_has_other_passwords() -> None:
    one, other = Store(), Store()
    one.generate(address="same@tempinbox.test")
    other.generate(address="same@tempinbox.test")
    assert passwords_of(one).password("same@tempinbox.test") != passwords_of(other).password(
        "same@tempinbox.test"
    )


def test_check_answers_the_inbox_for_its_password() -> None:
    store = Store()
    address = store.generate().address
    passwords = passwords_of(store)
    assert passwords.check(address.upper(), passwords.password(address)) == address


@pytest.mark.parametrize("given", ["", "wrong", "x" * 1000, "\udcff"])
def test_check_refuses_a_wrong_password(given: str) -> None:
    store = Store()
    address = store.generate().address
    assert passwords_of(store).check(address, given) is None


@pytest.mark.parametrize("user", ["nobody@tempinbox.test", "not an address", "", "\udcff@x"])
def test_check_refuses_a_user_without_an_inbox(user: str) -> None:
    assert passwords_of(Store()).check(user, "whatever") is None


def test_a_deleted_inbox_no_longer_opens() -> None:
    store = Store()
    address = store.generate().address
    password = passwords_of(store).password(address)
    store.delete(address)
    assert passwords_of(store).check(address, password) is None
    with pytest.raises(InboxNotFound):
        passwords_of(store).password(address)


def test_an_address_made_again_by_another_tenant_has_another_password() -> None:
    store = Store()
    passwords = passwords_of(store)
    store.generate(address="fixed@tempinbox.test", owner="team-a")
    first = passwords.password("fixed@tempinbox.test")
    store.delete("fixed@tempinbox.test")
    store.generate(address="fixed@tempinbox.test", owner="team-b")
    assert passwords.check("fixed@tempinbox.test", first) is None


def test_every_server_on_one_redis_accepts_the_passwords_of_the_others(redis_url: str) -> None:
    from pytest_tempinbox.server.store.redis.store import RedisStore

    one, other = RedisStore(redis_url), RedisStore(redis_url)
    try:
        address = one.generate().address
        password = passwords_of(one).password(address)
        assert passwords_of(other).check(address, password) == address
        assert passwords_of(other).password(address) == password
    finally:
        one.close()
        other.close()
