"""Does the service answer the way this provider expects? A smoke test against a real endpoint.

Run it first with a real token, before any DAG::

    python -m airflow_provider_namelookup.smoke --conn-id namelookup_default

It reads the connection as a task would (its host, its token, its extras), makes the free
statistic call, then one lookup of each kind the operators send: a first name; a first name
with a ``country``, a ``locale`` and an ``ip`` hint; a full name; an e-mail address; an array
request of two first names (with ids, as the operators send them); a country-of-origin query.
That is :data:`SMOKE_CREDITS` credits (gender 1 each, country of origin 2), and it refuses to
start when the account has fewer. Two mistakes cost nothing and check the error shapes the
provider relies on: a query with an invalid country (sent as is, past the provider's own
checks: the service's problem-details body) and a wrong token.

Every field the provider reads is checked (present where it must be, of the type it reads,
in range: :func:`gender_problems`, :func:`origin_problems`, :func:`statistic_problems`,
:func:`error_problems`), and each answer's ``details.credits_used`` against the price the
budgets count. It prints one line per check, what it spent (and what the statistic says was
spent), and exits 0 when everything matched, 1 on any mismatch, 2 when it could not start
(no connection, a wrong token, too few credits). The token is never printed.

Example::

    >>> gender_problems({"gender": "female", "probability": 0.98, "result_found": True, "first_name": "Anna",
    ...                  "details": {"credits_used": 1, "samples": 912, "country": None}})
    []
    >>> for problem in gender_problems({"gender": "F", "probability": "0.98", "result_found": True,
    ...                                 "details": {"credits_used": 1}}):
    ...     print(problem)
    gender is 'F' (str), not one of female, male, unknown
    probability is '0.98' (str), not a number from 0 to 1
    details.samples is missing, not an integer
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TextIO, TypeGuard

import httpx

from airflow_provider_namelookup.api import ApiRequest, RawResponse, Send
from airflow_provider_namelookup.contract import GENDER_PATH, STATISTIC_PATH, LookupKind
from airflow_provider_namelookup.errors import (
    NameLookupAuthError,
    NameLookupConnectionError,
    NameLookupError,
    NameLookupValidationError,
    error_from_response,
)
from airflow_provider_namelookup.hooks.transport_errors import display_url

__all__ = ["SMOKE_CREDITS", "Smoke", "error_problems", "gender_problems", "main", "origin_problems",
           "statistic_problems"]

GENDERS = ("female", "male", "unknown")
WRONG_TOKEN = "namelookup-smoke-test-wrong-token-0000000000"  # noqa: S105 - no account has it, on purpose
"""A token no account has: the wrong-token check's (free: the service refuses it before any lookup)."""

Problems = list[str]


def _kind(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})" if value is not None else "null"


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _text_or_null(result: Mapping[str, Any], name: str, problems: Problems) -> None:
    if result.get(name) is not None and not isinstance(result[name], str):
        problems.append(f"{name} is {_kind(result[name])}, not text or null")


def _details(result: Mapping[str, Any], credits: int, problems: Problems) -> Mapping[str, Any]:
    details = result.get("details")
    if not isinstance(details, Mapping):
        problems.append(f"details is {_kind(details)}, not an object")
        return {}
    if details.get("credits_used") != credits or not _is_int(details.get("credits_used")):
        problems.append(f"details.credits_used is {_kind(details.get('credits_used'))}, not {credits} "
                        "(the price the budgets count)")
    return details


def _answer_problems(result: Any, credits: int) -> tuple[Problems, Mapping[str, Any]]:
    """What gender and country-of-origin answers share: gender, probability, result_found,
    first_name, last_name, details (credits, samples, country)."""
    if not isinstance(result, Mapping):
        return [f"the answer is {_kind(result)}, not an object"], {}
    problems: Problems = []
    if result.get("gender") not in GENDERS:
        problems.append(f"gender is {_kind(result.get('gender'))}, not one of {', '.join(sorted(GENDERS))}")
    probability = result.get("probability")
    if not _is_number(probability) or not 0 <= probability <= 1:
        problems.append(f"probability is {_kind(probability)}, not a number from 0 to 1")
    if not isinstance(result.get("result_found"), bool):
        problems.append(f"result_found is {_kind(result.get('result_found'))}, not true or false")
    for name in ("first_name", "last_name"):
        _text_or_null(result, name, problems)
    details = _details(result, credits, problems)
    if details:
        if not _is_int(details.get("samples")) or details["samples"] < 0:
            problems.append(f"details.samples is {_kind(details.get('samples')) if 'samples' in details else 'missing'}"
                            ", not an integer")
        country = details.get("country")
        if country is not None and not (isinstance(country, str) and len(country) == 2):
            problems.append(f"details.country is {_kind(country)}, not a two-letter code or null")
    return problems, details


def gender_problems(result: Any) -> Problems:
    """What in a gender answer differs from what the provider reads (empty: nothing)."""
    return _answer_problems(result, LookupKind.GENDER.credits_per_query)[0]


def origin_problems(result: Any) -> Problems:
    """What in a country-of-origin answer differs from what the provider reads (empty: nothing)."""
    problems, _ = _answer_problems(result, LookupKind.ORIGIN.credits_per_query)
    if not isinstance(result, Mapping):
        return problems
    origins = result.get("country_of_origin")
    if not isinstance(origins, list) or len(origins) > 25:
        problems.append(f"country_of_origin is {_kind(origins)}, not a list of at most 25 records")
        origins = []
    for n, origin in enumerate(origins):
        if not isinstance(origin, Mapping) or not (isinstance(origin.get("country"), str)
                                                   and len(origin["country"]) == 2):
            problems.append(f"country_of_origin[{n}].country is not a two-letter code")
        elif not _is_number(origin.get("probability")) or not 0 <= origin["probability"] <= 1:
            problems.append(f"country_of_origin[{n}].probability is {_kind(origin.get('probability'))}, "
                            "not a number from 0 to 1")
    for name in ("language_of_origin", "meaning"):
        _text_or_null(result, name, problems)
    ethnicity = result.get("ethnicity")
    if ethnicity is not None:
        if not isinstance(ethnicity, Mapping) or not isinstance(ethnicity.get("id"), str):
            problems.append(f"ethnicity is {_kind(ethnicity)}, not null or an object with a text id")
        elif not isinstance(ethnicity.get("distribution", []), list) or any(
                not isinstance(d, Mapping) or not _is_number(d.get("percentage"))
                or not 0 <= d["percentage"] <= 100 for d in ethnicity.get("distribution", [])):
            problems.append("ethnicity.distribution is not a list of records with a percentage from 0 to 100")
    return problems


def statistic_problems(statistic: Any) -> Problems:
    """What in a statistic answer differs from what the provider reads (the budget, the credit
    sensor and the credits view read ``remaining_credits``)."""
    if not isinstance(statistic, Mapping):
        return [f"the statistic is {_kind(statistic)}, not an object"]
    problems: Problems = []
    if not _is_int(statistic.get("remaining_credits")) or statistic["remaining_credits"] < 0:
        problems.append(f"remaining_credits is {_kind(statistic.get('remaining_credits'))}, not a whole number")
    if "is_limit_reached" in statistic and not isinstance(statistic["is_limit_reached"], bool):
        problems.append(f"is_limit_reached is {_kind(statistic['is_limit_reached'])}, not true or false")
    details = statistic.get("details")
    if isinstance(details, Mapping) and details.get("credits_used") not in (0, None):
        problems.append(f"details.credits_used is {_kind(details.get('credits_used'))}: the statistic must be free")
    return problems


def error_problems(response: RawResponse, status_id: str, error_class: type[NameLookupError]) -> Problems:
    """What in an error answer differs from what the provider reads: RFC 7807 problem details
    whose ``title`` (or ``type``'s last part) is the status identifier, a text ``detail``, and
    the HTTP code the service's error table gives; read by the provider as ``error_class``."""
    problems: Problems = []
    if response.status != 400:
        problems.append(f"HTTP {response.status}, not 400")
    try:
        body = json.loads(response.content)
    except ValueError:
        body = None
    if not isinstance(body, Mapping):
        problems.append("the body is not a JSON object (problem details)")
    else:
        type_tail = str(body.get("type") or "").rstrip("/").rsplit("/", 1)[-1]
        if status_id not in (body.get("title"), type_tail):
            problems.append(f"neither title ({_kind(body.get('title'))}) nor type ends in {status_id!r}")
        if not isinstance(body.get("detail"), str):
            problems.append(f"detail is {_kind(body.get('detail'))}, not text")
        if "status" in body and body["status"] != response.status:
            problems.append(f"status is {_kind(body['status'])}, not the HTTP code {response.status}")
    read = error_from_response(response.status, response.content, retry_after=response.retry_after)
    if not isinstance(read, error_class) or read.status_id != status_id:
        problems.append(f"the provider reads it as {type(read).__name__} {read.status_id!r}, not "
                        f"{error_class.__name__} {status_id!r}")
    return problems


def _sent_as_is(request: ApiRequest) -> Generator[Send, Any, RawResponse | NameLookupConnectionError]:
    """One request, sent once and its answer returned as it came (no retry, no reading)."""
    return (yield Send(request))


@dataclass
class Check:
    """One line of the report: what was asked, what it cost, what differed."""

    label: str
    problems: Problems = field(default_factory=list)
    credits: int = 0
    said: str = ""


class Smoke:
    """The smoke test over one sync hook (:meth:`run` returns the exit code).

    :param hook: a :class:`~airflow_provider_namelookup.hooks.namelookup.NameLookupHook`.
    :param out: where the report goes.
    """

    def __init__(self, hook: Any, out: TextIO = sys.stdout) -> None:
        self.hook = hook
        self.out = out
        self.checks: list[Check] = []

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def _report(self, check: Check) -> Check:
        self.checks.append(check)
        mark = "FAIL" if check.problems else "ok  "
        cost = f" [{check.credits} credit{'s' if check.credits != 1 else ''}]" if check.credits else " [free]"
        self.say(f"{mark} {check.label}{cost}{': ' + check.said if check.said and not check.problems else ''}")
        for problem in check.problems:
            self.say(f"       {problem}")
        return check

    def _lookup(self, label: str, call: Callable[[], Any], problems: Callable[[Any], Problems],
                *, price: int, notes: Callable[[Any], str] = lambda _: "") -> Any:
        try:
            answer = call()
        except NameLookupError as err:
            self._report(Check(label, [f"the service refused it: {err}"]))
            return None
        said = f"{answer.get('gender')} {answer.get('probability')}" if isinstance(answer, Mapping) else ""
        extra = notes(answer)
        self._report(Check(label, problems(answer), credits=price if isinstance(answer, Mapping) else 0,
                           said=f"{said}{'; ' + extra if extra else ''}"))
        return answer

    def statistic(self, label: str) -> int | None:
        statistic = self.hook.get_statistic()
        remaining = statistic.get("remaining_credits") if isinstance(statistic, Mapping) else None
        self._report(Check(label, statistic_problems(statistic), said=f"{remaining} credits remaining"))
        return remaining if _is_int(remaining) else None

    def run(self) -> int:
        """Every check; 0 when everything matched, 1 on a mismatch, 2 when it could not start."""
        self.say(f"Name Lookup smoke test of {self.hook.source} ({self._url()}): at most {SMOKE_CREDITS} credits")
        try:
            before = self.statistic("statistic")
        except NameLookupError as err:
            self.say(f"Could not start: {err}")
            return 2
        if before is None:
            return 1
        if before < SMOKE_CREDITS:
            self.say(f"Could not start: the lookups cost {SMOKE_CREDITS} credits and the account has {before}; "
                     "nothing was spent")
            return 2
        self._gender_lookups()
        self._array_lookup()
        self._lookup("country of origin, first name 'Giulia'",
                     lambda: self.hook.country_of_origin(first_name="Giulia"), origin_problems,
                     price=LookupKind.ORIGIN.credits_per_query,
                     notes=lambda answer: f"top country {_top(answer)}")
        self._error_shapes()
        after = self.statistic("statistic again")
        return self._summary(before, after)

    def _url(self) -> str:
        return display_url(httpx.URL(self.hook.settings.base_url)).rstrip("/")

    def _gender_lookups(self) -> None:
        gender = self.hook.gender
        price = LookupKind.GENDER.credits_per_query
        hinted = {"country": "IT", "locale": "en_US", "ip": "81.2.69.160"}
        self._lookup("gender, first name 'Anna'", lambda: gender(first_name="Anna"), gender_problems, price=price)
        for (hint, value), name in zip(hinted.items(), ("Andrea", "Kim", "Jan"), strict=True):
            self._lookup(f"gender, first name {name!r} with {hint}={value!r}",
                         partial(gender, first_name=name, **{hint: value}),
                         gender_problems, price=price,
                         notes=lambda answer: f"details.country {_details_of(answer).get('country') or 'null'}")
        self._lookup("gender, full name 'Theresa Miller'", lambda: gender(full_name="Theresa Miller"),
                     lambda answer: gender_problems(answer) + _split_problems(answer, "Theresa", "Miller"),
                     price=price)
        self._lookup("gender, e-mail 'theresa.miller@example.com'",
                     lambda: gender(email="theresa.miller@example.com"),
                     lambda answer: gender_problems(answer) + _split_problems(answer, "Theresa", None), price=price)

    def _array_lookup(self) -> None:
        """Two first names in one array request, each with its hash as id (as the operators send
        them): a list of two answers, matched to the queries by the echoed ids."""
        label = "gender, array request of 'Lena' and 'Jonas' (ids as the operators send them)"
        try:
            [(batch, answers)] = list(self.hook.iter_gender_batches(["Lena", "Jonas"]))
        except NameLookupError as err:
            self._report(Check(label, [f"the service refused it: {err}"]))
            return
        problems = [f"answer {n}: {p}" for n, answer in enumerate(answers) for p in gender_problems(answer)]
        for query, answer in zip(batch, answers, strict=True):
            echoed = answer.get("input") if isinstance(answer, Mapping) else None
            if not isinstance(echoed, Mapping) or echoed.get("id") != query.id:
                problems.append(f"the answer to {query.name!r} does not echo its id in input.id (the provider "
                                "then relies on the request's order)")
            if isinstance(answer, Mapping) and str(answer.get("first_name") or "").casefold() != query.name.casefold():
                problems.append(f"the answer to {query.name!r} is about {answer.get('first_name')!r}")
        self._report(Check(label, problems, credits=len(batch) * LookupKind.GENDER.credits_per_query,
                           said=", ".join(f"{q.name} {a.get('gender')}" for q, a in zip(batch, answers, strict=True))))

    def _error_shapes(self) -> None:
        """An invalid country sent as is, and a wrong token: free, and read as the provider expects."""
        invalid = ApiRequest("POST", GENDER_PATH, {"first_name": "Anna", "country": "XX"}, queries=1)
        self._error_shape("error body of an invalid country 'XX'", self.hook, invalid,
                          "invalid-country-code", NameLookupValidationError)
        wrong = type(self.hook)(self.hook.namelookup_conn_id, settings=replace(self.hook.settings, token=WRONG_TOKEN))
        try:
            self._error_shape("error body of a wrong token", wrong, ApiRequest("GET", STATISTIC_PATH),
                              "invalid-auth-token", NameLookupAuthError)
        finally:
            wrong.close()

    def _error_shape(self, label: str, hook: Any, request: ApiRequest, title: str,
                     error: type[NameLookupError]) -> None:
        """Send ``request`` as is through ``hook``; the answer must be the error ``title`` read as ``error``."""
        answer = hook.run(_sent_as_is(request))
        if isinstance(answer, NameLookupConnectionError):
            self._report(Check(label, [f"no answer: {answer}"]))
        else:
            self._report(Check(label, error_problems(answer, title, error), said=f"{title}, HTTP 400"))

    def _summary(self, before: int, after: int | None) -> int:
        spent = sum(check.credits for check in self.checks)
        failed = [check for check in self.checks if check.problems]
        if after is None:
            self.say(f"Spent {spent} credits (details.credits_used of the answers).")
        elif before - after == spent:
            self.say(f"Spent {spent} credits (details.credits_used of the answers); the statistic agrees: "
                     f"{before} -> {after}.")
        else:
            self.say(f"Spent {spent} credits (details.credits_used of the answers); the statistic says "
                     f"{before - after} ({before} -> {after}): another client of the account, or a statistic "
                     "that lags, may account for the difference.")
        self.say(f"{len(self.checks)} checks, {len(failed)} failed: "
                 + ("the service answers the way this provider expects." if not failed else
                    "the provider may misread these answers; please report them with this output."))
        return 1 if failed else 0


SMOKE_CREDITS = 6 * LookupKind.GENDER.credits_per_query + 2 * LookupKind.GENDER.credits_per_query \
    + LookupKind.ORIGIN.credits_per_query
"""What the lookups cost: six single gender lookups, an array of two, one country of origin (10)."""


def _details_of(answer: Any) -> Mapping[str, Any]:
    details = answer.get("details") if isinstance(answer, Mapping) else None
    return details if isinstance(details, Mapping) else {}


def _top(answer: Any) -> str:
    origins = answer.get("country_of_origin") if isinstance(answer, Mapping) else None
    return str(origins[0].get("country")) if isinstance(origins, list) and origins and isinstance(
        origins[0], Mapping) else "none"


def _split_problems(answer: Any, first: str, last: str | None) -> Problems:
    """A full name or an address is split into the first name the provider stores (and the last)."""
    if not isinstance(answer, Mapping) or not answer.get("result_found"):
        return []
    problems = []
    if str(answer.get("first_name") or "").casefold() != first.casefold():
        problems.append(f"first_name is {_kind(answer.get('first_name'))}, not {first!r} (the split first name)")
    if last is not None and answer.get("last_name") is not None \
            and str(answer["last_name"]).casefold() != last.casefold():
        problems.append(f"last_name is {_kind(answer.get('last_name'))}, not {last!r}")
    return problems


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """The command line: ``python -m airflow_provider_namelookup.smoke --conn-id namelookup_default``."""
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_namelookup.smoke",
        description=f"Check that the Name Lookup service behind an Airflow connection answers the way this "
                    f"provider expects: the free statistic call, then one lookup of each kind the operators "
                    f"send ({SMOKE_CREDITS} credits in all). Exits 0 when everything matches, 1 on a mismatch, "
                    "2 when it cannot start.")
    parser.add_argument("--conn-id", default="namelookup_default",
                        help="the Airflow connection of type namelookup (default: namelookup_default)")
    args = parser.parse_args(argv)
    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
    from airflow_provider_namelookup.hooks.settings import ClientSettings
    from airflow_provider_namelookup.warehouse.dialects import warehouse_of

    try:
        conn = connection(args.conn_id)
        if warehouse_of(conn.conn_type) is not None:
            raise ValueError(f"it is a {conn.conn_type} connection, a warehouse's: give the service's connection "
                             "(type namelookup, the API token in its password)")
        settings = ClientSettings.from_connection(conn)
    except Exception as err:  # not defined, a warehouse's, a malformed extra: said, not a traceback
        print(f"Could not start: connection {args.conn_id!r}: {err}", file=out)
        return 2
    with NameLookupHook(args.conn_id, settings=settings) as hook:
        return Smoke(hook, out).run()


def connection(conn_id: str) -> Any:
    """The Airflow connection ``conn_id`` as a task would read it (environment variables, secrets
    backends), else from the metadata database, as ``airflow connections test`` reads it: outside a
    task, Airflow 3's Task SDK reads no metadata database."""
    from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseHook

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        from airflow.models.connection import Connection

        return Connection.get_connection_from_secrets(conn_id)


if __name__ == "__main__":
    sys.exit(main())
