"""Sensors."""

from airflow_provider_namelookup.sensors.credits import MinCreditsInvalid, NameLookupCreditsSensor, UnfixableWait

__all__ = ["MinCreditsInvalid", "NameLookupCreditsSensor", "UnfixableWait"]
