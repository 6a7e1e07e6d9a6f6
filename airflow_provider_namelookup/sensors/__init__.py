"""Sensors."""

from airflow_provider_namelookup.sensors.credits import NameLookupCreditsSensor, UnfixableWait

__all__ = ["NameLookupCreditsSensor", "UnfixableWait"]
