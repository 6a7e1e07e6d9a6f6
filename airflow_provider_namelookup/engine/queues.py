"""The queues between a run's pieces: hashes to claim (reading to claiming), claims won (claiming to asking).

Example::

    to_claim: HashQueue = asyncio.Queue()
    to_claim.put_nowait(["<hash>", ...]); to_claim.put_nowait(None)     # a page's hashes, then the end
"""

from __future__ import annotations

import asyncio

from airflow_provider_namelookup.engine.ports import Claim

HashQueue = asyncio.Queue[list[str] | None]
"""Hashes to claim, a page at a time; None when the source is read to its end."""
WonQueue = asyncio.Queue[tuple[Claim, list[str]]]
"""Claims made, each with the hashes this run won in it (to ask)."""
