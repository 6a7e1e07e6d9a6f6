"""Hostile input: what arrives in real tables and XCom lists when nobody is looking.

Example::

    >>> values = hostile_values(100, seed=1)
    >>> len(values)
    100
"""

from __future__ import annotations

import random
from typing import Any

TEXT_PIECES = [
    "Anna", "José", "Zoë", "e\u0301" * 30, "محمد", "王秀英", "Ørjan", "İlkay", "ß", "ﬁona", "ｆｕｌｌｗｉｄｔｈ",
    "\u200b", "\u202eRTL", "\U0001F600", "\ufeff", "\x00", "\x01", "\x1b[31m", "\x7f", "\x85", "\t", "\n",
    "'; DROP TABLE customers; --", "Robert'); DROP TABLE Students;--", "1 OR 1=1", "%s", "?", "\\", '"', "`",
    "{{ conn.namelookup_default.password }}", "<script>alert(1)</script>", "a" * 10_240, "x" * 51, "   ", "",
    "a@b.co", "theresa.miller14@example.com", "@@", "Dr. Jane Smith", "Smith, John",
]
NON_TEXT: list[Any] = [None, 0, 42, -1, 3.14, -0.0, 1e308, True, False, [], ["Anna"], {"first_name": "Anna"},
                       {"nested": {"deeper": [1, 2]}}]
HINTS: list[Any] = [None, "", "DE", "de", "XX", "Germany", 49, "en_US", "en-us", "klingon", "256.1.1.1", "::1",
                    "100.64.80.1", ["DE"], {"code": "DE"}, "\x00DE", "D" * 10_000]


def hostile_text(rng: random.Random, *, sql_safe: bool = False) -> str:
    text = "".join(rng.choice(TEXT_PIECES) for _ in range(rng.randint(1, 3)))
    return text.replace("\x00", "") if sql_safe else text


def hostile_values(count: int, *, seed: int = 0, text_only: bool = False, sql_safe: bool = False) -> list[Any]:
    """``count`` values for a name field: mostly hostile text, some non-text (unless ``text_only``)."""
    rng = random.Random(seed)
    return [rng.choice(NON_TEXT) if not text_only and rng.random() < 0.15 else hostile_text(rng, sql_safe=sql_safe)
            for _ in range(count)]


def hostile_query(rng: random.Random) -> Any:
    """A whole query object (or not an object at all) with hostile fields."""
    if rng.random() < 0.05:
        return rng.choice([*NON_TEXT, hostile_text(rng)])
    query: dict[str, Any] = {rng.choice(["first_name", "full_name", "email", "name"]):
                             rng.choice([hostile_text(rng), rng.choice(NON_TEXT)])}
    for field in ("country", "locale", "ip"):
        if rng.random() < 0.3:
            query[field] = rng.choice(HINTS)
    if rng.random() < 0.3:
        query["id"] = rng.choice([1, "x" * 60, 1.5, True, None, "ok", [1]])
    return query
