"""Who may call the emulator's admin endpoints (accounts, credits, faults, ...).

On a loopback address they are open, as a local test service's should be. The emulator
refuses to listen on any other address unless an admin token is given; with a token
(on any address) every admin call must carry it in the ``X-Emulator-Admin-Token``
header, compared in constant time. The activation link, health, docs, upgrade page and
origin map stay public: they hold nothing an admin token protects (an activation code
is its own secret).

Example::

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    >>> check_binding("0.0.0.0", None)
    Traceback (most recent call last):
    ...
    ValueError: refusing to listen on 0.0.0.0 without an admin token: ...
"""

from __future__ import annotations

import ipaddress
import secrets

ADMIN_TOKEN_HEADER = "X-Emulator-Admin-Token"  # noqa: S105 (a header name)
ADMIN_TOKEN_ENV = "NAMELOOKUP_EMULATOR_ADMIN_TOKEN"  # noqa: S105 (a variable name)
"""Environment variable that passes ``--admin-token`` without showing it in ``ps``."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only reaches this machine."""
    name = host.strip().strip("[]").lower()
    if name in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_binding(host: str, admin_token: str | None) -> None:
    """Refuse to serve the admin endpoints unauthenticated beyond loopback.

    :raises ValueError: ``host`` is not loopback and no admin token is set.
    """
    if not admin_token and not is_loopback(host):
        raise ValueError(f"refusing to listen on {host} without an admin token: its /emulator admin "
                         f"endpoints create accounts and credits. Give --admin-token (or "
                         f"${ADMIN_TOKEN_ENV}), or bind 127.0.0.1.")


def admin_allowed(admin_token: str | None, presented: str | None) -> bool:
    """Whether an admin call may proceed: no token configured, or the right one presented."""
    if not admin_token:
        return True
    return presented is not None and secrets.compare_digest(presented.encode(), admin_token.encode())
