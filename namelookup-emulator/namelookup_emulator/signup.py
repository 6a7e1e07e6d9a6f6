"""Sign-up rules that the spec leaves to the service: disposable domains and attempt limits.

* An address whose domain (or a parent domain) is in :data:`DISPOSABLE_DOMAINS` is
  refused with ``signup-email-rejected``.
* An address registers once in any case, folded with Unicode rules (:func:`fold_email`):
  after ``jörg@bücher.de``, ``JÖRG@BÜCHER.DE`` is ``email-already-registered``.
* :class:`SignupLimiter` counts sign-up attempts per client address in a sliding window;
  an attempt beyond the limit is refused (and not counted) with HTTP 429
  ``signup-rate-limit`` and a ``Retry-After`` of the seconds until the oldest attempt
  leaves the window.

Example::

    >>> is_disposable("someone@mailinator.com"), is_disposable("someone@example.com")
    (True, False)
    >>> fold_email("JÖRG@BÜCHER.DE") == fold_email("jo\u0308rg@bücher.de")
    True
    >>> limiter = SignupLimiter(max_attempts=1, window_seconds=60)
    >>> limiter.attempt("10.0.0.1") is None, limiter.attempt("10.0.0.1") > 0
    (True, True)
"""

from __future__ import annotations

import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable

DISPOSABLE_DOMAINS: frozenset[str] = frozenset({
    "10minutemail.com", "dispostable.com", "fakeinbox.com", "getnada.com", "guerrillamail.com",
    "guerrillamail.net", "maildrop.cc", "mailinator.com", "mailnesia.com", "mintemail.com",
    "mohmal.com", "sharklasers.com", "temp-mail.org", "tempmail.com", "throwawaymail.com",
    "trashmail.com", "yopmail.com",
})
"""Well-known disposable-mail domains (a small built-in list; subdomains match too)."""


def is_disposable(email: str, domains: Iterable[str] = DISPOSABLE_DOMAINS) -> bool:
    """Whether the address's domain, or a domain above it, is a disposable-mail domain.

    :param email: a syntactically valid address.
    :param domains: the disposable domains (lower case).
    """
    blocked = domains if isinstance(domains, (set, frozenset)) else frozenset(domains)
    labels = email.rsplit("@", 1)[-1].strip().lower().rstrip(".").split(".")
    return any(".".join(labels[i:]) in blocked for i in range(len(labels) - 1))


def fold_email(email: str) -> str:
    """The key under which an address is registered: the whole address case-folded with
    Unicode rules (``ß`` is ``ss``) and NFC-normalised, so that one person's address in
    another case or composition is the same account.

    >>> fold_email(" Strauß@Example.DE ")
    'strauss@example.de'
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", email.strip()).casefold())


class SignupLimiter:
    """At most ``max_attempts`` sign-up attempts per client address in ``window_seconds``.

    :param max_attempts: attempts allowed in the window.
    :param window_seconds: the sliding window's length.
    :param clock: a monotonic clock in seconds (tests may replace it).
    """

    def __init__(self, max_attempts: int = 20, window_seconds: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_attempts = max_attempts
        self.window_seconds = window_seconds
        self._clock = clock
        self._attempts: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def configure(self, *, max_attempts: int | None = None, window_seconds: float | None = None) -> None:
        """Change the limit (and forget every attempt counted so far)."""
        with self._lock:
            if max_attempts is not None:
                self.max_attempts = max_attempts
            if window_seconds is not None:
                self.window_seconds = window_seconds
            self._attempts.clear()

    def reset(self) -> None:
        """Forget every attempt counted so far."""
        with self._lock:
            self._attempts.clear()

    def attempt(self, address: str) -> float | None:
        """Count an attempt from ``address``.

        :returns: None when allowed, else the seconds to wait before the next attempt.
        """
        now = self._clock()
        with self._lock:
            recent = self._attempts.setdefault(address, deque())
            while recent and recent[0] <= now - self.window_seconds:
                recent.popleft()
            if len(recent) >= self.max_attempts:
                return max(0.0, recent[0] + self.window_seconds - now) if recent else self.window_seconds
            recent.append(now)
            return None

    def to_json(self) -> dict[str, float | int]:
        """The current limit, as ``GET /emulator/signup-limit`` shows it."""
        return {"max_attempts": self.max_attempts, "window_seconds": self.window_seconds}
