"""The service's status identifiers and their HTTP codes, and the refusal that carries one.

Written from the spec's error table (``name-lookup-api-v2.md``, "Errors") and the wire
notes: ``limit-exceeded`` is 401, ``endpoint-not-found`` 404, ``signup-rate-limit`` 429,
every other identifier 400. Beyond the spec the emulator answers ``too-many-requests``
(429, its per-token limits and injected faults) and ``generic-error`` with 408 or 500
where a request timed out or the emulator failed; those set the code themselves.

Example::

    >>> HTTP_STATUS["limit-exceeded"], HTTP_STATUS["invalid-json"]
    (401, 400)
    >>> refusal = Refusal("invalid-country-code", "country must be a code of the country table.", field="country")
    >>> refusal.http_status, str(refusal)
    (400, 'invalid-country-code [country]: country must be a code of the country table.')
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_SPEC_TABLE = """
endpoint-not-found 404
limit-exceeded 401
parameter-first-name-invalid 400
parameter-full-name-invalid 400
parameter-email-invalid 400
key-parameter-missing 400
invalid-key 400
invalid-country-code 400
invalid-ip-address 400
generic-error 400
invalid-json 400
invalid-locale 400
invalid-id 400
mandatory-parameter-missing 400
content-type-missing 400
missing-json 400
too-many-queries 400
too-many-queries-api-key 400
authorization-header-missing 400
invalid-auth-token 400
email-invalid 400
password-invalid 400
label-invalid 400
email-account-not-found 400
invalid-list-of-names 400
terms-not-accepted 400
email-already-registered 400
signup-rate-limit 429
signup-email-rejected 400
"""

HTTP_STATUS: Mapping[str, int] = MappingProxyType({
    status_id: int(code) for status_id, code in (line.split() for line in _SPEC_TABLE.strip().splitlines())})
"""Status identifier → HTTP code: the spec's error table, every row."""

EMULATOR_STATUS: Mapping[str, int] = MappingProxyType({"too-many-requests": 429})
"""Identifiers of the emulator's own, beyond the spec (its per-token limits)."""


class Refusal(Exception):
    """A request the service refuses with a status identifier (``raise Refusal(...)`` in a handler).

    :param status_id: the identifier (``title`` of the problem details).
    :param detail: the human-readable text.
    :param field: the request field it is about, when there is one.
    :param http_status: the HTTP code; the table's code for ``status_id`` when None.
    :param retry_after: seconds for a ``Retry-After`` header (429 answers).
    """

    def __init__(self, status_id: str, detail: str, *, field: str | None = None,
                 http_status: int | None = None, retry_after: float | None = None) -> None:
        self.status_id = status_id
        self.detail = detail
        self.field = field
        self.http_status = http_status if http_status is not None else status_code(status_id)
        self.retry_after = retry_after
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" [{self.field}]" if self.field else ""
        return f"{self.status_id}{where}: {self.detail}"


def status_code(status_id: str) -> int:
    """The HTTP code of an identifier (400 for one neither table knows)."""
    return HTTP_STATUS.get(status_id) or EMULATOR_STATUS.get(status_id, 400)
