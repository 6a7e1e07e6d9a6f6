"""What the emulator takes for a valid e-mail address, written from the RFCs it names.

* One ``@`` between a local part and a domain.
* The local part is a dot-atom (RFC 5322 3.2.3): atoms of ``atext`` joined by single dots,
  so no leading, trailing or doubled dot, no quotes, ``<``, ``,`` or spaces; at most 64
  octets (RFC 5321 4.5.3.1.1, counted in UTF-8 as RFC 6531 says).
* The domain is two or more labels (RFC 1123 host names): letters, digits and inner
  hyphens, at most 63 octets each in their ASCII form (``xn--`` and punycode for a label
  beyond ASCII, RFC 5890), at most 253 in all; the top label is not all digits
  (RFC 3696 2), so an IP address or an IP literal (``[127.0.0.1]``) is no domain.
* Beyond ASCII (RFC 6532), letters, marks and digits of any script count as letters,
  both sides of the ``@`` (the project's reading, docs/input-rules.md): ``jörg@bücher.de``
  is an address, ``anna→@example.com`` is not.

Example::

    >>> is_address("theresa.miller@example.com"), is_address("jörg@bücher.de")
    (True, True)
    >>> is_address("a..b@example.com"), is_address("anna@[127.0.0.1]"), is_address("anna@localhost")
    (False, False, False)
"""

from __future__ import annotations

import string
import unicodedata

_ATEXT = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-/=?^_`{|}~")
_LDH = frozenset(string.ascii_letters + string.digits + "-")
LOCAL_PART_MAX_OCTETS = 64
LABEL_MAX_OCTETS = 63
DOMAIN_MAX_OCTETS = 253


def _letter_beyond_ascii(ch: str) -> bool:
    return not ch.isascii() and unicodedata.category(ch)[0] in "LMN"


def _local_part_ok(local: str) -> bool:
    if len(local.encode("utf-8", "surrogatepass")) > LOCAL_PART_MAX_OCTETS:
        return False
    return all(atom and all(ch in _ATEXT or _letter_beyond_ascii(ch) for ch in atom) for atom in local.split("."))


def _ascii_form(label: str) -> str:
    return label if label.isascii() else "xn--" + label.lower().encode("punycode").decode("ascii")


def _domain_ok(domain: str) -> bool:
    labels = domain.split(".")
    if len(labels) < 2:
        return False
    for label in labels:
        if not label or label.startswith("-") or label.endswith("-"):
            return False
        if not all(ch in _LDH or _letter_beyond_ascii(ch) for ch in label):
            return False
        if len(_ascii_form(label)) > LABEL_MAX_OCTETS:
            return False
    if labels[-1].isdigit():
        return False
    return len(".".join(_ascii_form(label) for label in labels)) <= DOMAIN_MAX_OCTETS


def is_address(text: str) -> bool:
    """Whether ``text`` (already trimmed) is an e-mail address by the rules above."""
    local, at, domain = text.partition("@")
    return bool(at) and _local_part_ok(local) and _domain_ok(domain)
