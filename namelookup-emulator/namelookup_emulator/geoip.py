"""The emulator's built-in, no-network rule that maps client IP addresses to countries.

The emulator has no GeoIP database and makes no network calls. Instead every country
of the spec's table owns one IPv4 and one IPv6 network from address space that is never
routed on the public internet, so the table cannot pretend to know real addresses:

* countries are numbered 0, 1, 2, ... in alphabetical order of their codes
  (``AD`` is 0, ``AE`` is 1, ...);
* country *i* owns ``100.64.<i>.0/24`` (inside RFC 6598's ``100.64.0.0/10``) and
  ``2001:db8:<i as hex>::/48`` (inside RFC 3849's documentation prefix ``2001:db8::/32``);
* every other address (public, private, loopback) has no country: the query is then
  answered with the all-country data, as if no hint had been given.

Example::

    >>> ip = ip_for_country("IT")
    >>> ip
    '100.64.99.1'
    >>> country_for_ip(ip), country_for_ip("2001:db8:63::7"), country_for_ip("8.8.8.8")
    ('IT', 'IT', None)
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from types import MappingProxyType

from namelookup_emulator.facts import COUNTRIES

IPV4_BLOCK = ipaddress.IPv4Network("100.64.0.0/16")
"""The IPv4 block split into one /24 per country."""
IPV6_BLOCK = ipaddress.IPv6Network("2001:db8::/32")
"""The IPv6 block split into one /48 per country."""

_CODES: tuple[str, ...] = tuple(sorted(COUNTRIES))
_INDEX: Mapping[str, int] = MappingProxyType({code: i for i, code in enumerate(_CODES)})

COUNTRY_NETWORKS: Mapping[str, tuple[ipaddress.IPv4Network, ipaddress.IPv6Network]] = MappingProxyType({
    code: (
        ipaddress.IPv4Network((int(IPV4_BLOCK.network_address) + (i << 8), 24)),
        ipaddress.IPv6Network((int(IPV6_BLOCK.network_address) + (i << 80), 48)),
    )
    for code, i in _INDEX.items()
})
"""Country code → (its IPv4 /24, its IPv6 /48): the whole table, for documentation and tests."""


def country_for_ip(ip: str | None) -> str | None:
    """The country whose network holds ``ip``, or None (also for None and unparsable text).

    :param ip: an IPv4 or IPv6 address as text.
    """
    if not ip:
        return None
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if isinstance(address, ipaddress.IPv4Address):
        if address not in IPV4_BLOCK:
            return None
        index = (int(address) - int(IPV4_BLOCK.network_address)) >> 8
    else:
        if address not in IPV6_BLOCK:
            return None
        index = (int(address) - int(IPV6_BLOCK.network_address)) >> 80
    return _CODES[index] if index < len(_CODES) else None


def ip_for_country(code: str, *, version: int = 4) -> str:
    """An address that the rule maps to ``code`` (the first host of its network).

    :param code: a country code of the spec's table (any case).
    :param version: 4 or 6.
    :raises KeyError: for a code that is not in the table.
    """
    v4, v6 = COUNTRY_NETWORKS[code.upper()]
    network: ipaddress.IPv4Network | ipaddress.IPv6Network = v4 if version == 4 else v6
    return str(network.network_address + 1)
