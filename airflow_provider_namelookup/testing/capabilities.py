"""What a warehouse under the compliance suite declares it can do, and the tests that need it.

A promise of the suite that a warehouse cannot keep for a reason of its engine or of how it is
tested (not a bug of its dialect) is declared, not failed: the test that needs the capability is
skipped, and the skip names the capability and what it means. The declaration belongs to the
warehouse as tested (the ``compliance_warehouse`` fixture), not the dialect alone: Snowflake's
dialect takes concurrent runs on Snowflake, but not on fakesnow, where its tests run.

Example::

    DbApiWarehouse(connect, MyDialect, capabilities=Capabilities(concurrent_runs=False))
    needs(house, "concurrent_runs")     # in a test: skipped, "mywarehouse does not declare ..."
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CAPABILITIES", "Capabilities", "needs"]

CAPABILITIES: dict[str, str] = {
    "concurrent_runs": "runs in several threads of one process write it at once "
                       "(test_parallel_runs_pay_each_query_once, test_erasure_beside_a_run_in_flight_holds)",
}
"""Each capability and what declaring it promises (the tests it lets run)."""


@dataclass(frozen=True)
class Capabilities:
    """What a warehouse under the suite can do (:data:`CAPABILITIES`); everything, unless declared otherwise.

    :param concurrent_runs: runs in several threads of one process may write it at once.
    """

    concurrent_runs: bool = True


def needs(house: Any, capability: str) -> None:
    """Skip the calling test unless ``house`` (a compliance warehouse) declares ``capability``, naming it
    and what it means."""
    import pytest

    if not getattr(house.capabilities, capability):
        pytest.skip(f"{house.dialect.name} does not declare the capability {capability!r}: "
                    f"{CAPABILITIES[capability]}")
