"""The plain planning of a value agrees with the general reading of a query, on any value and rules.

:func:`~airflow_provider_namelookup.engine.plan.plan_value` plans a plain value (a name that needs
no normalising, at most a two-letter country, no token in either) without the general reading: a
table's distinct values are nearly all plain, and planning them took a third less of the CPU that
the lookups share. Whatever the plain planning answers must be what the general reading answers;
where it cannot tell, it answers nothing and the general reading plans the value.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import (
    QueryRules,
    _plain_question,
    _question_read_in_full,
    build_query_object,
    plan_value,
)
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.validation import OversizedInteger

TOKEN = "Zq8wJd3XkP0s9LmN2vB7yT4rHc6aE1uG"

_NAMES = st.one_of(
    st.sampled_from(["Anna", "anna", "Zoë", "Zoe\u0308", "Anne-Marie", "O'Neil", "Anna Lena", "Anna  Lena",
                     "Anna Lena ", "Dan Qing Li", "Zoë Ann", "Zoe\u0308 Ann", "Anna \u00a0Lena", "Anna\u3000Lena",
                     f"Anna {TOKEN}", " Anna", "Anna\t",
                     "12345", "-", "", "x" * 50, "x" * 51, "y" * 100, "y" * 101, "a@b.io", "İbrahim", "ǅemal",
                     "\ud800x", "An\x00na", "An\u00a0na", "An\u200dna",
                     "\u212bsa", "\u1100\u1161", "\u2126mega", "\u212aarl", TOKEN, TOKEN.lower(), f"x{TOKEN}",
                     OversizedInteger("1" * 41)]),
    st.text(max_size=60),
    st.text(alphabet=st.characters(categories=("L", "M", "Zs", "Cc", "Cf", "Cs", "Nd", "Pd", "Po")), max_size=60),
    st.none(), st.integers(), st.booleans(), st.floats(allow_nan=False),
)
_COUNTRIES = st.one_of(
    st.sampled_from(["DE", "de", "De", "US", "XX", "EU", " de", "de ", "D", "DEU", "", " ", "ıt", "ſe", "\ud800e",
                     TOKEN]),
    st.text(max_size=3), st.none(), st.integers(), st.just(["DE"]),
)
_RULES = st.builds(
    QueryRules,
    lookup=st.sampled_from(list(LookupKind)),
    name_kind=st.sampled_from(["first_name", "full_name", "email"]),
    default_country=st.sampled_from([None, "DE", "de", ""]),
    default_locale=st.sampled_from([None, "de_DE"]),
    default_ip=st.sampled_from([None, "10.0.0.1"]),
    secrets=st.sampled_from([frozenset(), frozenset({TOKEN}), frozenset({TOKEN, "DE", "Anna"})]),
)


@st.composite
def _values(draw: Any) -> tuple[SourceValue, QueryRules]:
    """A value as a table source builds it, or a query object as an XCom list may hold it."""
    rules = draw(_RULES)
    name, country = draw(_NAMES), draw(_COUNTRIES)
    if draw(st.booleans()):
        raw: Any = build_query_object(name, rules, country=country)
    else:
        raw = {draw(st.sampled_from(["first_name", "full_name", "email"])): name}
        if draw(st.booleans()):
            raw["country"] = country
        if draw(st.booleans()):
            raw[draw(st.sampled_from(["locale", "ip", "id", "first_name", "other"]))] = draw(_NAMES)
    return SourceValue(("ref", 1), raw, rows=3, first_key=7, shown=name), rules


@settings(max_examples=1500, deadline=None)
@given(_values())
def test_the_plain_planning_answers_what_the_general_reading_answers(case: tuple[SourceValue, QueryRules]) -> None:
    value, rules = case
    plain = _plain_question(value, rules)
    if plain is not None:
        assert plain == _question_read_in_full(value, rules)
        assert plan_value(value, rules) == plain


def test_a_tables_common_values_are_planned_plainly() -> None:
    """The plain planning is not a dead branch: the values of a table with a country column take it,
    token set or not, in either case of the country code, with letters beyond ASCII, hyphens and words
    joined by one space."""
    for secrets in (frozenset(), frozenset({TOKEN})):
        rules = QueryRules(LookupKind.GENDER, secrets=secrets)
        for name, country in (("Anna", "DE"), ("Zoë", "fr"), ("Anne-Marie", None), ("O'Neil", "IE"), ("Yeşim", "TR"),
                              ("Dan Qing", "CN"), ("Abdul Hadi", None)):
            value = SourceValue((name, country), build_query_object(name, rules, country=country), rows=2, first_key=1)
            plain = _plain_question(value, rules)
            assert plain is not None, (name, country)
            assert plain == _question_read_in_full(value, rules)
            assert plain.query is not None and plain.query.country == (country.upper() if country else None)


def test_a_value_holding_the_token_is_refused_as_before() -> None:
    """Whatever field holds it: the name, whole or inside, or the country (a token as short as a
    country code is refused as a whole value)."""
    for secret, raw in ((TOKEN, {"first_name": TOKEN}), (TOKEN, {"first_name": f"Anna{TOKEN.lower()}"}),
                        ("DE", {"first_name": "Anna", "country": "DE"})):
        rules = QueryRules(LookupKind.GENDER, secrets=frozenset({secret}))
        value = SourceValue("ref", raw)
        assert _plain_question(value, rules) is None
        question = plan_value(value, rules)
        assert question.query is None and question.error is not None
        assert question.error.field == ("country" if "country" in raw else "first_name")
        assert TOKEN not in str(question.error) and TOKEN.lower() not in str(question.error)
