"""The spec's input rules, as the client and the emulator apply them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.validation import (
    OversizedInteger,
    is_valid_email,
    validate_country,
    validate_id,
    validate_ip,
    validate_locale,
    validate_query,
    validate_signup,
)


def rejects(raw: object, status_id: str, field: str | None = None) -> None:
    with pytest.raises(NameLookupValidationError) as info:
        validate_query(raw)
    assert info.value.status_id == status_id
    if field:
        assert info.value.field == field


@pytest.mark.parametrize(("kind", "low", "high", "status_id"), [
    ("first_name", 1, 50, "parameter-first-name-invalid"),
    ("full_name", 1, 100, "parameter-full-name-invalid"),
])
def test_name_length_limits(kind: str, low: int, high: int, status_id: str) -> None:
    assert validate_query({kind: "a" * high}).name == "a" * high
    assert validate_query({kind: "a" * low}).name == "a"
    rejects({kind: "a" * (high + 1)}, status_id, kind)
    rejects({kind: ""}, status_id, kind)
    rejects({kind: "   "}, status_id, kind)
    rejects({kind: 42}, status_id, kind)
    rejects({kind: ["Anna"]}, status_id, kind)


def test_email_rules() -> None:
    assert validate_query({"email": "Theresa.Miller14@Example.com"}).name == "Theresa.Miller14@Example.com"
    for bad in ("a@b", "no-at-sign.com", "two@@x.com", "sp ace@x.com", "x@" + "d" * 98 + ".com", "@x.com"):
        rejects({"email": bad}, "parameter-email-invalid", "email")


@pytest.mark.parametrize("address", [
    "anna<script>@example.com", "anna,b@example.com", "anna(x)@example.com", 'an"na@example.com',
    "an\u200bna@example.com", "anna\U0001F600@example.com", "anna@-example-.com", "anna@example-.com",
    "anna@-example.com", "anna@[127.0.0.1]", "anna@[IPv6:::1]", "anna@127.0.0.1", "anna@exa_mple.com",
    "anna@exa!mple.com", "anna@example.123", "anna@" + "a" * 64 + ".com", "anna@example..com",
    "anna@example.com.", "anna@.example.com", "anna@bü\u200bcher.de", "ä" * 33 + "@example.com",
])
def test_email_addresses_need_a_dot_atom_local_part_and_ldh_host_labels(address: str) -> None:
    assert not is_valid_email(address)
    rejects({"email": address}, "parameter-email-invalid", "email")
    with pytest.raises(NameLookupValidationError, match="email-invalid"):
        validate_signup(address, True)


@pytest.mark.parametrize("address", [
    "jörg@bücher.de", "JÖRG@BÜCHER.DE", "o'brien@example.com", "anna+news@mail.example.co.uk",
    "a.b-c_d@sub-domain.example.com", "x{y}|z~@example.com", "anna@" + "a" * 63 + ".com", "anna@xn--bcher-kva.de",
    "δοκιμή@παράδειγμα.δοκιμή", "user@example.com1", "李@例子.中国", "a" * 64 + "@example.com",
    "ä" * 32 + "@example.com",
])
def test_valid_addresses_keep_working_internationalised_too(address: str) -> None:
    assert is_valid_email(address)
    assert validate_query({"email": address}).name == address
    assert validate_signup(address, True)["email"] == address


def test_names_are_normalised() -> None:
    q = validate_query({"full_name": "  Jose\u0301   Garcia \t"})
    assert q.name == "José Garcia"
    assert q.kind == "full_name"
    assert validate_query({"first_name": "Anna\r\n"}).name == "Anna"


@pytest.mark.parametrize("text", ["An\x00na", "An\x1bna", "\x07", "Ann\ud800a", "Anna\x7f", "\x1c\t\ta", "Anna\x1f"])
def test_control_characters_and_lone_surrogates_are_refused(text: str) -> None:
    rejects({"first_name": text}, "parameter-first-name-invalid")


def test_name_field_precedence() -> None:
    q = validate_query({"email": "x@y.com", "full_name": "John Smith", "first_name": "Anna"})
    assert (q.kind, q.name) == ("first_name", "Anna")
    assert validate_query({"email": "x@y.com", "full_name": "John Smith"}).kind == "full_name"
    assert validate_query({"first_name": None, "email": "x@y.com"}).kind == "email"
    rejects({"first_name": "", "full_name": "John Smith"}, "parameter-first-name-invalid")


def test_mandatory_parameter_missing() -> None:
    rejects({}, "mandatory-parameter-missing")
    rejects({"country": "DE"}, "mandatory-parameter-missing")
    rejects({"first_name": None}, "mandatory-parameter-missing", "first_name")
    rejects({"full_name": None, "country": "DE"}, "mandatory-parameter-missing", "full_name")
    rejects({"email": None}, "mandatory-parameter-missing", "email")
    rejects({"country": "DE"}, "mandatory-parameter-missing", "first_name")
    rejects("Anna", "mandatory-parameter-missing")
    rejects(["Anna"], "mandatory-parameter-missing")


def test_country_rules() -> None:
    assert validate_country("de") == "DE"
    assert validate_country(" US ") == "US"
    assert validate_country("") is None and validate_country(None) is None
    for bad in ("XX", "DEU", "Germany", 49, "UK"):
        with pytest.raises(NameLookupValidationError, match="invalid-country-code"):
            validate_country(bad)


@pytest.mark.parametrize("code", ["ıt", "ſe", "İT", "dK", "ＤＥ"])
def test_country_codes_fold_case_in_ascii_only(code: str) -> None:
    """str.upper() turns "ıt" into "IT" and "ſe" into "SE": only ASCII letters are codes."""
    if code.isascii():
        assert validate_country(code) == code.upper()
        return
    with pytest.raises(NameLookupValidationError, match="invalid-country-code"):
        validate_country(code)
    rejects({"first_name": "Anna", "country": code}, "invalid-country-code", "country")
    with pytest.raises(NameLookupValidationError, match="invalid-locale"):
        validate_locale(f"en_{code}")


def test_locale_rules() -> None:
    assert validate_locale("en_US") == "en_US"
    assert validate_locale("de-at") == "de_AT"
    for bad in ("US", "en", "english_US", "en_XX", "en_USA", 5):
        with pytest.raises(NameLookupValidationError, match="invalid-locale"):
            validate_locale(bad)


def test_ip_rules() -> None:
    assert validate_ip("8.8.8.8") == "8.8.8.8"
    assert validate_ip("2001:DB8::1") == "2001:db8::1"
    for bad in ("256.1.1.1", "1.2.3", "localhost", 1234, "::g", "fe80::1%eth0", "::%1"):
        with pytest.raises(NameLookupValidationError, match="invalid-ip-address") as refused:
            validate_ip(bad)
        assert str(bad) not in str(refused.value)  # an address is personal data: never quoted


def test_an_invalid_ip_is_described_by_its_shape() -> None:
    with pytest.raises(NameLookupValidationError, match="got 9 characters that are not one"):
        validate_ip("81.2.69.x")
    with pytest.raises(NameLookupValidationError, match="got int"):
        validate_ip(1234)


def test_id_rules() -> None:
    assert validate_id(7) == 7 and validate_id("x" * 50) == "x" * 50 and validate_id("") == ""
    for bad in (True, 1.5, "x" * 51, [1], {"a": 1}):
        with pytest.raises(NameLookupValidationError, match="invalid-id"):
            validate_id(bad)


def test_every_hint_is_checked_even_when_not_used() -> None:
    rejects({"first_name": "Anna", "country": "DE", "locale": "xx"}, "invalid-locale", "locale")
    rejects({"first_name": "Anna", "country": "DE", "ip": "nope"}, "invalid-ip-address", "ip")


def test_rule_order_name_before_hints_before_id() -> None:
    rejects({"first_name": "", "country": "XX", "id": 1.5}, "parameter-first-name-invalid")
    rejects({"first_name": "Anna", "country": "XX", "id": 1.5}, "invalid-country-code")
    rejects({"first_name": "Anna", "id": 1.5}, "invalid-id")


def test_origin_queries_ignore_hints() -> None:
    q = validate_query({"first_name": "Anna", "country": "XX"}, hints=False)
    assert q == Query(kind="first_name", name="Anna")


def test_cache_key_ignores_case_and_id_but_not_hints() -> None:
    a = validate_query({"first_name": "ANNA", "id": 1})
    b = validate_query({"first_name": "anna ", "id": 2})
    c = validate_query({"first_name": "anna", "country": "DE"})
    assert a.cache_key == b.cache_key != c.cache_key


def test_signup_rules() -> None:
    assert validate_signup("me@example.com", True, None, "DE") == {
        "email": "me@example.com", "accept_terms": True, "locale": "de"}
    with pytest.raises(NameLookupValidationError, match="terms-not-accepted"):
        validate_signup("me@example.com", False)
    with pytest.raises(NameLookupValidationError, match="terms-not-accepted"):
        validate_signup("me@example.com", "yes")
    with pytest.raises(NameLookupValidationError, match="email-invalid"):
        validate_signup("not-an-address", True)
    assert validate_signup("me@example.com", True, locale="fr")["locale"] == "fr"  # a short language code
    for locale in ("fr_FR", "english", "f", 7):
        with pytest.raises(NameLookupValidationError, match="invalid-locale"):
            validate_signup("me@example.com", True, locale=locale)
    assert validate_signup("me@example.com", True, newsletter=True)["newsletter"] is True
    for newsletter in ("yes", 1, "true"):
        with pytest.raises(NameLookupValidationError, match="generic-error") as info:
            validate_signup("me@example.com", True, newsletter=newsletter)
        assert info.value.field == "newsletter"
    with pytest.raises(NameLookupValidationError, match="email-invalid"):
        validate_signup("...@example.com", True)


@pytest.mark.parametrize(("raw", "status_id", "field"), [
    ({"email": "...@example.com"}, "parameter-email-invalid", "email"),
    ({"email": "a..b@example.com"}, "parameter-email-invalid", "email"),
    ({"email": ".a@example.com"}, "parameter-email-invalid", "email"),
    ({"email": "12345@example.com"}, "parameter-email-invalid", "email"),
    ({"email": "1.2_3@example.com"}, "parameter-email-invalid", "email"),
    ({"full_name": ","}, "parameter-full-name-invalid", "full_name"),
    ({"full_name": "12 34"}, "parameter-full-name-invalid", "full_name"),
    ({"first_name": "12345"}, "parameter-first-name-invalid", "first_name"),
    ({"first_name": "Anna", "id": 2**63}, "invalid-id", "id"),
    ({"first_name": "Anna", "id": -(2**63) - 1}, "invalid-id", "id"),
    ({"first_name": "Anna", "id": OversizedInteger("9" * 5000)}, "invalid-id", "id"),
    ({"first_name": OversizedInteger("9" * 5000)}, "parameter-first-name-invalid", "first_name"),
])
def test_no_readable_first_name_bad_addresses_and_huge_ids_are_refused(raw: dict[str, object], status_id: str,
                                                                       field: str) -> None:
    with pytest.raises(NameLookupValidationError) as info:
        validate_query(raw)
    assert (info.value.status_id, info.value.field) == (status_id, field)


def test_names_with_a_letter_are_readable_in_any_script() -> None:
    for raw in ({"first_name": "李"}, {"full_name": "O'Neil, Ann"}, {"email": "x9@example.com"},
                {"email": "anna.1990@example.com"}, {"first_name": "Anna", "id": 2**63 - 1}):
        validate_query(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=8,
)
query_like = st.fixed_dictionaries({}, optional={
    "first_name": json_values, "full_name": json_values, "email": json_values, "country": json_values,
    "locale": json_values, "ip": json_values, "id": json_values})


@given(st.one_of(json_values, query_like))
def test_any_json_is_accepted_or_refused_with_an_identifier(raw: object) -> None:
    try:
        q = validate_query(raw)
    except NameLookupValidationError as err:
        assert err.status_id and err.field and err.detail
    else:
        assert 1 <= len(q.name) <= 100
        q.to_payload()  # always JSON-ready


UNICODE_WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                                + "".join(map(chr, range(0x2000, 0x200B))))
"""The White_Space property of Unicode's PropList.txt: not Python's isspace(), which adds U+001C-U+001F."""


def test_white_space_is_unicodes_white_space() -> None:
    from airflow_provider_namelookup.validation import normalise_text, trim

    spaces = "".join(sorted(UNICODE_WHITE_SPACE))
    assert normalise_text(f"{spaces}Anna{spaces}Maria{spaces}") == "Anna Maria"
    assert trim(f"{spaces}\x1cDE\x1f{spaces}") == "\x1cDE\x1f"
    rejects({"first_name": "Anna", "country": "DE\x1c"}, "invalid-country-code", "country")
    rejects({"first_name": "Anna", "locale": "\x1den_US"}, "invalid-locale", "locale")
    assert validate_query({"first_name": "Anna", "country": " de\t"}).country == "DE"


def test_forbidden_characters_are_exactly_the_non_space_controls_and_surrogates() -> None:
    import unicodedata

    from airflow_provider_namelookup.validation import _has_forbidden_characters

    for ch in map(chr, range(0x110000)):
        expected = unicodedata.category(ch) in ("Cc", "Cs") and ch not in UNICODE_WHITE_SPACE
        assert _has_forbidden_characters(f"Ann{ch}a") is expected, hex(ord(ch))


def test_sign_up_takes_any_valid_address_smtp_carries() -> None:
    """The spec's 3 to 100 characters limit lookups; sign-up needs a valid address (RFC 5321: 254 octets)."""
    long_address = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 58 + ".de"
    assert len(long_address) == 254
    assert validate_signup(long_address, True)["email"] == long_address
    with pytest.raises(NameLookupValidationError, match="email-invalid"):
        validate_signup(long_address.replace("@", "@e"), True)
    rejects({"email": long_address}, "parameter-email-invalid", "email")


@pytest.mark.parametrize("fields", [{}, {"country": "DE"}, {"locale": "de_DE", "id": 7},
                                    {"country": "DE", "locale": "de_DE", "ip": "10.0.0.1", "id": "row-1"}])
def test_a_payload_holds_the_name_then_every_hint_given_in_contract_order_then_the_id(fields: dict) -> None:
    from airflow_provider_namelookup.contract import HINT_FIELDS

    payload = Query("first_name", "Anna", **fields).to_payload()
    wanted = ["first_name", *(f for f in HINT_FIELDS if f in fields), *(["id"] if "id" in fields else [])]
    assert list(payload) == wanted
    assert all(payload[f] == fields[f] for f in fields)
