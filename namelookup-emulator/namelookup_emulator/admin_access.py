"""Who may call the emulator's admin endpoints (accounts, credits, faults, ...).

On a loopback address they are open to local programs, as a local test service's should
be, but not to web pages a local browser shows, which can send requests there too. Every
admin call must pass, in this order (:func:`admin_refusal`):

1. **Host**: the request is addressed to this machine: a loopback host (``127.0.0.0/8``,
   ``[::1]``, ``localhost``, with any port or none), the host of the public URL
   (``--public-url``), or the IP address the connection arrived at. A DNS-rebinding page
   reaches 127.0.0.1 under a name of its own, which its ``Host`` gives away. A request
   without ``Host`` (HTTP/1.0) passes: no browser sends one.
2. **Origin**: absent (not a browser), or the emulator's own origin: ``http://`` plus the
   request's ``Host``, or the public URL's scheme, host and port. A page elsewhere,
   ``null`` (a sandboxed frame, a file) or the same host under another port or scheme is
   refused.
3. **Admin token**: when the emulator has one, the ``X-Emulator-Admin-Token`` header,
   compared in constant time. The emulator refuses to listen beyond loopback without one.
4. **JSON**: a POST or PUT has ``Content-Type: application/json`` (a form or a
   ``text/plain`` fetch of a web page is a "simple" cross-site request that needs no
   permission from the emulator; JSON does). GET and DELETE carry no body.

Refusals are problem details: 403 ``generic-error`` (Host, Origin), 401
``invalid-auth-token`` (token), 400 ``content-type-missing`` (JSON). The activation link,
health, docs, upgrade page and origin map stay public: they hold nothing an admin token
protects (an activation code is its own secret).

Example::

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    >>> host_allowed("localhost:8765", public_url=None, local_address="127.0.0.1")
    True
    >>> host_allowed("evil.example:8765", public_url=None, local_address="127.0.0.1")
    False
    >>> origin_allowed("http://127.0.0.1:8765", host_header="127.0.0.1:8765", public_url=None)
    True
    >>> origin_allowed("http://evil.example", host_header="127.0.0.1:8765", public_url=None)
    False
    >>> check_binding("0.0.0.0", None)
    Traceback (most recent call last):
    ...
    ValueError: refusing to listen on 0.0.0.0 without an admin token: ...
"""

from __future__ import annotations

import ipaddress
import secrets
import urllib.parse
from collections.abc import Mapping

from namelookup_emulator.links import public_host

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


def host_name(host_header: str) -> str:
    """The host of a ``Host`` header value: lower case, without port, brackets or final dot.

    >>> host_name("[::1]:8765"), host_name("LocalHost."), host_name("127.0.0.1:80")
    ('::1', 'localhost', '127.0.0.1')
    """
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    name, colon, port = value.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        value = name
    return value.rstrip(".")


def host_allowed(host_header: str | None, *, public_url: str | None, local_address: str | None) -> bool:
    """Whether a request's ``Host`` addresses this emulator (see the module's rule 1).

    :param host_header: the ``Host`` header; None when the request has none.
    :param public_url: the configured public URL, whose host is allowed.
    :param local_address: the IP address the connection arrived at.
    """
    if host_header is None:
        return True
    name = host_name(host_header)
    if is_loopback(name) or name == public_host(public_url):
        return True
    return local_address is not None and _same_address(name, local_address)


def _same_address(name: str, address: str) -> bool:
    try:
        return ipaddress.ip_address(name) == ipaddress.ip_address(address)
    except ValueError:
        return False


def _origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` in lower case, the scheme's default port left out."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 80 if parts.scheme == "http" else 443
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def origin_allowed(origin: str | None, *, host_header: str | None, public_url: str | None) -> bool:
    """Whether a request's ``Origin`` is absent or the emulator's own (the module's rule 2)."""
    if origin is None:
        return True
    own = {_origin_of(f"http://{host_header.strip()}") if host_header else None,
           _origin_of(public_url) if public_url else None} - {None}
    return _origin_of(origin.strip()) in own


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is ``application/json`` (any case, any parameters)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == "application/json"


def admin_refusal(method: str, headers: Mapping[str, str], *, local_address: str | None,
                  admin_token: str | None, public_url: str | None) -> tuple[str, int, str] | None:
    """Why an admin call is refused, as ``(status identifier, HTTP status, detail)``; None
    when it may proceed.

    :param method: the HTTP method.
    :param headers: the request headers (names in lower case, as ASGI gives them).
    :param local_address: the IP address the connection arrived at.
    :param admin_token: the emulator's admin token, if any.
    :param public_url: the emulator's public URL, if any.

    >>> admin_refusal("POST", {"host": "127.0.0.1:8765", "content-type": "text/plain"},
    ...               local_address="127.0.0.1", admin_token=None, public_url=None)[:2]
    ('content-type-missing', 400)
    """
    host, origin = headers.get("host"), headers.get("origin")
    if not host_allowed(host, public_url=public_url, local_address=local_address):
        also = f", or {public_host(public_url)}" if public_url else ""
        return ("generic-error", 403, f"The admin endpoints answer only requests addressed to this machine "
                f"(Host 127.0.0.1, [::1] or localhost, any port{also}); this one was addressed to {host!r:.80}.")
    if not origin_allowed(origin, host_header=host, public_url=public_url):
        return ("generic-error", 403, f"Refused a cross-origin request from {origin!r:.80}: the admin endpoints "
                "answer only clients that send no Origin (programs) and the emulator's own pages.")
    if not admin_allowed(admin_token, headers.get(ADMIN_TOKEN_HEADER.lower())):
        return ("invalid-auth-token", 401, f"This admin endpoint needs the header '{ADMIN_TOKEN_HEADER}: "
                "<admin token>' the emulator was started with.")
    if method in ("POST", "PUT") and not is_json(headers.get("content-type")):
        return ("content-type-missing", 400, "Send admin changes as JSON with the header "
                "'Content-Type: application/json' (an empty body is {}).")
    return None
