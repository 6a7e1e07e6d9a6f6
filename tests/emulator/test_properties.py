"""Property-based: any JSON body gets a well-formed answer, never a 5xx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from airflow_provider_namelookup.errors import STATUS_HTTP
from namelookup_emulator import EmulatorServer, ip_for_country
from tests.emulator.wire import PROBLEM_TYPE, bearer

ENDPOINTS = ["/v2/gender", "/v2/country-of-origin", "/v2/gender/by-full-name-multiple"]
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=60)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
name_like = st.sampled_from(["Anna", "Theresa Miller", "theresa.miller@example.com", "", "x" * 120,
                             "Miller, John", "a@b.c", " ", "Ærøskøbing", "李 小龙"]) | st.text(max_size=110)
hint_like = st.sampled_from(["DE", "it", "XX", "de_DE", "en-US", "zz_ZZ", ip_for_country("FR"), "::1",
                             "300.1.1.1"]) | json_scalars
queries = st.fixed_dictionaries({}, optional={
    "first_name": name_like | json_values, "full_name": name_like | json_values,
    "email": name_like | json_values, "country": hint_like, "locale": hint_like, "ip": hint_like,
    "id": st.integers() | st.text(max_size=60) | json_values,
})
bodies = json_values | queries | st.lists(queries | json_values, max_size=8)


@pytest.fixture(scope="module")
def rich_client(emulator: EmulatorServer) -> Iterator[httpx.Client]:
    token = emulator.create_account(credits=10**9)
    with httpx.Client(base_url=emulator.url, headers=bearer(token), timeout=10) as client:
        yield client


def _check(response: httpx.Response, body: Any) -> None:
    assert response.status_code < 500, response.text
    answer = response.json()
    event(f"HTTP {response.status_code} {answer.get('title', '') if isinstance(answer, dict) else 'array'}")
    if response.status_code == 200:
        results = answer if isinstance(answer, list) else [answer]
        assert isinstance(body, list) == isinstance(answer, list)
        for result in results:
            assert result["gender"] in ("male", "female", "unknown")
            assert 0 <= result["probability"] <= 1
            assert isinstance(result["details"]["credits_used"], int)
        return
    assert 400 <= response.status_code < 500
    assert answer["title"] in STATUS_HTTP and STATUS_HTTP[answer["title"]] == response.status_code
    assert answer["status"] == response.status_code
    match = PROBLEM_TYPE.match(answer["type"])
    assert match and match["id"] == answer["title"] and isinstance(answer["detail"], str)


@SETTINGS
@given(body=bodies, path=st.sampled_from(ENDPOINTS))
def test_any_json_body_gets_a_well_formed_answer(rich_client: httpx.Client, body: Any, path: str) -> None:
    response = rich_client.post(path, content=json.dumps(body), headers={"Content-Type": "application/json"})
    _check(response, body)


@SETTINGS
@given(query=queries)
def test_any_query_object_gets_a_well_formed_answer(rich_client: httpx.Client, query: dict[str, Any]) -> None:
    for path in ("/v2/gender", "/v2/country-of-origin"):
        _check(rich_client.post(path, json=query), query)
    _check(rich_client.post("/v2/gender", json=[query, query]), [query, query])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200), path=st.sampled_from([*ENDPOINTS, "/v2/sign-up"]))
def test_any_bytes_get_a_well_formed_answer(rich_client: httpx.Client, raw: bytes, path: str) -> None:
    response = rich_client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code < 500
    if response.status_code >= 400:
        assert response.json()["title"] in STATUS_HTTP


raw_numbers = st.sampled_from(["1e400", "-1e400", "1E309", "9" * 5000, "-" + "1" * 45, "NaN", "Infinity",
                               "12", "0.5", "1e-400"])
valid_queries = st.fixed_dictionaries({"first_name": st.sampled_from(["Anna", "Theresa", "Giulia", "Zyx"])},
                                      optional={"id": st.integers(-5, 5), "country": st.sampled_from(["DE", "IT"])})
PRICES = {"/v2/gender": 1, "/v2/gender/by-full-name-multiple": 1, "/v2/country-of-origin": 2}


def _with_raw_number(body: Any, raw: str, where: str) -> bytes:
    """The body as JSON text with a number literal no encoder writes, spliced in by hand."""
    if isinstance(body, dict):
        inner = json.dumps(body)[1:-1]
        return ("{" + f'"{where}": {raw}' + (", " + inner if inner else "") + "}").encode()
    if isinstance(body, list):
        return ("[" + ", ".join([*(json.dumps(item) for item in body), raw]) + "]").encode()
    return json.dumps(body).encode()


@SETTINGS
@given(body=valid_queries | st.lists(valid_queries, min_size=1, max_size=3) | bodies, raw=raw_numbers,
       where=st.sampled_from(["x", "id", "first_name", "country"]),
       path=st.sampled_from(list(PRICES)))
def test_any_body_is_answered_at_the_documented_price_or_charged_nothing(
        rich_client: httpx.Client, emulator: EmulatorServer, body: Any, raw: str, where: str, path: str) -> None:
    """No answer but a 2xx ever costs a credit, and a 2xx costs exactly the documented price."""
    token = rich_client.headers["Authorization"].split()[1]
    before = emulator.state.remaining_credits(token)
    response = rich_client.post(path, content=_with_raw_number(body, raw, where),
                                headers={"Content-Type": "application/json"})
    spent = before - emulator.state.remaining_credits(token)
    event(f"HTTP {response.status_code}")
    if 200 <= response.status_code < 300:
        answer = response.json()
        results = answer if isinstance(answer, list) else [answer]
        assert spent == PRICES[path] * len(results)
        assert all(r["details"]["credits_used"] == PRICES[path] for r in results)
        assert all(isinstance(r["first_name"], str) for r in results)
    else:
        assert spent == 0, response.text
        assert response.status_code < 500, response.text
