"""Sensors."""

from airflow_provider_namelookup.sensors.credits import NameLookupCreditsSensor

__all__ = ["NameLookupCreditsSensor"]
