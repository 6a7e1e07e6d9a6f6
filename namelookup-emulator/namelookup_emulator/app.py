"""The emulator's HTTP layer: a Starlette app that answers like Name Lookup Service API v2.

The admin endpoints under ``/emulator/...`` create accounts with any number of credits.
On loopback they are open to local programs but closed to web pages (see "Emulator
endpoints" below); the emulator refuses to listen on another address unless an admin
token is given, and with a token every admin call must send it
(:mod:`~namelookup_emulator.admin_access`). The code is split by job:
:mod:`~namelookup_emulator.service` (``/v2/...``),
:mod:`~namelookup_emulator.admin` (``/emulator/...``),
:mod:`~namelookup_emulator.middleware` (stats, faults, log) and
:mod:`~namelookup_emulator.read_timeouts` (slow clients).

Service endpoints (JSON bodies need ``Content-Type: application/json``)
-----------------------------------------------------------------------

=========================================  =============  ==================================
``POST /v2/sign-up``                       none           create an account (awaiting activation)
``POST /v2/gender``                        token or key   object → one result; array → a bare array
``POST /v2/gender/by-first-name``          token or key   as ``/v2/gender``, reads ``first_name`` only
``POST /v2/gender/by-full-name``           token or key   as ``/v2/gender``, reads ``full_name`` only
``POST /v2/gender/by-email-address``       token or key   as ``/v2/gender``, reads ``email`` only
``POST /v2/gender/by-...-multiple``        token or key   the same three for arrays
``POST /v2/country-of-origin``             token or key   one object; 2 credits
``GET /v2/statistic``                      token or key   credits left and last month's usage; 0 credits
=========================================  =============  ==================================

* The aliases fix the name field: ``by-first-name*`` read ``first_name``,
  ``by-full-name*`` read ``full_name``, ``by-email-address*`` read ``email``; other name
  fields of the object are ignored, and an object without the alias's field is
  ``mandatory-parameter-missing``. Every gender endpoint answers in the shape it was
  sent: an object gives one result, an array a bare array of results (in request
  order, each with its own ``input`` echo and ``details.credits_used``).
  ``/v2/gender`` picks the first present of ``first_name``, ``full_name``, ``email``.
* Hints localise gender answers with the precedence ``country`` > region of ``locale``
  > country of ``ip`` (:mod:`~namelookup_emulator.geoip`);
  ``details.country`` is the hint country when its data was used, else null.
  Country of origin ignores hints.
* An empty array is ``mandatory-parameter-missing``; more than 100 queries is
  ``too-many-queries``; one invalid element fails the whole request with that
  element's identifier, its index named in ``detail`` (``query 3: ...``).

Answers come from gender-guesser's name data (:mod:`~namelookup_emulator.names`,
:mod:`~namelookup_emulator.origin`; full-name and e-mail splitting in
:mod:`~namelookup_emulator.lookup_results`). A name that is not in the data
answers ``result_found: false``, ``gender: "unknown"``, ``probability: 0`` and
``details.samples: 0``; a name the data gives exactly as often to both genders answers
``gender: "unknown"`` and ``result_found: false`` with ``probability: 0.5``.
``details.duration`` is the request's real processing time in whole milliseconds
(every element of an array carries the request's time). ``first_name`` is written as the
data spells it; other names are capitalised when sent all lower or all upper case.

Input rules: the emulator's own reading of the spec and the wire notes, written apart from
the provider's validation so that each checks the other
(:mod:`~namelookup_emulator.rules`, e-mail syntax in
:mod:`~namelookup_emulator.addresses`). Beyond the spec's lengths: names
are NFC-normalised and white-space-collapsed first, control characters and lone surrogates
are refused, a value without a letter is its field's ``parameter-*-invalid`` (no first
name can be read from ``","`` or ``12345@example.com``), a ``country`` code folds case in
ASCII only (``"ıt"`` is not IT), an address needs a dot-atom local part and LDH domain
labels (``anna<script>@x.io``, ``anna@[127.0.0.1]`` are refused, ``jörg@bücher.de`` is
answered), ``id`` is an integer from -2^63 to 2^63-1 or a string of at most 50 characters
(a longer integer, even one of 5,000 digits, is ``invalid-id``). Nothing refused is
charged. ``invalid-json`` covers bodies that do not parse, are not UTF-8, hold ``NaN`` or
``Infinity`` or a number beyond a 64-bit float (``1e400``), or nest arrays or objects too
deeply (100,000 levels); its ``detail`` says which, in words for a user.

Checks run in this order, and the first failure answers: the route
(``endpoint-not-found``, also for a wrong method or a trailing slash) → the body
(``content-type-missing``, ``missing-json``, ``invalid-json``) → authentication → the
query rules of :func:`~namelookup_emulator.rules.read_query`
(``too-many-queries-api-key``, ``too-many-queries``, then each query) → credits.

Authentication: ``Authorization: Bearer <token>``; without the header, the legacy
``?key=<token>`` query parameter is accepted instead (same tokens). Header absent and
no key → ``authorization-header-missing``; a header that is not ``Bearer <token>``, an
unknown token, or the token of an account still awaiting activation →
``invalid-auth-token``; ``key=`` empty → ``key-parameter-missing``; unknown or not yet
activated key → ``invalid-key``; more than 3 lookups in a request with a key →
``too-many-queries-api-key``.

Credits: a gender query costs 1, a country-of-origin query 2 (``details.credits_used``);
an array is charged per query, all or nothing: if the request costs more than is left,
it is refused whole with 401 ``limit-exceeded`` (with ``upgrade_url``) and nothing is
charged. Refused requests of any kind are never charged. The answer is built and
encoded before the credits are taken, so no 5xx ever costs a credit: for any body the
emulator answers either 2xx at the documented price or an error that charged nothing.
The allowance is monthly (calendar month, UTC).

Fault injection, when switched on, acts on every ``/v2/...`` request before all of this
(:mod:`~namelookup_emulator.faults`), and so do the per-token limits of
requests in flight and per second (:mod:`~namelookup_emulator.limits`):
429 ``too-many-requests`` with ``Retry-After``, never charged.

Errors are RFC 7807 problem details (``application/problem+json``)::

    {"status": 400, "type": "<base>/en/api-docs/v2/index/problem-details/invalid-json",
     "title": "invalid-json", "detail": "..."}

Links come from configuration, never from the request: ``<base>`` in every problem
``type``, ``docs_url``, ``upgrade_url``, ``country_of_origin_map_url`` and the activation
link in the outbox is the public URL (``--public-url``, ``$NAMELOOKUP_EMULATOR_PUBLIC_URL``
or ``EmulatorConfig(public_url=...)``) when one is set, else the address the connection
arrived at (the listening address; with ``--host 0.0.0.0`` the machine's address the
client used). ``Host``, ``X-Forwarded-Host``, ``X-Forwarded-Proto`` and ``Forwarded`` are
ignored, and so is ``X-Forwarded-For``: the sign-up limit counts the real peer address
(:mod:`~namelookup_emulator.links`).

with the spec's HTTP code for each identifier. ``generic-error`` is answered with 400
for request problems the table has no identifier for (a body over 1 MiB, an unknown
activation link) and with 500 when something fails unexpectedly inside the emulator:
never a stack trace.

Slow clients (:mod:`~namelookup_emulator.read_timeouts`): a request head
must arrive within 10 s (``--header-timeout``, ``EmulatorConfig(header_timeout=...)``),
counted from the connection or from the first byte of the next request on a kept-alive
one, and a body within 30 s of its head (``--body-timeout``), however slowly they trickle
in; then the answer is 408 ``generic-error`` with ``Connection: close`` (a connection that
sent no byte is just closed), and nothing is charged. A kept-alive connection idle for 5 s
is closed. A client that disconnects before its body arrived is logged as
``disconnected`` (INFO) and counted in ``client_disconnects``, never as a 500.

Sign-up: ``validate_signup`` rules (``email-invalid``, ``terms-not-accepted``;
``newsletter`` must be ``true`` or ``false`` when given, else ``generic-error`` naming
``newsletter``; ``locale`` is the account's language as the spec says, a two-letter
language code (``en``, ``de``, ``es`` get mails in that language, others in English),
else ``invalid-locale``); a disposable domain → ``signup-email-rejected``; an address
already registered in any case → ``email-already-registered`` (the whole address
case-folded with Unicode rules and NFC-normalised: after ``jörg@bücher.de``,
``JÖRG@BÜCHER.DE`` and ``jörg@bücher.de`` written with a combining diaeresis are the same
account, for admin-created accounts too); more than 20 attempts from one
client address in 10 minutes (configurable) → 429 ``signup-rate-limit`` with
``Retry-After``. The account gets a random password and token (``secrets``) and waits
for activation: the activation link goes to the outbox.

Emulator endpoints
------------------

Every one of them except ``activate``, ``health``, ``docs``, ``upgrade`` and ``map`` (which
hold nothing to protect) is an admin endpoint, open to local programs and closed to web
pages, which a local browser could otherwise make call it (a cross-site form, a fetch
from any origin, a DNS-rebinding page). An admin call must pass, in this order:

1. ``Host`` names this machine: a loopback host (``127.0.0.0/8``, ``[::1]``, ``localhost``;
   any port or none), the host of the public URL, or the IP address the connection arrived
   at; else 403 ``generic-error``. (A rebinding page reaches 127.0.0.1 under its own name.)
2. ``Origin`` is absent or the emulator's own (``http://`` plus the ``Host``, or the public
   URL's origin); ``null``, another site, or the same host under another port or scheme
   is 403 ``generic-error``.
3. With an admin token (``--admin-token``, required to listen beyond loopback), the header
   ``X-Emulator-Admin-Token: <token>``; else 401 ``invalid-auth-token``.
4. A POST or PUT sends ``Content-Type: application/json`` (a form or ``text/plain`` needs
   no permission from the emulator to be sent cross-site; JSON does); else 400
   ``content-type-missing``. An empty JSON body is ``{}``. GET and DELETE carry no body.

The helpers of ``EmulatorServer`` and ``EmulatorProcess`` (``create_account``,
``top_up``, ``set_faults``, ``stats``, ``outbox``) send JSON from loopback, with the token
when there is one.

* ``GET /emulator/activate?code=...``: the activation link from the outbox.
* ``GET /emulator/outbox[?email=...]``: sent messages ``[{to, subject, body, link, sent_at}]``.
* ``POST /emulator/accounts`` ``{api_token?, credits?=100, email?, monthly_allowance?}``:
  create an activated account; answers 201 with its ``api_token``.
* ``POST /emulator/accounts/credits`` ``{api_token, add?, remaining?, monthly_allowance?}``:
  top up (or set) credits; answers ``{remaining_credits}``.
* ``POST /emulator/accounts/usage`` ``{api_token, month: "YYYY-MM", credits_used}``:
  overwrite the recorded usage of a month.
* ``GET|PUT|DELETE /emulator/faults``: fault injection
  (:mod:`~namelookup_emulator.faults`); PUT replaces the whole
  configuration, DELETE switches faults off.
* ``GET|DELETE /emulator/stats``: request, fault, query and credit counters, requests
  refused by a per-token limit (``requests_limited``), clients gone before their body
  arrived (``client_disconnects``) and the most requests of one token seen in flight at
  once (``token_peak_in_flight``).
* ``GET|PUT /emulator/signup-limit`` ``{max_attempts, window_seconds}``: PUT also forgets
  the attempts counted so far.
* ``GET|PUT|DELETE /emulator/clock`` ``{now: ISO-8601}``: freeze the clock that decides
  the calendar month (credits and usage); DELETE goes back to real time.
* ``GET /emulator/health``, ``GET /emulator/docs`` (this text),
  ``GET /emulator/map?name=...`` (the country-of-origin map),
  ``GET /emulator/upgrade`` (where ``upgrade_url`` points).

Example::

    >>> app = create_app()
    >>> sorted(r.path for r in app.routes if r.path.startswith("/v2/gender/"))[:2]
    ['/v2/gender/by-email-address', '/v2/gender/by-email-address-multiple']
"""

from __future__ import annotations

import sys

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from namelookup_emulator.admin import admin_routes
from namelookup_emulator.endpoints import not_found, unexpected_outside_routes
from namelookup_emulator.middleware import ServiceMiddleware
from namelookup_emulator.read_timeouts import BodyDeadline
from namelookup_emulator.service import service_routes
from namelookup_emulator.state import EmulatorConfig, EmulatorState


def create_app(config: EmulatorConfig | None = None, *, state: EmulatorState | None = None) -> Starlette:
    """Build the emulator's ASGI app: the service's routes (:mod:`.service`), the emulator's
    own (:mod:`.admin`), behind the statistics, faults and log (:mod:`.middleware`) and the
    body deadline (:mod:`.read_timeouts`).

    :param config: settings for a new :class:`EmulatorState` (ignored when ``state`` is given).
    :param state: an existing state to serve (shared with the caller, e.g. a test).

    Example::

        app = create_app(EmulatorConfig(db_path="/tmp/emulator.db"))
        token = app.state.emulator.create_account(credits=1000)
        # uvicorn.run(app, host="127.0.0.1", port=8765)  (EmulatorServer adds the head deadline)
    """
    state = state if state is not None else EmulatorState(config)
    app = Starlette(routes=[*service_routes(), *admin_routes(docs=sys.modules[__name__].__doc__ or "")],
                    middleware=[Middleware(ServiceMiddleware, state=state), Middleware(BodyDeadline, state=state)],
                    exception_handlers={HTTPException: not_found, Exception: unexpected_outside_routes})
    app.router.redirect_slashes = False
    app.state.emulator = state
    return app
