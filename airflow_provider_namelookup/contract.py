"""The Name Lookup Service API v2 facts, stated once: paths, prices, limits, fields.

The published numbers (prices, limits) are read from ``service_facts.json``
(:mod:`~airflow_provider_namelookup.facts`), which the emulator ships too.

The client (:mod:`~airflow_provider_namelookup.api`), the engine
(:mod:`~airflow_provider_namelookup.engine`) and the hooks import these, so a
change of the service's contract is one edit here. Facts come from the spec
(``name-lookup-api-v2.md``) and, where it is silent, from the wire notes (endpoint
aliases, the 100-query batch of the older line, the 2-credit country of origin).

Example::

    >>> LookupKind.ORIGIN.path, LookupKind.ORIGIN.credits_per_query, LookupKind.ORIGIN.takes_hints
    ('/v2/country-of-origin', 2, False)
    >>> GENDER_ALIAS_PATHS["/v2/gender/by-full-name-multiple"]
    'full_name'
    >>> MAX_QUERIES_PER_REQUEST
    100
    >>> CLIENT_DEFAULTS["timeout"], CLIENT_DEFAULTS["max_concurrency"]
    (30.0, 64)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

from airflow_provider_namelookup.facts import NUMBERS, PUBLISHED

DEFAULT_BASE_URL = "https://gender-api.com"
"""The public service; a connection's host overrides it (the emulator, a proxy)."""

API_PREFIX = "/v2"
GENDER_PATH = "/v2/gender"
ORIGIN_PATH = "/v2/country-of-origin"
STATISTIC_PATH = "/v2/statistic"
SIGNUP_PATH = "/v2/sign-up"

NameKind = Literal["first_name", "full_name", "email"]
NAME_KINDS: tuple[NameKind, ...] = ("first_name", "full_name", "email")
"""The three name fields, in precedence order: when a query carries several, the first
present (non-null) one is used and the others are ignored, by client and emulator alike."""

HINT_FIELDS: tuple[str, ...] = ("country", "locale", "ip")
"""Localisation hints, in precedence order: ``country`` beats ``locale``'s region, which
beats the country of ``ip``. Gender lookups take them; country of origin ignores them."""

NAME_LENGTHS: Mapping[NameKind, tuple[int, int]] = {
    kind: (low, high) for kind, (low, high) in NUMBERS["name_length"].items()}
"""Name field → (fewest, most) characters the spec allows."""

ID_STRING_MAX_LENGTH: int = NUMBERS["id_string_max_length"]
"""Longest string ``id`` (an integer id has no published limit)."""

ID_FIELD = "id"
"""The caller's identifier of a query, echoed back in the result's ``input``."""

GENDER_ALIAS_PATHS: Mapping[str, NameKind | None] = MappingProxyType(PUBLISHED["gender_paths"])
"""Gender endpoint path (:data:`GENDER_PATH` and the wire notes' aliases) → the name field it reads
(None: the first present one)."""

MAX_QUERIES_PER_REQUEST: int = NUMBERS["queries_per_request"]
"""Queries in one bearer-token request (the wire notes' default batch; ``too-many-queries`` above)."""

MAX_QUERIES_PER_KEY_REQUEST: int = NUMBERS["lookups_per_key_request"]
"""Lookups in one request authenticated by the legacy ``key`` parameter."""

FREE_REQUESTS_PER_MONTH: int = NUMBERS["free_requests_per_month"]
"""Credits a sign-up account is granted each calendar month."""

SIGNUP_ACCOUNT_LANGUAGES: tuple[str, ...] = ("en", "de", "es")
"""Languages the service writes its account e-mails in (wire notes); other short language
codes are accepted at sign-up, as the spec allows, and get English."""


class LookupKind(StrEnum):
    """Which lookup endpoint is called, what one query costs there, and whether it takes hints."""

    GENDER = "gender"
    ORIGIN = "country_of_origin"

    @property
    def path(self) -> str:
        return GENDER_PATH if self is LookupKind.GENDER else ORIGIN_PATH

    @property
    def credits_per_query(self) -> int:
        return CREDITS_PER_QUERY[self]

    @property
    def takes_hints(self) -> bool:
        return self is LookupKind.GENDER


CREDITS_PER_QUERY: Mapping[LookupKind, int] = {kind: NUMBERS["credits_per_query"][kind.value] for kind in LookupKind}
"""Price of one answered query (``details.credits_used``); an array is charged per query."""


# The client's defaults and limits ------------------------------------------------------------------------

BACKOFF_MAX_SECONDS = 30.0
"""Longest wait between two attempts of one request."""
MAX_RETRY_AFTER_SECONDS = 120.0
"""Longest ``Retry-After`` the client agrees to wait; a longer one is raised at once."""


@dataclass(frozen=True)
class ClientSetting:
    """One tunable of the client, read from a connection extra of the same name.

    The connection form (:mod:`~airflow_provider_namelookup.connection_form`), the settings
    (:mod:`~airflow_provider_namelookup.hooks.settings`) and the connection page of the docs read these, so a
    default or a limit is stated once.

    :param kind: ``number`` (may have a fraction) or ``integer``.
    :param on_form: shown as a field of the connection form (else an extra only).
    """

    name: str
    label: str
    description: str
    kind: Literal["number", "integer"]
    default: float
    minimum: float
    maximum: float | None = None
    on_form: bool = True


CLIENT_SETTINGS: tuple[ClientSetting, ...] = (
    ClientSetting("timeout", "Read timeout (seconds)",
                  "Seconds to wait for an answer before the request counts as failed (default 30).",
                  "number", default=30.0, minimum=0.1),
    ClientSetting("connect_timeout", "Connect timeout (seconds)",
                  "Seconds to wait for a connection to the service (default 5).",
                  "number", default=5.0, minimum=0.1),
    ClientSetting("batch_size", "Queries per request",
                  f"Most names sent in one array request; the service allows {MAX_QUERIES_PER_REQUEST} "
                  f"(default {MAX_QUERIES_PER_REQUEST}).",
                  "integer", default=MAX_QUERIES_PER_REQUEST, minimum=1, maximum=1000),
    ClientSetting("max_retries", "Retries on network errors, 5xx and 429",
                  "Retries after the first attempt, with exponential backoff (default 5).",
                  "integer", default=5, minimum=0, maximum=20),
    ClientSetting("max_concurrency", "Max requests in flight",
                  "Ceiling of the adaptive concurrency: most lookup requests in flight at once (default 64).",
                  "integer", default=64, minimum=1),
    ClientSetting("backoff_base", "Backoff base (seconds)",
                  "Seconds before the first retry, doubled for each further one (default 0.5).",
                  "number", default=0.5, minimum=0.0, on_form=False),
)
"""Every connection extra the client reads, with its default and limits."""

CLIENT_DEFAULTS: Mapping[str, float] = {s.name: s.default for s in CLIENT_SETTINGS}
"""Setting name → default, e.g. ``CLIENT_DEFAULTS["timeout"] == 30.0``."""
