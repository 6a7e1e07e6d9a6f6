"""Accounts, credits, monthly usage and the mail outbox, in SQLite (stdlib ``sqlite3``).

One connection, guarded by a lock, serves every thread; each change is one short
``BEGIN IMMEDIATE`` transaction. Credits are spent with a conditional
``UPDATE ... SET remaining = remaining - ? WHERE ... AND remaining >= ?`` whose row count
says whether the spend happened, so two concurrent requests can never spend the same
credit twice, even with several processes on one database file.

Secrets are never stored in clear: API tokens and activation codes are kept as SHA-256
digests (looked up by digest, then compared with :func:`hmac.compare_digest`), passwords
as salted SHA-256.

Credits are a monthly allowance: the first spend or read of a new calendar month (UTC,
by :attr:`Store.clock`) resets the remaining credits to the account's allowance; top-ups
count for the current month. Usage is kept per account and month (``YYYY-MM``).

Example::

    >>> store = Store()
    >>> account = store.create_account(email="a@example.com", token="t0k3n", monthly_allowance=3)
    >>> store.spend(account.id, 2), store.spend(account.id, 2), store.remaining(account.id)
    (True, False, 1)
    >>> store.usage(account.id, store.month())
    2
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pendulum

from namelookup_emulator.signup import fold_email

ACTIVE = "active"
AWAITING_ACTIVATION = "awaiting_activation"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts (
    id INTEGER PRIMARY KEY,
    email TEXT NOT NULL UNIQUE COLLATE NOCASE,
    email_key TEXT,
    token_hash TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    activation_hash TEXT UNIQUE,
    status TEXT NOT NULL,
    monthly_allowance INTEGER NOT NULL,
    remaining INTEGER NOT NULL,
    credits_month TEXT NOT NULL,
    newsletter INTEGER NOT NULL DEFAULT 0,
    locale TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
    account_id INTEGER NOT NULL REFERENCES accounts (id),
    month TEXT NOT NULL,
    credits_used INTEGER NOT NULL,
    PRIMARY KEY (account_id, month)
);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY,
    recipient TEXT NOT NULL COLLATE NOCASE,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    link TEXT NOT NULL,
    sent_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_recipient ON outbox (recipient);
"""

_EMAIL_KEY_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS accounts_email_key ON accounts (email_key)"

_ACCOUNT_COLUMNS = "id, email, status, remaining, monthly_allowance"


def _utc_now() -> pendulum.DateTime:
    return pendulum.now("UTC")


def digest(secret: str) -> str:
    """The SHA-256 hex digest under which a token or activation code is stored."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _password_hash(password: str) -> str:
    salt = secrets.token_hex(16)
    return f"sha256${salt}${hashlib.sha256((salt + password).encode()).hexdigest()}"


class AccountExists(ValueError):
    """The e-mail address or the token belongs to an account already."""


@dataclass(frozen=True, slots=True)
class Account:
    """One account as stored (never with its secrets).

    :param id: the row id.
    :param email: the registered address.
    :param status: ``awaiting_activation`` or ``active``.
    :param remaining: credits left this month.
    :param monthly_allowance: credits granted at the start of each month.
    """

    id: int
    email: str
    status: str
    remaining: int
    monthly_allowance: int

    @property
    def active(self) -> bool:
        return self.status == ACTIVE


class Store:
    """The emulator's state in one SQLite database.

    :param path: a database file, or ``":memory:"`` (the default) for a private in-memory one.
    :param clock: returns the current time; tests replace it to move between months.
    """

    def __init__(self, path: str = ":memory:", *,
                 clock: Callable[[], pendulum.DateTime] | None = None) -> None:
        self.path = path
        self.clock: Callable[[], pendulum.DateTime] = clock or _utc_now
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        if path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        with self._lock:
            self._conn.executescript(_SCHEMA)
        self._add_email_keys()

    def _add_email_keys(self) -> None:
        """Give a database of an older emulator the ``email_key`` column (the address folded
        with Unicode rules, unique). Of two old accounts whose addresses fold alike, the
        later one keeps no key: both still work, neither address can sign up again."""
        with self._transaction() as conn:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(accounts)")}
            if "email_key" not in columns:
                conn.execute("ALTER TABLE accounts ADD COLUMN email_key TEXT")
            conn.execute(_EMAIL_KEY_INDEX)
            for account_id, email in conn.execute("SELECT id, email FROM accounts WHERE email_key IS NULL"
                                                  " ORDER BY id").fetchall():
                with contextlib.suppress(sqlite3.IntegrityError):
                    conn.execute("UPDATE accounts SET email_key = ? WHERE id = ?", (fold_email(email), account_id))

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def freeze_clock(self, moment: pendulum.DateTime | None) -> None:
        """Stop the clock at ``moment`` (for tests and demos of month changes); None: real time."""
        if moment is None:
            self.clock = _utc_now
        else:
            fixed = moment.in_timezone("UTC")
            self.clock = lambda: fixed

    @property
    def clock_frozen(self) -> bool:
        """Whether the clock is not the real time."""
        return self.clock is not _utc_now

    def month(self) -> str:
        """The current calendar month, ``YYYY-MM``."""
        return self.clock().format("YYYY-MM")

    def last_month(self) -> str:
        """The previous calendar month, ``YYYY-MM``."""
        return self.clock().start_of("month").subtract(months=1).format("YYYY-MM")

    # accounts

    def create_account(self, *, email: str, token: str, monthly_allowance: int,
                       remaining: int | None = None, active: bool = True,
                       password: str | None = None, activation_code: str | None = None,
                       newsletter: bool = False, locale: str | None = None) -> Account:
        """Store a new account.

        :param email: its address (unique, case folded with Unicode rules: :func:`fold_email`).
        :param token: its API token (unique).
        :param monthly_allowance: credits per month.
        :param remaining: credits left now; defaults to the allowance.
        :param active: False for ``awaiting_activation``.
        :param password: dashboard password; a random one when None.
        :param activation_code: the code of the activation link (for inactive accounts).
        :raises AccountExists: when the address or token is taken.
        """
        remaining = monthly_allowance if remaining is None else remaining
        status = ACTIVE if active else AWAITING_ACTIVATION
        try:
            with self._transaction() as conn:
                cursor = conn.execute(
                    "INSERT INTO accounts (email, email_key, token_hash, password_hash, activation_hash, status,"
                    " monthly_allowance, remaining, credits_month, newsletter, locale, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (email, fold_email(email), digest(token), _password_hash(password or secrets.token_urlsafe(12)),
                     digest(activation_code) if activation_code else None, status,
                     monthly_allowance, remaining, self.month(), int(newsletter), locale,
                     self.clock().to_iso8601_string()))
        except sqlite3.IntegrityError as exc:
            raise AccountExists("an account with this e-mail address or token exists") from exc
        return Account(int(cursor.lastrowid or 0), email, status, remaining, monthly_allowance)

    def email_registered(self, email: str) -> bool:
        """Whether an account (active or not) has this address, in any case (:func:`fold_email`)."""
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM accounts WHERE email_key = ? OR email = ?",
                                     (fold_email(email), email)).fetchone()
        return row is not None

    def account_for_token(self, token: str) -> Account | None:
        """The account whose API token this is, active or not; None for an unknown token."""
        wanted = digest(token)
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_ACCOUNT_COLUMNS}, token_hash FROM accounts WHERE token_hash = ?",
                (wanted,)).fetchone()
        if row is None or not hmac.compare_digest(row[5], wanted):
            return None
        return Account(*row[:5])

    def activate(self, code: str) -> Account | None:
        """Activate the account of an activation code (idempotent); None for an unknown code."""
        wanted = digest(code)
        with self._transaction() as conn:
            row = conn.execute(f"SELECT {_ACCOUNT_COLUMNS}, activation_hash FROM accounts"
                               " WHERE activation_hash = ?", (wanted,)).fetchone()
            if row is None or not hmac.compare_digest(row[5], wanted):
                return None
            conn.execute("UPDATE accounts SET status = ? WHERE id = ?", (ACTIVE, row[0]))
        return Account(row[0], row[1], ACTIVE, row[3], row[4])

    # credits and usage

    def _roll_month(self, conn: sqlite3.Connection, account_id: int, month: str) -> None:
        conn.execute("UPDATE accounts SET remaining = monthly_allowance, credits_month = ?"
                     " WHERE id = ? AND credits_month < ?", (month, account_id, month))

    def spend(self, account_id: int, credits: int) -> bool:
        """Take ``credits`` from the account if it has them all; record the usage.

        :returns: True when spent, False (nothing changed) when too few credits are left.
        """
        if credits < 0:
            raise ValueError("credits must not be negative")
        month = self.month()
        with self._transaction() as conn:
            self._roll_month(conn, account_id, month)
            cursor = conn.execute("UPDATE accounts SET remaining = remaining - ?"
                                  " WHERE id = ? AND remaining >= ?", (credits, account_id, credits))
            if cursor.rowcount != 1:
                return False
            if credits:
                conn.execute("INSERT INTO usage (account_id, month, credits_used) VALUES (?, ?, ?)"
                             " ON CONFLICT (account_id, month)"
                             " DO UPDATE SET credits_used = credits_used + excluded.credits_used",
                             (account_id, month, credits))
        return True

    def remaining(self, account_id: int) -> int:
        """Credits left this month (after the monthly reset, if one is due)."""
        month = self.month()
        with self._transaction() as conn:
            self._roll_month(conn, account_id, month)
            row = conn.execute("SELECT remaining FROM accounts WHERE id = ?", (account_id,)).fetchone()
        return int(row[0]) if row else 0

    def usage(self, account_id: int, month: str) -> int:
        """Credits the account used in ``month`` (``YYYY-MM``)."""
        with self._lock:
            row = self._conn.execute("SELECT credits_used FROM usage WHERE account_id = ? AND month = ?",
                                     (account_id, month)).fetchone()
        return int(row[0]) if row else 0

    def set_usage(self, account_id: int, month: str, credits_used: int) -> None:
        """Overwrite the recorded usage of one month (admin: seed history for demos)."""
        with self._transaction() as conn:
            conn.execute("INSERT INTO usage (account_id, month, credits_used) VALUES (?, ?, ?)"
                         " ON CONFLICT (account_id, month) DO UPDATE SET credits_used = excluded.credits_used",
                         (account_id, month, credits_used))

    def top_up(self, account_id: int, *, add: int = 0, remaining: int | None = None,
               monthly_allowance: int | None = None) -> Account:
        """Change an account's credits (admin).

        :param add: credits added to what is left (may be negative; never below 0).
        :param remaining: set the credits left to exactly this (before ``add``).
        :param monthly_allowance: a new monthly allowance.
        """
        month = self.month()
        with self._transaction() as conn:
            self._roll_month(conn, account_id, month)
            if monthly_allowance is not None:
                conn.execute("UPDATE accounts SET monthly_allowance = ? WHERE id = ?",
                             (monthly_allowance, account_id))
            if remaining is not None:
                conn.execute("UPDATE accounts SET remaining = ? WHERE id = ?", (remaining, account_id))
            conn.execute("UPDATE accounts SET remaining = MAX(0, remaining + ?) WHERE id = ?",
                         (add, account_id))
            row = conn.execute(f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE id = ?",
                               (account_id,)).fetchone()
        if row is None:
            raise KeyError(account_id)
        return Account(*row)

    # mail

    def send_mail(self, recipient: str, subject: str, body: str, link: str) -> None:
        """Put a message in the outbox (the emulator's stand-in for sending e-mail)."""
        with self._transaction() as conn:
            conn.execute("INSERT INTO outbox (recipient, subject, body, link, sent_at) VALUES (?, ?, ?, ?, ?)",
                         (recipient, subject, body, link, self.clock().to_iso8601_string()))

    def outbox(self, recipient: str | None = None) -> list[dict[str, Any]]:
        """Messages sent, oldest first; only those to ``recipient`` (any case) when given."""
        query = "SELECT recipient, subject, body, link, sent_at FROM outbox"
        params: tuple[str, ...] = ()
        if recipient is not None:
            query += " WHERE recipient = ?"
            params = (recipient,)
        with self._lock:
            rows = self._conn.execute(query + " ORDER BY id", params).fetchall()
        return [{"to": to, "subject": subject, "body": body, "link": link, "sent_at": sent_at}
                for to, subject, body, link, sent_at in rows]
