"""Where the emulator's links point: its public URL when one is configured, else the address
the connection arrived at; never a name the request brings.

Every link the emulator writes (the activation link in the outbox, ``docs_url``,
``upgrade_url``, ``country_of_origin_map_url``, the ``type`` of every problem) starts with
:func:`base_url`. A request's ``Host`` and ``X-Forwarded-*`` headers are the client's to
choose, so a link built from them would point wherever the client says (``Host:
evil.example:666`` put that name into activation mails). The public URL comes from
``EmulatorConfig(public_url=...)``; the command line's ``--public-url`` falls back on
``$NAMELOOKUP_EMULATOR_PUBLIC_URL`` (:data:`PUBLIC_URL_ENV`).

Example::

    >>> checked_public_url("HTTPS://Names.Example.test:8443/emulator/")
    'https://names.example.test:8443/emulator'
    >>> base_url({"server": ("127.0.0.1", 8765)}, None), base_url({"server": ("::1", 80)}, None)
    ('http://127.0.0.1:8765', 'http://[::1]:80')
    >>> base_url({"server": ("127.0.0.1", 8765)}, "https://names.example.test")
    'https://names.example.test'
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

PUBLIC_URL_ENV = "NAMELOOKUP_EMULATOR_PUBLIC_URL"
"""Environment variable the command line reads when ``--public-url`` is not given."""

_LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*$")


def url_for(host: str, port: int) -> str:
    """``http://host:port``, with brackets around an IPv6 host.

    >>> url_for("::1", 8765)
    'http://[::1]:8765'
    """
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def connectable_host(host: str) -> str:
    """The address a local client connects to for a listening ``host``: loopback for a
    wildcard (``0.0.0.0``, ``::``), which is no address to send requests to.

    >>> connectable_host("0.0.0.0"), connectable_host("::"), connectable_host("127.0.0.1")
    ('127.0.0.1', '::1', '127.0.0.1')
    """
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host
    if address.is_unspecified:
        return "::1" if address.version == 6 else "127.0.0.1"
    return host


def checked_public_url(text: str) -> str:
    """Check a public URL and return it normalised (scheme and host in lower case, no
    trailing slash).

    :param text: ``http://`` or ``https://``, a host name or IP address, an optional port
        and an optional path (a reverse proxy's prefix); no user, query or fragment.
    :raises ValueError: naming what is wrong.
    """
    parts = urllib.parse.urlsplit(text.strip()) if isinstance(text, str) else None
    problem = None
    if parts is None or parts.scheme.lower() not in ("http", "https"):
        problem = "it must start with http:// or https://"
    elif any(ch.isspace() or not ch.isprintable() for ch in text.strip()):
        problem = "it must not contain spaces or control characters"
    elif not parts.hostname or not _valid_host(parts.hostname):
        problem = "it must name a host (a DNS name or an IP address)"
    elif parts.username is not None or parts.password is not None:
        problem = "it must not carry a user or password"
    elif parts.query or parts.fragment or text.strip().endswith(("?", "#")):
        problem = "it must not have a query or fragment"
    else:
        try:
            _ = parts.port  # raises for a port out of range
        except ValueError:
            problem = "its port must be a number from 0 to 65535"
    if problem:
        raise ValueError(f"invalid public URL {text!r:.100}: {problem}")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return _HOST_NAME.match(host.rstrip(".")) is not None
    return True


def public_host(url: str | None) -> str | None:
    """The host name of a public URL, in lower case (``None`` for ``None``).

    >>> public_host("http://[2001:db8::5]:8080/a"), public_host("https://Names.example.test")
    ('2001:db8::5', 'names.example.test')
    """
    return urllib.parse.urlsplit(url).hostname if url else None


def base_url(scope: Mapping[str, Any], configured: str | None) -> str:
    """The base of every link in an answer to the request of ``scope``.

    :param scope: the ASGI scope; its ``server`` is the local address of the connection
        (the address the emulator listens on, or, when it listens on every address, the
        one the client reached), which no header of the request can change.
    :param configured: the public URL, which wins when set.
    """
    if configured:
        return configured
    server = scope.get("server")
    if not server:
        return "http://localhost"
    host, port = server
    return url_for(host, port) if port is not None else f"http://{host}"
