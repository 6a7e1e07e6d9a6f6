"""Reading request bodies as the service does: the size limit, the JSON media type and a
JSON reader that refuses what the service cannot read as numbers.

Example::

    >>> parse_body(b'{"id": 7, "x": 1.5}')
    {'id': 7, 'x': 1.5}
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request

from namelookup_emulator.admin_access import is_json
from namelookup_emulator.endpoints import fail
from namelookup_emulator.rules import OversizedInteger

_MAX_INTEGER_DIGITS = 40


class _BodyRefused(ValueError):
    """A JSON body that parses but cannot be read as the service reads numbers; the message
    is written for the caller."""


def _refuse_constant(name: str) -> Any:
    raise _BodyRefused(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BodyRefused(f"the number {text[:40]} is too large for a 64-bit floating-point number")
    return value


def _integer(text: str) -> int | OversizedInteger:
    return int(text) if len(text) <= _MAX_INTEGER_DIGITS else OversizedInteger(text)


def parse_body(body: bytes) -> Any:
    """Decode a request body as the service does, or raise ``invalid-json`` with a detail
    for a user (never a parser's internals).

    * ``NaN``/``Infinity`` and numbers beyond a 64-bit float (``1e400``) are refused.
    * An integer of more than 40 digits is kept as its digits
      (:class:`~.rules.OversizedInteger`), so an ``id`` of
      5,000 digits answers ``invalid-id`` rather than a parser error.
    * Arrays and objects nested deeper than the reader can follow are refused.

    >>> parse_body(b'[1e400]')
    Traceback (most recent call last):
    ...
    Refusal: invalid-json: The body is not valid JSON for this service: the number 1e400 ...
    """
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float,
                          parse_int=_integer)
    except _BodyRefused as exc:
        raise fail("invalid-json", f"The body is not valid JSON for this service: {exc}.") from None
    except RecursionError:
        raise fail("invalid-json", "The body nests arrays or objects too deeply; a request is one "
                   "query object or an array of query objects.") from None
    except UnicodeDecodeError:
        raise fail("invalid-json", "The body is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise fail("invalid-json", f"The body is not valid JSON: {exc.msg} at line {exc.lineno}, "
                   f"column {exc.colno}.") from None
    except ValueError:
        raise fail("invalid-json", "The body is not valid JSON.") from None


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The whole body, or ``generic-error`` as soon as it grows beyond ``max_bytes``."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise fail("generic-error", f"The body is larger than {max_bytes} bytes.")
    return bytes(body)


async def read_json(request: Request, max_bytes: int) -> Any:
    """A service request's JSON body: ``content-type-missing``, ``missing-json`` or
    ``invalid-json`` when it is not one."""
    if not is_json(request.headers.get("content-type")):
        raise fail("content-type-missing", "Send the body as JSON with the header "
                   "'Content-Type: application/json'.")
    body = await read_body(request, max_bytes)
    if not body.strip():
        raise fail("missing-json", "No JSON body found in the call; send the body with POST.")
    return parse_body(body)
