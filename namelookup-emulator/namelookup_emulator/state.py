"""Everything one emulator instance knows: settings, store, name data, faults and stats.

:class:`EmulatorState` is what tests and demos drive from Python (the HTTP admin API
under ``/emulator/...`` does the same over the wire).

Example::

    >>> state = EmulatorState()
    >>> token = state.create_account(credits=5)
    >>> state.top_up(token, 10)
    15
    >>> state.close()
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field

from namelookup_emulator.facts import (
    FREE_REQUESTS_PER_MONTH,
    LOOKUPS_PER_KEY_REQUEST,
    QUERIES_PER_REQUEST,
)
from namelookup_emulator.faults import FaultInjector, Stats
from namelookup_emulator.limits import TokenLimiter
from namelookup_emulator.links import checked_public_url
from namelookup_emulator.names import NameData, load_names
from namelookup_emulator.signup import DISPOSABLE_DOMAINS, SignupLimiter
from namelookup_emulator.store import Account, Store


@dataclass(frozen=True)
class EmulatorConfig:
    """Settings of one emulator instance.

    :param db_path: SQLite database file, or ``":memory:"``.
    :param free_requests_per_month: credits a sign-up grants each month.
    :param max_queries: queries allowed in one bearer-token request (``too-many-queries`` above).
    :param key_max_queries: queries allowed in one request authenticated by the legacy
        ``key`` parameter (``too-many-queries-api-key`` above).
    :param signup_max_attempts: sign-up attempts per client address in the window.
    :param signup_window_seconds: length of that window.
    :param disposable_domains: domains refused at sign-up (``signup-email-rejected``).
    :param max_body_bytes: largest request body read (``generic-error`` above).
    :param admin_token: when set, every admin call (``/emulator/accounts``, ``faults`` ...)
        must send it in ``X-Emulator-Admin-Token``; needed to listen beyond loopback.
    :param public_url: the URL clients reach the emulator at (``https://names.example.test``,
        a path prefix allowed), when it is not the address it listens on (a reverse proxy, a
        container's name). Every link the emulator writes starts with it, and admin calls
        may name its host in ``Host`` (:mod:`.links`, :mod:`.admin_access`). None: the
        listening address.
    :param header_timeout: seconds a client has to send a whole request head, from the
        connection or from the first byte of the request; then 408 and the connection is
        closed (:mod:`.read_timeouts`).
    :param body_timeout: seconds a client has to send a whole request body once its head
        arrived; then 408, nothing charged, the connection closed.
    :raises ValueError: for a public URL that is not a plain http(s) URL, or a timeout that
        is not a positive number.
    """

    db_path: str = ":memory:"
    free_requests_per_month: int = FREE_REQUESTS_PER_MONTH
    max_queries: int = QUERIES_PER_REQUEST
    key_max_queries: int = LOOKUPS_PER_KEY_REQUEST
    signup_max_attempts: int = 20
    signup_window_seconds: float = 600.0
    disposable_domains: frozenset[str] = DISPOSABLE_DOMAINS
    max_body_bytes: int = 1 << 20
    admin_token: str | None = field(default=None, repr=False)
    public_url: str | None = None
    header_timeout: float = 10.0
    body_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.public_url is not None:
            object.__setattr__(self, "public_url", checked_public_url(self.public_url))
        for name in ("header_timeout", "body_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


class EmulatorState:
    """The live state of one emulator.

    :param config: its settings (defaults: in-memory database, the spec's limits).
    :param names: the name data; loaded from gender-guesser when None.
    """

    def __init__(self, config: EmulatorConfig | None = None, *, names: NameData | None = None) -> None:
        self.config = config or EmulatorConfig()
        self.names = names if names is not None else load_names()
        self.store = Store(self.config.db_path)
        self.faults = FaultInjector()
        self.limiter = TokenLimiter(self.faults)
        self.stats = Stats()
        self.signup_limiter = SignupLimiter(self.config.signup_max_attempts,
                                            self.config.signup_window_seconds)

    def close(self) -> None:
        """Close the database."""
        self.store.close()

    def create_account(self, *, token: str | None = None, credits: int = FREE_REQUESTS_PER_MONTH,
                       email: str | None = None, monthly_allowance: int | None = None) -> str:
        """Create an activated account and return its API token.

        :param token: the token to use; a random one when None.
        :param credits: credits left now.
        :param email: its address; a unique ``@emulator.invalid`` one when None.
        :param monthly_allowance: credits granted each new month; ``credits`` when None.
        :raises ~namelookup_emulator.store.AccountExists: token or address taken.
        """
        token = token or secrets.token_urlsafe(32)
        email = email or f"account-{secrets.token_hex(6)}@emulator.invalid"
        self.store.create_account(email=email, token=token, remaining=credits,
                                  monthly_allowance=credits if monthly_allowance is None else monthly_allowance)
        return token

    def account(self, token: str) -> Account:
        """The account of a token (active or not).

        :raises KeyError: for an unknown token.
        """
        account = self.store.account_for_token(token)
        if account is None:
            raise KeyError("no account has this token")
        return account

    def top_up(self, token: str, credits: int = 0, *, remaining: int | None = None) -> int:
        """Add credits to an account (or set what is left) and return its credits left.

        :param token: the account's API token.
        :param credits: credits to add (negative to take away; never below 0).
        :param remaining: set the credits left to exactly this first.
        """
        return self.store.top_up(self.account(token).id, add=credits, remaining=remaining).remaining

    def remaining_credits(self, token: str) -> int:
        """Credits the account has left this month."""
        return self.store.remaining(self.account(token).id)
