"""The service endpoints across a real socket: shapes, aliases, hints and every error."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx
import pytest

from airflow_provider_namelookup.countries import COUNTRIES, ETHNIC_GROUPS
from namelookup_emulator import EmulatorServer, ip_for_country
from tests.emulator.wire import DURATION, assert_problem, remaining

DETAIL_KEYS = {"credits_used", "samples", "country", "first_name_sanitized", "duration"}


def _check_details(result: dict[str, Any], credits: int) -> dict[str, Any]:
    details = result["details"]
    assert set(details) >= DETAIL_KEYS
    assert details["credits_used"] == credits
    assert DURATION.match(details["duration"])
    assert isinstance(details["samples"], int)
    return details


# gender: single, array, full name, e-mail


def test_first_name_lookup_answers_the_wire_shape(client: httpx.Client) -> None:
    response = client.post("/v2/gender", json={"first_name": "Theresa", "id": 7})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    result = response.json()
    assert set(result) == {"input", "details", "result_found", "first_name", "probability", "gender"}
    assert result["input"] == {"first_name": "Theresa", "id": 7}
    assert result["first_name"] == "Theresa" and result["gender"] == "female" and result["result_found"]
    details = _check_details(result, 1)
    assert details["first_name_sanitized"] == "theresa" and details["country"] is None
    assert details["samples"] > 0


def test_array_answers_a_bare_array_in_request_order(client: httpx.Client) -> None:
    queries = [{"first_name": "John", "id": "a"}, {"first_name": "Theresa", "id": 2},
               {"full_name": "Andrea Rossi", "country": "IT"}, {"email": "maria.garcia@example.com", "id": 4}]
    response = client.post("/v2/gender", json=queries)
    assert response.status_code == 200
    results = response.json()
    assert isinstance(results, list) and len(results) == 4
    assert [r["input"] for r in results] == queries
    assert [r["gender"] for r in results] == ["male", "female", "male", "female"]
    for result in results:
        _check_details(result, 1)


def test_full_name_lookup_splits_first_and_last_name(client: httpx.Client) -> None:
    result = client.post("/v2/gender", json={"full_name": "  theresa   MILLER "}).json()
    assert result["first_name"] == "Theresa" and result["last_name"] == "Miller"
    assert result["full_name"] == "theresa MILLER"
    assert result["gender"] == "female"
    details = _check_details(result, 1)
    assert details["full_name_sanitized"] == "theresa miller"
    assert details["first_name_sanitized"] == "theresa"


@pytest.mark.parametrize(("full_name", "first", "last"), [
    ("Miller, Theresa", "Theresa", "Miller"),
    ("Dr. John Smith", "John", "Smith"),
    ("Madonna", "Madonna", None),
    ("Ludwig van Beethoven", "Ludwig", "van Beethoven"),
])
def test_full_name_rules(client: httpx.Client, full_name: str, first: str, last: str | None) -> None:
    result = client.post("/v2/gender", json={"full_name": full_name}).json()
    assert (result["first_name"], result["last_name"]) == (first, last)


@pytest.mark.parametrize(("email", "first", "last"), [
    ("theresa.miller14@example.com", "Theresa", "Miller"),
    ("john_smith@example.org", "John", "Smith"),
    ("miller.theresa@example.com", "Theresa", "Miller"),
    ("johnsmith@example.com", "John", "Smith"),
])
def test_email_lookup_extracts_the_name(client: httpx.Client, email: str, first: str | None,
                                        last: str | None) -> None:
    result = client.post("/v2/gender", json={"email": email}).json()
    assert (result["first_name"], result["last_name"]) == (first, last)
    assert result["email"] == email
    assert result["details"]["email_sanitized"] == email.lower()
    assert result["result_found"] is (first is not None)


@pytest.mark.parametrize(("query", "status_id"), [
    ({"email": "1234@example.com"}, "parameter-email-invalid"),
    ({"email": "...@example.com"}, "parameter-email-invalid"),
    ({"full_name": ","}, "parameter-full-name-invalid"),
    ({"first_name": "12345"}, "parameter-first-name-invalid"),
])
def test_no_readable_first_name_is_refused_free_of_charge(client: httpx.Client, emulator: Any,
                                                          query: dict[str, str], status_id: str) -> None:
    before = emulator.state.remaining_credits(client.token)  # type: ignore[attr-defined]
    for path in ("/v2/gender", "/v2/country-of-origin"):
        answer = assert_problem(client.post(path, json=query), status_id)
        assert "Traceback" not in answer["detail"]
    assert emulator.state.remaining_credits(client.token) == before  # type: ignore[attr-defined]


@pytest.mark.parametrize(("body", "status_id", "words"), [
    (b'{"first_name": "Anna", "id": ' + b"9" * 5000 + b"}", "invalid-id", "id must be an integer"),
    (b'[{"first_name": "Anna", "id": -' + b"1" * 60 + b"}]", "invalid-id", "id must be an integer"),
    (b"[" * 100_000 + b"]" * 100_000, "invalid-json", "nests arrays or objects too deeply"),
    (b'{"first_name": "Anna", "x": 1e400}', "invalid-json", "too large"),
    (b'{"first_name": "Anna", "x": NaN}', "invalid-json", "NaN is not a JSON number"),
    (b'{"first_name": "Anna"', "invalid-json", "line 1, column"),
    (b'{"first_name": "\xff"}', "invalid-json", "not UTF-8"),
])
def test_hostile_bodies_answer_the_right_identifier_in_words_for_a_user(
        client: httpx.Client, emulator: Any, body: bytes, status_id: str, words: str | None) -> None:
    before = emulator.state.remaining_credits(client.token)  # type: ignore[attr-defined]
    answer = assert_problem(client.post("/v2/gender", content=body, headers={"Content-Type": "application/json"}),
                            status_id)
    assert not any(internal in answer["detail"] for internal in ("Exceeds the limit", "recursion", "char ",
                                                                 "sys.set_int_max_str_digits", "codec"))
    if words:
        assert words in answer["detail"]
    assert emulator.state.remaining_credits(client.token) == before  # type: ignore[attr-defined]


def test_a_huge_integer_in_an_ignored_field_is_echoed_as_its_digits(client: httpx.Client) -> None:
    digits = "7" * 5000
    response = client.post("/v2/gender", content=f'{{"first_name": "Anna", "x": {digits}}}'.encode(),
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 200 and response.json()["input"]["x"] == digits


def test_the_first_present_name_field_wins(client: httpx.Client) -> None:
    result = client.post("/v2/gender", json={"email": "john@example.com", "first_name": "Theresa",
                                              "full_name": None}).json()
    assert result["first_name"] == "Theresa" and "email" not in result


# hints


def test_country_hint_localises_and_is_reported(client: httpx.Client) -> None:
    italy = client.post("/v2/gender", json={"first_name": "Andrea", "country": "it"}).json()
    germany = client.post("/v2/gender", json={"first_name": "Andrea", "country": "DE"}).json()
    assert (italy["gender"], italy["details"]["country"]) == ("male", "IT")
    assert (germany["gender"], germany["details"]["country"]) == ("female", "DE")


def test_hint_country_without_data_falls_back_to_all_countries(client: httpx.Client) -> None:
    everywhere = client.post("/v2/gender", json={"first_name": "Andrea"}).json()
    brazil = client.post("/v2/gender", json={"first_name": "Andrea", "country": "BR"}).json()
    assert brazil["details"]["country"] is None
    assert (brazil["gender"], brazil["probability"]) == (everywhere["gender"], everywhere["probability"])


@pytest.mark.parametrize("version", [4, 6])
def test_ip_hint_uses_the_built_in_address_table(client: httpx.Client, version: int) -> None:
    result = client.post("/v2/gender", json={"first_name": "Andrea", "ip": ip_for_country("IT", version=version)})
    assert result.json()["details"]["country"] == "IT" and result.json()["gender"] == "male"
    public = client.post("/v2/gender", json={"first_name": "Andrea", "ip": "8.8.8.8"}).json()
    assert public["details"]["country"] is None


def test_hint_precedence_country_then_locale_then_ip(client: httpx.Client) -> None:
    def country(**hints: str) -> str:
        return str(client.post("/v2/gender", json={"first_name": "Andrea", **hints}).json()["details"]["country"])

    assert country(country="IT", locale="de_DE", ip=ip_for_country("AT")) == "IT"
    assert country(locale="de-DE", ip=ip_for_country("IT")) == "DE"
    assert country(ip=ip_for_country("AT")) == "AT"


# country of origin


def test_country_of_origin_answers_the_wire_shape(client: httpx.Client) -> None:
    before = remaining(client)
    response = client.post("/v2/country-of-origin", json={"first_name": "Giuseppe", "id": "g1", "country": "DE"})
    assert response.status_code == 200
    result = response.json()
    assert result["input"] == {"first_name": "Giuseppe", "id": "g1", "country": "DE"}
    details = _check_details(result, 2)
    assert details["country"] is None
    assert result["result_found"] and result["gender"] == "male" and 0.5 <= result["probability"] <= 1
    assert result["meaning"] is None
    assert result["language_of_origin"] == "Italian"
    origins = result["country_of_origin"]
    assert 1 <= len(origins) <= 25 and origins[0]["country"] == "IT"
    for record in origins:
        assert set(record) == {"country_name", "country", "probability", "continental_region", "statistical_region"}
        country = COUNTRIES[record["country"]]
        assert (record["country_name"], record["statistical_region"], record["continental_region"]) == (
            country.name, country.statistical_region, country.continental_region)
        assert 0 <= record["probability"] <= 1
    assert [r["probability"] for r in origins] == sorted((r["probability"] for r in origins), reverse=True)
    ethnicity = result["ethnicity"]
    assert ethnicity["id"] == "ITALIAN" and ethnicity["name"] == ETHNIC_GROUPS["ITALIAN"]
    assert all(item["name"] == ETHNIC_GROUPS[item["id"]] for item in ethnicity["distribution"])
    assert sum(item["percentage"] for item in ethnicity["distribution"]) == pytest.approx(100, abs=0.1)
    assert remaining(client) == before - 2
    page = httpx.get(result["country_of_origin_map_url"])
    assert page.status_code == 200 and "Italy" in page.text


def test_country_of_origin_caps_at_25_countries_and_accepts_full_names_and_emails(client: httpx.Client) -> None:
    ali = client.post("/v2/country-of-origin", json={"full_name": "Ali Yilmaz"}).json()
    assert len(ali["country_of_origin"]) == 25 and ali["last_name"] == "Yilmaz"
    assert sum(r["probability"] for r in ali["country_of_origin"]) <= 1.0001
    by_mail = client.post("/v2/country-of-origin", json={"full_name": "giuseppe.verdi@example.it"}).json()
    assert by_mail["first_name"] == "Giuseppe" and by_mail["country_of_origin"][0]["country"] == "IT"
    by_email_field = client.post("/v2/country-of-origin", json={"email": "giuseppe.verdi@example.it"}).json()
    assert by_email_field["country_of_origin"] == by_mail["country_of_origin"]


def test_country_of_origin_of_an_unknown_name(client: httpx.Client) -> None:
    result = client.post("/v2/country-of-origin", json={"first_name": "Xqzvbnmw"}).json()
    assert result["result_found"] is False and result["gender"] == "unknown"
    assert result["country_of_origin"] == [] and result["ethnicity"] is None
    assert result["language_of_origin"] is None and result["details"]["credits_used"] == 2
    assert isinstance(result["country_of_origin_map_url"], str)


def test_country_of_origin_takes_one_object_not_an_array(client: httpx.Client) -> None:
    before = remaining(client)
    assert_problem(client.post("/v2/country-of-origin", json=[{"first_name": "Anna"}]),
                   "mandatory-parameter-missing")
    assert remaining(client) == before


# aliases


@pytest.mark.parametrize(("path", "field", "value", "first"), [
    ("/v2/gender/by-first-name", "first_name", "Theresa", "Theresa"),
    ("/v2/gender/by-full-name", "full_name", "John Smith", "John"),
    ("/v2/gender/by-email-address", "email", "theresa.miller@example.com", "Theresa"),
])
def test_single_aliases_read_their_own_field(client: httpx.Client, path: str, field: str, value: str,
                                             first: str) -> None:
    others = {"first_name": "Zoltan", "full_name": "Zoltan Kovacs", "email": "zoltan@example.com"}
    others.pop(field)
    result = client.post(path, json={field: value, **others, "id": 1}).json()
    assert result["first_name"] == first and result["input"][field] == value
    _check_details(result, 1)
    assert_problem(client.post(path, json=others), "mandatory-parameter-missing")


@pytest.mark.parametrize(("path", "field", "values"), [
    ("/v2/gender/by-first-name-multiple", "first_name", ["Theresa", "John"]),
    ("/v2/gender/by-full-name-multiple", "full_name", ["Theresa Miller", "John Smith"]),
    ("/v2/gender/by-email-address-multiple", "email", ["theresa@example.com", "john.smith@example.com"]),
])
def test_multiple_aliases_take_arrays(client: httpx.Client, path: str, field: str, values: list[str]) -> None:
    before = remaining(client)
    results = client.post(path, json=[{field: v, "id": i} for i, v in enumerate(values)]).json()
    assert [r["gender"] for r in results] == ["female", "male"]
    assert [r["input"]["id"] for r in results] == [0, 1]
    assert remaining(client) == before - 2


def test_alias_answers_in_the_shape_it_was_sent(client: httpx.Client) -> None:
    single = client.post("/v2/gender/by-first-name-multiple", json={"first_name": "Anna"}).json()
    assert isinstance(single, dict) and single["gender"] == "female"
    many = client.post("/v2/gender/by-first-name", json=[{"first_name": "Anna"}]).json()
    assert isinstance(many, list) and many[0]["gender"] == "female"


# statistic


def test_statistic_costs_nothing(client: httpx.Client) -> None:
    first = client.get("/v2/statistic").json()
    second = client.get("/v2/statistic").json()
    assert first == {**second, "details": first["details"]}
    assert first["details"]["credits_used"] == 0 and DURATION.match(first["details"]["duration"])
    assert set(first) == {"is_limit_reached", "remaining_credits", "details", "usage_last_month"}
    assert first["remaining_credits"] == 1000 and first["is_limit_reached"] is False


# errors


def _post(client: httpx.Client, body: Any, path: str = "/v2/gender") -> httpx.Response:
    return client.post(path, content=json.dumps(body), headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(("body", "status_id"), [
    ({"first_name": ""}, "parameter-first-name-invalid"),
    ({"first_name": "x" * 51}, "parameter-first-name-invalid"),
    ({"first_name": 42}, "parameter-first-name-invalid"),
    ({"first_name": "Ann\u0000a"}, "parameter-first-name-invalid"),
    ({"full_name": "x" * 101}, "parameter-full-name-invalid"),
    ({"full_name": ["John"]}, "parameter-full-name-invalid"),
    ({"email": "not-an-address"}, "parameter-email-invalid"),
    ({"email": "a@b"}, "parameter-email-invalid"),
    ({"first_name": "Anna", "country": "XX"}, "invalid-country-code"),
    ({"first_name": "Anna", "country": 49}, "invalid-country-code"),
    ({"first_name": "Anna", "ip": "999.1.1.1"}, "invalid-ip-address"),
    ({"first_name": "Anna", "locale": "german"}, "invalid-locale"),
    ({"first_name": "Anna", "locale": "de_XX"}, "invalid-locale"),
    ({"first_name": "Anna", "id": 1.5}, "invalid-id"),
    ({"first_name": "Anna", "id": True}, "invalid-id"),
    ({"first_name": "Anna", "id": "x" * 51}, "invalid-id"),
    ({}, "mandatory-parameter-missing"),
    ({"first_name": None, "country": "DE"}, "mandatory-parameter-missing"),
    ("Anna", "mandatory-parameter-missing"),
    ([], "mandatory-parameter-missing"),
    ([{"first_name": "Anna"}] * 101, "too-many-queries"),
])
def test_validation_errors_are_problem_details_and_free(client: httpx.Client, body: Any, status_id: str) -> None:
    before = remaining(client)
    assert_problem(_post(client, body), status_id)
    assert remaining(client) == before


def test_one_bad_element_fails_the_whole_array_and_names_its_index(client: httpx.Client) -> None:
    before = remaining(client)
    body = [{"first_name": "Anna"}, {"first_name": "Bob"}, {"first_name": "Carl", "country": "ZZ"}]
    problem = assert_problem(_post(client, body), "invalid-country-code")
    assert problem["detail"].startswith("query 2:")
    assert remaining(client) == before


def test_exactly_100_queries_are_allowed(client: httpx.Client) -> None:
    results = _post(client, [{"first_name": "Anna", "id": i} for i in range(100)]).json()
    assert [r["input"]["id"] for r in results] == list(range(100))


def test_body_errors(client: httpx.Client) -> None:
    assert_problem(client.post("/v2/gender", content=b'{"first_name": "Anna"}'), "content-type-missing")
    assert_problem(client.post("/v2/gender", content=b'{"first_name": "Anna"}',
                               headers={"Content-Type": "text/plain"}), "content-type-missing")
    json_header = {"Content-Type": "application/json"}
    assert_problem(client.post("/v2/gender", content=b"", headers=json_header), "missing-json")
    assert_problem(client.post("/v2/gender", content=b"  \n", headers=json_header), "missing-json")
    assert_problem(client.post("/v2/gender", content=b'{"first_name": ', headers=json_header), "invalid-json")
    assert_problem(client.post("/v2/gender", content=b'{"first_name": NaN}', headers=json_header), "invalid-json")
    assert_problem(client.post("/v2/gender", content=b"\xff\xfe\xfd", headers=json_header), "invalid-json")
    assert_problem(client.post("/v2/country-of-origin", content=b"[", headers=json_header), "invalid-json")
    charset = client.post("/v2/gender", content=b'{"first_name": "Anna"}',
                          headers={"Content-Type": "application/json; charset=utf-8"})
    assert charset.status_code == 200


def test_an_oversized_body_is_a_generic_error(client: httpx.Client) -> None:
    body = json.dumps([{"first_name": "Anna", "id": "x" * 50}] * 20_000)
    assert_problem(client.post("/v2/gender", content=body, headers={"Content-Type": "application/json"}),
                   "generic-error")


def test_checks_run_route_body_auth_validation_credits(client_for: Any, make_account: Any) -> None:
    anonymous = client_for(None)
    assert_problem(anonymous.post("/v2/genders", content=b"{"), "endpoint-not-found")
    assert_problem(anonymous.post("/v2/gender", content=b"{", headers={"Content-Type": "application/json"}),
                   "invalid-json")
    assert_problem(anonymous.post("/v2/gender", json={"first_name": ""}), "authorization-header-missing")
    broke = client_for(make_account(credits=0))
    assert_problem(broke.post("/v2/gender", json={"first_name": ""}), "parameter-first-name-invalid")
    assert_problem(broke.post("/v2/gender", json={"first_name": "Anna"}), "limit-exceeded")


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/"), ("POST", "/v2/unknown"), ("GET", "/v2/gender"), ("POST", "/v2/statistic"),
    ("PUT", "/v2/country-of-origin"), ("POST", "/v2/gender/"), ("GET", "/v1/gender"), ("DELETE", "/v2/sign-up"),
])
def test_unknown_endpoints(client: httpx.Client, method: str, path: str) -> None:
    assert_problem(client.request(method, path, json={"first_name": "Anna"}), "endpoint-not-found")


def test_an_unexpected_failure_is_a_500_problem_and_charges_nothing(
        client: httpx.Client, emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    before = remaining(client)
    monkeypatch.setattr(emulator.state.names, "gender_of", broken)
    with caplog.at_level(logging.INFO, logger="namelookup_emulator"):
        body = assert_problem(client.post("/v2/gender", json=[{"first_name": "Anna"}] * 3), "generic-error",
                              http_status=500)
        deadline = time.monotonic() + 5  # the server thread logs just after answering

        def lines() -> list[str]:
            return [r.getMessage() for r in caplog.records
                    if r.name == "namelookup_emulator" and "/v2/gender" in r.getMessage()]

        while not lines() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "boom" not in body["detail"] and "Traceback" not in body["detail"]
    assert len(lines()) == 1 and lines()[0].startswith("POST /v2/gender 500 ")
    assert lines()[0].endswith("failed: RuntimeError: boom")
    monkeypatch.undo()
    assert remaining(client) == before
    assert client.post("/v2/gender", json={"first_name": "Anna"}).status_code == 200


def test_lone_surrogates_are_refused_in_names_and_echoed_safely_elsewhere(client: httpx.Client) -> None:
    json_header = {"Content-Type": "application/json"}
    assert_problem(client.post("/v2/gender", content=b'{"first_name": "\\ud800"}', headers=json_header),
                   "parameter-first-name-invalid")
    echoed = client.post("/v2/gender", content=b'{"first_name": "Anna", "id": "\\ud800"}', headers=json_header)
    assert echoed.status_code == 200 and echoed.json()["input"]["id"] == "\ud800"


def test_tokens_never_appear_in_answers(client: httpx.Client) -> None:
    token = client.token  # type: ignore[attr-defined]
    for response in (client.post("/v2/gender", json={"first_name": "Anna"}), client.get("/v2/statistic"),
                     client.post("/v2/gender", json={})):
        assert token not in response.text
